// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"

enum out_format out_format;
bool pretty_output;
int verbose;

int out_parse_format(const char *name, enum out_format *fmt)
{
	if (!strcmp(name, "text"))
		*fmt = OUT_TEXT;
	else if (!strcmp(name, "json"))
		*fmt = OUT_JSON;
	else if (!strcmp(name, "prometheus"))
		*fmt = OUT_PROMETHEUS;
	else
		return -1;
	return 0;
}

/* JSON writer state: nesting depth and whether a comma is due */
static int depth;
static bool need_comma[32];
static char closer[32];	/* what closes each open level */
/* text mode: fields of the current line */
static bool line_open;

/*
 * Prometheus text format, as node-exporter's textfile collector reads it:
 * a family's # HELP and # TYPE once, then all of its samples together.
 * Records come one after the other, so the samples are gathered per family
 * and written by out_finish(); an error drops them all, so that a failed
 * command never leaves a partial file for the collector.
 */
#define PROM_MAX_FAMILIES 32
#define PROM_MAX_LABELS 8

struct prom_family {
	const struct out_metric *m;	/* the first seen: its help and type */
	char *buf;
	size_t len;
	FILE *samples;			/* open_memstream() on buf */
};

static struct prom_family families[PROM_MAX_FAMILIES];
static int nfamilies;
/* the current record's labels, on each of its samples */
static struct {
	const char *name;
	char *value;
} labels[PROM_MAX_LABELS];
static int nlabels;
/* the output is void: an error was reported */
static bool prom_failed;

static void indent(void)
{
	int i;

	if (!pretty_output)
		return;
	putchar('\n');
	for (i = 0; i < depth; i++)
		fputs("    ", stdout);
}

void json_escape(const char *s, char *dst, size_t dstsz)
{
	size_t o = 0;

	for (; *s && o + 7 < dstsz; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = c;
		} else if (c < 0x20 || c == 0x7f) {
			o += snprintf(dst + o, dstsz - o, "\\u%04x", c);
		} else {
			dst[o++] = c;
		}
	}
	dst[o] = '\0';
}

static void json_key(const char *key)
{
	/* top level: one document per call sequence (stats watch prints many) */
	if (depth == 0) {
		need_comma[0] = false;
	} else {
		if (need_comma[depth])
			putchar(',');
		need_comma[depth] = true;
		indent();
	}
	if (key) {
		char buf[256];

		json_escape(key, buf, sizeof(buf));
		printf(pretty_output ? "\"%s\": " : "\"%s\":", buf);
	}
}

static void open_json(const char *key, char c)
{
	json_key(key);
	putchar(c);
	if (depth < 31)
		depth++;
	closer[depth] = c == '[' ? ']' : '}';
	need_comma[depth] = false;
}

static void close_json(char c)
{
	bool had = need_comma[depth];

	if (depth > 0)
		depth--;
	if (had)
		indent();
	putchar(c);
	if (depth == 0)
		putchar('\n');
}

static void prom_clear_labels(void)
{
	while (nlabels > 0)
		free(labels[--nlabels].value);
}

void out_begin_array(const char *key)
{
	if (out_format == OUT_JSON)
		open_json(key, '[');
}

void out_end_array(void)
{
	if (out_format == OUT_JSON)
		close_json(']');
}

void out_begin_object(const char *key)
{
	if (out_format == OUT_JSON)
		open_json(key, '{');
	else if (out_format == OUT_PROMETHEUS)
		prom_clear_labels();
}

void out_end_object(void)
{
	if (out_format == OUT_JSON)
		close_json('}');
	else
		out_flush();
}

void out_flush(void)
{
	if (out_format == OUT_TEXT && line_open) {
		putchar('\n');
		line_open = false;
	}
}

static void text_field(const char *key, const char *val)
{
	printf("%s%s %s", line_open ? "  " : "", key, val);
	line_open = true;
}

void out_str(const char *key, const char *val)
{
	if (out_format == OUT_PROMETHEUS)
		return;
	if (out_format == OUT_JSON) {
		char buf[4096];

		json_key(key);
		json_escape(val ? val : "", buf, sizeof(buf));
		printf("\"%s\"", buf);
	} else {
		text_field(key, val ? val : "");
	}
}

void out_u64(const char *key, __u64 val)
{
	char buf[32];

	if (out_format == OUT_PROMETHEUS)
		return;
	if (out_format == OUT_JSON) {
		json_key(key);
		printf("%llu", (unsigned long long)val);
	} else {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)val);
		text_field(key, buf);
	}
}

