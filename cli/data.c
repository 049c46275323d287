// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xpsctl data: put, update, set, get, del, dump on a handler's data map. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <xps/kvcache.h>

#include "cmd.h"
#include "codec.h"
#include "out.h"

struct data_io {
	struct xps_context *ctx;
	struct codec key, val;
	void *k, *v;
};

static void io_free(struct data_io *io)
{
	codec_free(&io->key);
	codec_free(&io->val);
	free(io->k);
	free(io->v);
	xps_context__close(io->ctx);
}

static int io_open(struct data_io *io, const char *name)
{
	int fd, err;

	memset(io, 0, sizeof(*io));
	io->ctx = open_ctx(name);
	if (!io->ctx)
		return -1;
	fd = xps_context__data_fd(io->ctx);
	if (fd < 0) {
		lib_err(name, fd);
		return -1;
	}
	err = codec_init(&io->key, fd, 0);
	if (!err)
		err = codec_init(&io->val, fd, 1);
	if (err) {
		lib_err(name, err);
		return -1;
	}
	io->k = calloc(1, io->key.size);
	io->v = calloc(1, io->val.size);
	if (!io->k || !io->v) {
		p_err("out of memory");
		return -1;
	}
	return 0;
}

static int encode(const struct codec *c, const char *what, const char *text,
		  void *buf)
{
	char err[256];

	if (codec_encode(c, text, buf, err, sizeof(err))) {
		p_err("%s: %s", what, err);
		return -1;
	}
	return 0;
}

static void print_entry(const struct data_io *io)
{
	char k[1024], v[4096];

	if (io->key.kvhash)
		codec_kv_key(io->v, k, sizeof(k));
	else
		codec_decode(&io->key, io->k, k, sizeof(k));
	codec_decode(&io->val, io->v, v, sizeof(v));
	out_begin_object(NULL);
	out_str("key", k);
	out_str("value", v);
	/* a write's value the server has not acknowledged: never served */
	if (io->key.kvhash && io->val.size >= sizeof(struct xps_kv_value) &&
	    ((const struct xps_kv_value *)io->v)->pending)
		out_bool("pending", true);
	out_end_object();
}

/*
 * A kv-cache handler (Redis, memcached) serves a value only when its sum
 * is the seal of its stamps, key and bytes (include/xps/kvcache.h), so a
 * value put without it would sit in the map never served: put refuses
 * it.  update and set write any bytes (tests store bad seals on purpose).
 */
static int kv_check_seal(const struct data_io *io, const char *name,
			 const char *key)
{
	const struct xps_kv_value *v = io->v;
	__u64 seal;

	if (!io->key.kvhash || io->val.size < sizeof(*v))
		return 0;
	seal = xps_kv_value_sum(v);
	if (v->sum == seal)
		return 0;
	p_err("data put: the value of '%s' is not sealed (sum 0x%016llx, seal 0x%016llx): '%s' is a kv-cache context, whose handler never serves a value whose sum is not its seal; set the value's sum to the seal of its stamps, key and bytes (xps_kv_value_seal(), include/xps/kvcache.h)",
	      key, (unsigned long long)v->sum, (unsigned long long)seal,
	      name);
	return -1;
}

static int write_cmd(int argc, char **argv, const char *cmd,
		     int (*op)(struct xps_context *, const void *, const void *),
		     bool need_seal)
{
	struct data_io io;
	int err, ret = 1;

	if (argc != 3) {
		p_err("usage: xpsctl data %s NAME KEY VALUE", cmd);
		return 1;
	}
	if (io_open(&io, argv[0]) || encode(&io.key, "KEY", argv[1], io.k) ||
	    encode(&io.val, "VALUE", argv[2], io.v))
		goto out;
	codec_kv_bind(&io.key, argv[1], io.v);	/* KEY fits: it encoded */
	if (need_seal && kv_check_seal(&io, argv[0], argv[1]))
		goto out;
	err = op(io.ctx, io.k, io.v);
	if (err == -EEXIST)
		p_err("data %s: key '%s' exists (use 'data update' or 'data set')",
		      cmd, argv[1]);
	else if (err == -ENOENT)
		p_err("data %s: no key '%s' (use 'data put' or 'data set')",
		      cmd, argv[1]);
	else if (err == -E2BIG)
		p_err("data %s: the data map is full", cmd);
	else if (err)
		lib_err("data", err);
	else {
		print_entry(&io);
		ret = 0;
	}
out:
	io_free(&io);
	return ret;
}

static int do_put(int argc, char **argv)
{
	return write_cmd(argc, argv, "put", xps_context__data_put, true);
}

static int do_update(int argc, char **argv)
{
	return write_cmd(argc, argv, "update", xps_context__data_update,
			 false);
}

static int do_set(int argc, char **argv)
{
	return write_cmd(argc, argv, "set", xps_context__data_set, false);
}

static int key_cmd(int argc, char **argv, bool del)
{
	struct data_io io;
	int err, ret = 1;

	if (argc != 2) {
		p_err("usage: xpsctl data %s NAME KEY", del ? "del" : "get");
		return 1;
	}
	if (io_open(&io, argv[0]) || encode(&io.key, "KEY", argv[1], io.k))
		goto out;
	err = xps_context__data_get(io.ctx, io.k, io.v);
	/* kv-cache: the entry under the key's hash may hold another key */
	if (!err && io.key.kvhash && !codec_kv_holds(io.v, argv[1]))
		err = -ENOENT;
	if (!err && del)
		err = xps_context__data_delete(io.ctx, io.k);
	if (err == -ENOENT)
		p_err("no key '%s' in %s", argv[1], argv[0]);
	else if (err)
		lib_err("data", err);
	else {
		print_entry(&io);
		ret = 0;
	}
out:
	io_free(&io);
	return ret;
}

