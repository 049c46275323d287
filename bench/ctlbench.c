// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control-plane costs, as in the paper's Table 3.7: create_context,
 * update_context, and put/update/delete of a 1 KiB value, averaged.
 *
 *   ctlbench OBJ.bpf.o PORT ROUNDS
 *
 * Prints CSV: operation,iterations,mean_us,min_us,max_us.  OBJ must declare
 * an XPS_DATA_MAP; keys are its key size filled with a counter, values its
 * value size.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libxps.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct acc {
	double sum, min, max;
	int n;
};

static void add(struct acc *a, double v)
{
	if (!a->n || v < a->min)
		a->min = v;
	if (!a->n || v > a->max)
		a->max = v;
	a->sum += v;
	a->n++;
}

static void report(const char *op, const struct acc *a)
{
	printf("%s,%d,%.2f,%.2f,%.2f\n", op, a->n, a->n ? a->sum / a->n : 0,
	       a->min, a->max);
}

int main(int argc, char **argv)
{
	struct acc create = {}, update = {}, put = {}, upd = {}, del = {};
	struct acc fw = {};
	struct xps_predicate p = { .proto = 6 }, kp = { .proto = 17 };
	struct xps_context *ctx, *keeper;
	__u32 ks, vs, i, rounds, keys = 1000;
	char *k, *v;
	double t;
	int r, err = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: %s OBJ.bpf.o PORT ROUNDS\n", argv[0]);
		return 2;
	}
	p.lport = atoi(argv[2]);
	kp.lport = p.lport + 1;
	rounds = atoi(argv[3]);
	xps_framework__purge();
	/*
	 * The framework loads with the first context: measure that once,
	 * then keep it loaded so create_context measures the handler (as
	 * the paper's Table 3.7 separates "framework load").
	 */
	t = now_us();
	keeper = xps_context__create_pred(argv[1], &kp, NULL);
	if (!keeper) {
		fprintf(stderr, "create_context: %s\n", strerror(errno));
		return 1;
	}
	add(&fw, now_us() - t);
	for (r = 0; r < (int)rounds; r++) {
		t = now_us();
		ctx = xps_context__create_pred(argv[1], &p, NULL);
		if (!ctx) {
			fprintf(stderr, "create_context: %s\n", strerror(errno));
			return 1;
		}
		add(&create, now_us() - t);
		t = now_us();
		if (xps_context__update(ctx, argv[1])) {
			fprintf(stderr, "update_context: %s\n", strerror(errno));
			goto out;
		}
		add(&update, now_us() - t);
		if (xps_context__data_sizes(ctx, &ks, &vs)) {
			fprintf(stderr, "%s has no data map\n", argv[1]);
			goto out;
		}
		k = calloc(1, ks);
		v = malloc(vs);
		memset(v, 'v', vs);
		/* value size field first in every XPS layout here: 1 KiB */
		if (vs >= 4 + 1024)
			*(__u32 *)v = 1024;
		for (i = 0; i < keys; i++) {
			memcpy(k, &i, ks < 4 ? ks : 4);
			t = now_us();
			if (xps_context__data_put(ctx, k, v))
				break;
			add(&put, now_us() - t);
		}
		for (i = 0; i < keys; i++) {
			memcpy(k, &i, ks < 4 ? ks : 4);
			t = now_us();
			xps_context__data_update(ctx, k, v);
			add(&upd, now_us() - t);
		}
		for (i = 0; i < keys; i++) {
			memcpy(k, &i, ks < 4 ? ks : 4);
			t = now_us();
			xps_context__data_delete(ctx, k);
			add(&del, now_us() - t);
		}
		free(k);
		free(v);
		xps_context__delete(ctx);
	}
	xps_context__delete(keeper);
	report("framework_and_first_context", &fw);
	report("create_context", &create);
	report("update_context", &update);
	report("data_put", &put);
	report("data_update", &upd);
	report("data_delete", &del);
	err = 0;
	return err;
out:
	xps_context__delete(ctx);
	xps_context__delete(keeper);
	return err;
}
