/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Output for xpsctl: every command prints through these calls, which emit
 * JSON (-j, -p) or aligned text from the same sequence, so the two formats
 * cannot drift apart.
 */
#ifndef __XPSCTL_OUT_H
#define __XPSCTL_OUT_H

#include <stdbool.h>
#include <linux/types.h>

extern bool json_output;
extern bool pretty_output;
extern int verbose;

void out_begin_array(const char *key);
void out_end_array(void);
void out_begin_object(const char *key);
void out_end_object(void);
void out_str(const char *key, const char *val);
void out_u64(const char *key, __u64 val);
void out_bool(const char *key, bool val);
/* Text mode: end the current record's line. */
void out_flush(void);

/* Errors: {"error": "..."} in JSON mode, "Error: ..." on stderr otherwise. */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void json_escape(const char *s, char *dst, size_t dstsz);

#endif
