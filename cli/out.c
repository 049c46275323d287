// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "out.h"

bool json_output;
bool pretty_output;
int verbose;

/* JSON writer state: nesting depth and whether a comma is due */
static int depth;
static bool need_comma[32];
static char closer[32];	/* what closes each open level */
/* text mode: fields of the current line */
static bool line_open;

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

void out_begin_array(const char *key)
{
	if (json_output)
		open_json(key, '[');
}

void out_end_array(void)
{
	if (json_output)
		close_json(']');
}

void out_begin_object(const char *key)
{
	if (json_output)
		open_json(key, '{');
}

void out_end_object(void)
{
	if (json_output)
		close_json('}');
	else
		out_flush();
}

void out_flush(void)
{
	if (!json_output && line_open) {
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
	if (json_output) {
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

	if (json_output) {
		json_key(key);
		printf("%llu", (unsigned long long)val);
	} else {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)val);
		text_field(key, buf);
	}
}

void out_bool(const char *key, bool val)
{
	if (json_output) {
		json_key(key);
		fputs(val ? "true" : "false", stdout);
	} else {
		text_field(key, val ? "yes" : "no");
	}
}

void p_err(const char *fmt, ...)
{
	char msg[1024], esc[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_output) {
		/* close whatever was open so the output stays valid JSON */
		while (depth > 0)
			close_json(closer[depth]);
		json_escape(msg, esc, sizeof(esc));
		printf("{\"error\":\"%s\"}\n", esc);
	} else {
		out_flush();
		fprintf(stderr, "Error: %s\n", msg);
	}
}

void p_info(const char *fmt, ...)
{
	va_list ap;

	if (json_output)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
