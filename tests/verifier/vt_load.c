// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Load every program of a BPF object as sk_skb with the verifier's
 * statistics on, print "processed N insns ..." (or the end of the log on
 * failure) and unload.  bpftool of this Debian does not show
 * verified_insns.   vt_load OBJ [LOG_LEVEL]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

int main(int argc, char **argv)
{
	size_t sz = 16 << 20, n;
	struct bpf_object *obj;
	struct bpf_program *p;
	char *log = calloc(1, sz);
	int lvl = argc > 2 ? atoi(argv[2]) : 4, err;
	const char *s;

	if (argc < 2 || !log)
		return 2;
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "%s: cannot open\n", argv[1]);
		return 2;
	}
	bpf_object__for_each_program(p, obj) {
		bpf_program__set_type(p, BPF_PROG_TYPE_SK_SKB);
		bpf_program__set_log_buf(p, log, sz);
		bpf_program__set_log_level(p, lvl);
	}
	err = bpf_object__load(obj);
	n = strlen(log);
	if (err) {
		s = n > 2000 ? log + n - 2000 : log;
		printf("%s\n", s);
	} else {
		s = strstr(log, "processed ");
		printf("%s", s ? s : "(no statistics)\n");
	}
	bpf_object__close(obj);
	return err ? 1 : 0;
}