static int do_get(int argc, char **argv)
{
	return key_cmd(argc, argv, false);
}

static int do_del(int argc, char **argv)
{
	return key_cmd(argc, argv, true);
}

static int do_dump(int argc, char **argv)
{
	struct data_io io;
	void *next = NULL;
	int fd, ret = 1;

	if (argc != 1) {
		p_err("usage: xpsctl data dump NAME");
		return 1;
	}
	if (io_open(&io, argv[0]))
		goto out;
	fd = xps_context__data_fd(io.ctx);
	next = calloc(1, io.key.size);
	if (!next) {
		p_err("out of memory");
		goto out;
	}
	out_begin_array(NULL);
	if (!bpf_map_get_next_key(fd, NULL, next)) {
		do {
			memcpy(io.k, next, io.key.size);
			/* an entry deleted meanwhile is simply skipped */
			if (!bpf_map_lookup_elem(fd, io.k, io.v))
				print_entry(&io);
		} while (!bpf_map_get_next_key(fd, io.k, next));
	}
	out_end_array();
	ret = 0;
out:
	free(next);
	io_free(&io);
	return ret;
}

/*
 * data load NAME FILE|-: one "KEY VALUE" per line (the value is the rest of
 * the line; blank lines and #-comments are skipped), inserted or replaced.
 * Stops at the first error and says which line it was.
 */
static int do_load(int argc, char **argv)
{
	char *line = NULL, *key, *val, err[256];
	size_t cap = 0;
	struct data_io io;
	__u64 n = 0, lineno = 0;
	ssize_t len;
	FILE *f;
	int ret = 1, e;

	if (argc != 2) {
		p_err("usage: xpsctl data load NAME FILE|-");
		return 1;
	}
	f = strcmp(argv[1], "-") ? fopen(argv[1], "r") : stdin;
	if (!f) {
		p_err("cannot open %s: %s", argv[1], strerror(errno));
		return 1;
	}
	if (io_open(&io, argv[0]))
		goto out;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		key = line + strspn(line, " \t");
		if (!*key || *key == '#')
			continue;
		val = key + strcspn(key, " \t");
		if (!*val) {
			p_err("%s:%llu: expected KEY VALUE", argv[1],
			      (unsigned long long)lineno);
			goto out;
		}
		*val++ = '\0';
		val += strspn(val, " \t");
		if (codec_encode(&io.key, key, io.k, err, sizeof(err)) ||
		    codec_encode(&io.val, val, io.v, err, sizeof(err))) {
			p_err("%s:%llu: %s", argv[1], (unsigned long long)lineno, err);
			goto out;
		}
		codec_kv_bind(&io.key, key, io.v);
		e = xps_context__data_set(io.ctx, io.k, io.v);
		if (e) {
			p_err("%s:%llu: %s (after %llu entries)", argv[1],
			      (unsigned long long)lineno,
			      e == -E2BIG ? "the data map is full" : strerror(-e),
			      (unsigned long long)n);
			goto out;
		}
		n++;
	}
	out_begin_object(NULL);
	out_u64("loaded", n);
	out_end_object();
	ret = 0;
out:
	free(line);
	if (f != stdin)
		fclose(f);
	if (io.ctx)
		io_free(&io);
	return ret;
}

static const char usage[] =
"Usage: xpsctl data put|update|set NAME KEY VALUE\n"
"       xpsctl data get|del NAME KEY\n"
"       xpsctl data dump NAME\n"
"       xpsctl data load NAME FILE|-\n"
"\n"
"The data map of context NAME: the values its handler serves.\n"
"\n"
"Commands:\n"
"  put        insert KEY (fails if it exists)\n"
"  update     replace KEY's value (fails if it does not exist)\n"
"  set        insert or replace\n"
"  get        KEY's value\n"
"  del        remove KEY (also: delete)\n"
"  dump       every key and value\n"
"  load       insert or replace one KEY VALUE per line of FILE (-: standard\n"
"             input; the value is the rest of the line; blank lines and\n"
"             lines starting with # are skipped); stops at the first error,\n"
"             naming the line\n"
"\n"
"KEY and VALUE are converted using the map's BTF: a char array takes a\n"
"string, an integer a number, a struct of a len field and a char array a\n"
"string; any layout takes hex:BYTES.\n"
"\n"
"In a kv-cache context (Redis, memcached) VALUE is a struct xps_kv_value,\n"
"usually as hex:BYTES; xpsctl writes KEY into it.  put refuses a value\n"
"whose sum is not its seal (include/xps/kvcache.h), as the handler would\n"
"never serve it; update and set store it as given.  get and dump mark\n"
"\"pending\" the value of a write the server has not acknowledged yet,\n"
"which the handler does not serve.\n"
"\n"
"Options:\n"
"  -h, --help          this text\n"
"\n"
"Example:\n"
"  xpsctl data put cache alpha \"value of alpha\"\n"
"  xpsctl -j data get cache alpha\n"
"  printf 'k1 v1\\nk2 v2\\n' | xpsctl data load cache -\n"
"\n"
"See xpsctl(8).\n";

static int do_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return print_usage(usage);
}

int do_data(int argc, char **argv)
{
	static const struct cmd cmds[] = {
		{ "put", do_put, 0 },
		{ "update", do_update, 0 },
		{ "set", do_set, 0 },
		{ "get", do_get, 0 },
		{ "del", do_del, 0 },
		{ "delete", do_del, 0 },
		{ "dump", do_dump, 0 },
		{ "load", do_load, 0 },
		{ "help", do_help, 0 },
		{ NULL, NULL, 0 },
	};

	return dispatch(cmds, argc, argv, "data");
}
