// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl service http: requests with a blocked method answered from the
 * kernel with the bytes nginx itself would send.  No daemon: the handler's
 * state (nginx's Server header, the TAI offset for Date) is set once here.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "cmd.h"
#include "out.h"
#include "service.h"
#include "http_filter.h"

struct http_args {
	struct svc_args common;
	struct svc_list blocks;
};

/* "POST=405": the method and the status the handler answers it with. */
static int parse_block(const char *s, char *method, size_t msz, __u32 *status)
{
	const char *eq = strchr(s, '=');
	size_t n = eq ? (size_t)(eq - s) : 0;

	if (!eq || !n || n >= msz || parse_u32(eq + 1, "--block", 999, status) ||
	    (*status != 403 && *status != 404 && *status != 405 &&
	     *status != 429 && *status != 444)) {
		p_err("--block: expected METHOD=STATUS with STATUS 403, 404, 405, 429 or 444 (reset), got '%s'",
		      s);
		return -1;
	}
	memcpy(method, s, n);
	method[n] = '\0';
	return 0;
}

/*
 * The Server header nginx sends on this port (HEAD / over HTTP/1.0), so
 * that the handler's answers carry the same; "nginx" when it cannot tell.
 */
static void learn_server(__u32 port, struct http_state *st)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 2, 0 };
	char buf[2048], *p, *e;
	ssize_t n, got = 0;
	int fd;

	memcpy(st->server, "nginx", 5);
	st->server_len = 5;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, "HEAD / HTTP/1.0\r\n\r\n", 19) != 19)
		goto out;
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	p = strstr(buf, "\r\nServer: ");
	if (!p)
		goto out;
	p += 10;
	e = strstr(p, "\r\n");
	if (e && e > p && e - p <= HTTP_SERVER_MAX) {
		memcpy(st->server, p, e - p);
		st->server_len = e - p;
	}
out:
	close(fd);
}

static int set_http_state(struct xps_context *ctx, __u32 port)
{
	struct http_state st = {};
	struct timespec tai, utc;
	__u32 zero = 0;
	int fd, err;

	learn_server(port, &st);
	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &utc);
	st.tai_minus_utc_ns = (tai.tv_sec - utc.tv_sec) * 1000000000ll +
			      (tai.tv_nsec - utc.tv_nsec);
	/* round to whole seconds: the offset is an integer number of them */
	st.tai_minus_utc_ns = (st.tai_minus_utc_ns + 500000000ll) /
			      1000000000ll * 1000000000ll;
	fd = xps_context__map_fd(ctx, XPS_CTX_MAP_STATE);
	if (fd < 0) {
		lib_err("the handler's state", fd);
		return -1;
	}
	err = bpf_map_update_elem(fd, &zero, &st, BPF_ANY);
	close(fd);
	if (err) {
		p_err("cannot set the handler's state: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int http_setup(struct svc_setup *s)
{
	const struct http_args *a = s->args;
	struct svc_list blocks = a->blocks;
	struct xps_context *ctx;
	__u32 ks, vs, status;
	char method[16];
	int i;

	if (!blocks.n)
		blocks.v[blocks.n++] = "POST=405";
	for (i = 0; i < blocks.n; i++)
		if (parse_block(blocks.v[i], method, sizeof(method), &status))
			return -1;
	ctx = svc_attach(s, IPPROTO_TCP, a->common.port, s->name, NULL, true);
	if (!ctx)
		return -1;
	if (set_http_state(ctx, a->common.port))
		goto fail;
	if (xps_context__data_sizes(ctx, &ks, &vs) || ks != sizeof(struct http_method_key) ||
	    vs != sizeof(struct http_action)) {
		p_err("the http_filter object has an unexpected data map");
		goto fail;
	}
	for (i = 0; i < blocks.n; i++) {
		struct http_method_key key = {};
		struct http_action val = {};

		parse_block(blocks.v[i], key.m, sizeof(key.m), &status);
		val.status = status;
		if (xps_context__data_set(ctx, &key, &val)) {
			lib_err("service http", -errno);
			goto fail;
		}
	}
	xps_context__close(ctx);
	s->port = a->common.port;
	return 0;
fail:
	xps_context__delete(ctx);
	return -1;
}

static const struct svc_opt http_opts[] = {
	SVC_OPT_PORT(struct http_args, "the server's TCP port (required)"),
	{ .name = "--block", .arg = "METHOD=STATUS", .type = SVC_OPT_LIST,
	  .off = offsetof(struct http_args, blocks),
	  .help = "answer METHOD with STATUS: 403, 404, 405, 429, or 444 to reset the connection (RST: the client sees ECONNRESET, where nginx's 444 closes with a FIN) (default: POST=405; up to 16)" },
	SVC_OPT_NAME(struct http_args, "the context's name (default: http)"),
	{ NULL },
};

const struct svc_kind svc_http = {
	.name = "http",
	.summary = "blocked request methods answered as nginx would",
	.handler = "http_filter",
	.opts = http_opts,
	.args_size = sizeof(struct http_args),
	.description =
"Answer requests with a blocked method for the unmodified nginx listening\n"
"on TCP port N from the kernel, with the bytes nginx itself would send\n"
"(its built-in error page, its Server header, learnt by a HEAD / to\n"
"127.0.0.1:N).  Requests whose answer could depend on anything but the\n"
"method, the HTTP version and Connection go to nginx.  No daemon.\n",
	.example =
"xpsctl service http --port 80 --block POST=405 --block PUT=444\n",
	.setup = http_setup,
};
