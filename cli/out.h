/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Output for xpsctl: every command prints through these calls, which emit
 * aligned text, JSON (-j, -p) or, for the commands that have it, the
 * Prometheus text format (-o prometheus) from the same sequence, so the
 * formats cannot drift apart.
 */
#ifndef __XPSCTL_OUT_H
#define __XPSCTL_OUT_H

#include <stdbool.h>
#include <linux/types.h>

enum out_format {
	OUT_TEXT,
	OUT_JSON,
	OUT_PROMETHEUS,
};

extern enum out_format out_format;
extern bool pretty_output;
extern int verbose;

/* "text", "json" or "prometheus" into @fmt; -1 for anything else */
int out_parse_format(const char *name, enum out_format *fmt);

/*
 * What a number is to Prometheus: a sample of the family @name.  Fields of
 * one record that share a family (the verdicts of a run) are told apart by
 * @label="@label_value".
 */
struct out_metric {
	const char *name;
	const char *type;		/* "counter" or "gauge" */
	const char *help;
	const char *label;		/* or NULL */
	const char *label_value;
	bool ns_as_seconds;		/* kept in ns, exported in seconds */
};

void out_begin_array(const char *key);
void out_end_array(void);
void out_begin_object(const char *key);
void out_end_object(void);
/* Fields Prometheus output leaves out (it carries labels and metrics). */
void out_str(const char *key, const char *val);
void out_u64(const char *key, __u64 val);
void out_bool(const char *key, bool val);
/* A field that identifies the record: a label of its Prometheus samples. */
void out_label(const char *key, const char *label, const char *val);
void out_label_u64(const char *key, const char *label, __u64 val);
/* A counter or gauge: a field, and a Prometheus sample of @m. */
void out_metric(const char *key, __u64 val, const struct out_metric *m);
/* Text mode: end the current record's line. */
void out_flush(void);
/*
 * After the command: write what Prometheus output gathered, free it.
 * -1 (with the error printed) when the output could not be written.
 */
int out_finish(void);

/*
 * Errors: {"error": "..."} in JSON mode, "Error: ..." on stderr otherwise
 * (Prometheus output then prints nothing on stdout).
 */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void json_escape(const char *s, char *dst, size_t dstsz);

#endif