void out_bool(const char *key, bool val)
{
	if (out_format == OUT_PROMETHEUS)
		return;
	if (out_format == OUT_JSON) {
		json_key(key);
		fputs(val ? "true" : "false", stdout);
	} else {
		text_field(key, val ? "yes" : "no");
	}
}

/* Prometheus output: an error the command did not make itself. */
static void prom_fail(const char *what)
{
	if (!prom_failed)
		fprintf(stderr, "Error: prometheus output: %s\n", what);
	prom_failed = true;
}

void out_label(const char *key, const char *label, const char *val)
{
	if (out_format != OUT_PROMETHEUS) {
		out_str(key, val);
		return;
	}
	if (prom_failed)
		return;
	if (nlabels == PROM_MAX_LABELS) {
		prom_fail("too many labels");
		return;
	}
	labels[nlabels].value = strdup(val ? val : "");
	if (!labels[nlabels].value) {
		prom_fail(strerror(errno));
		return;
	}
	labels[nlabels++].name = label;
}

void out_label_u64(const char *key, const char *label, __u64 val)
{
	char buf[32];

	if (out_format != OUT_PROMETHEUS) {
		out_u64(key, val);
		return;
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)val);
	out_label(key, label, buf);
}

/* The format's escapes: backslash and newline, in label values also '"'. */
static void prom_escape(FILE *f, const char *s, bool label_value)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' && label_value)
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

static void prom_label(FILE *f, char *sep, const char *name, const char *value)
{
	fprintf(f, "%c%s=\"", *sep, name);
	prom_escape(f, value, true);
	fputc('"', f);
	*sep = ',';
}

static FILE *prom_family(const struct out_metric *m)
{
	struct prom_family *fam;
	int i;

	for (i = 0; i < nfamilies; i++)
		if (!strcmp(families[i].m->name, m->name))
			return families[i].samples;
	if (nfamilies == PROM_MAX_FAMILIES) {
		prom_fail("too many metric families");
		return NULL;
	}
	fam = &families[nfamilies];
	fam->samples = open_memstream(&fam->buf, &fam->len);
	if (!fam->samples) {
		prom_fail(strerror(errno));
		return NULL;
	}
	fam->m = m;
	nfamilies++;
	return fam->samples;
}

void out_metric(const char *key, __u64 val, const struct out_metric *m)
{
	unsigned long long v = val;
	char sep = '{';
	FILE *f;
	int i;

	if (out_format != OUT_PROMETHEUS) {
		out_u64(key, val);
		return;
	}
	if (prom_failed)
		return;
	f = prom_family(m);
	if (!f)
		return;
	fputs(m->name, f);
	for (i = 0; i < nlabels; i++)
		prom_label(f, &sep, labels[i].name, labels[i].value);
	if (m->label)
		prom_label(f, &sep, m->label, m->label_value);
	if (sep == ',')
		fputc('}', f);
	/* exact decimal seconds: a double would round large totals */
	if (m->ns_as_seconds)
		fprintf(f, " %llu.%09llu\n", v / 1000000000, v % 1000000000);
	else
		fprintf(f, " %llu\n", v);
	if (ferror(f))
		prom_fail("cannot buffer the samples");
}

int out_finish(void)
{
	int i, ret = 0;

	for (i = 0; i < nfamilies; i++) {
		struct prom_family *fam = &families[i];

		if (fclose(fam->samples))
			prom_fail("cannot buffer the samples");
		if (!prom_failed) {
			printf("# HELP %s ", fam->m->name);
			prom_escape(stdout, fam->m->help, false);
			printf("\n# TYPE %s %s\n", fam->m->name, fam->m->type);
			fwrite(fam->buf, 1, fam->len, stdout);
		}
		free(fam->buf);
	}
	nfamilies = 0;
	prom_clear_labels();
	if (out_format != OUT_PROMETHEUS)
		return 0;
	if (prom_failed)
		ret = -1;
	/* a collector must not read a truncated file as a whole one */
	else if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "Error: cannot write the output: %s\n",
			strerror(errno));
		ret = -1;
	}
	return ret;
}

void p_err(const char *fmt, ...)
{
	char msg[1024], esc[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (out_format == OUT_JSON) {
		/* close whatever was open so the output stays valid JSON */
		while (depth > 0)
			close_json(closer[depth]);
		json_escape(msg, esc, sizeof(esc));
		printf("{\"error\":\"%s\"}\n", esc);
	} else {
		out_flush();
		fprintf(stderr, "Error: %s\n", msg);
		if (out_format == OUT_PROMETHEUS)
			prom_failed = true;
	}
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	if (out_format == OUT_JSON)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
