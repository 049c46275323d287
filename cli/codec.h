/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Text <-> bytes for data-map keys and values, driven by the map's BTF:
 * char arrays take strings, integers take numbers, a struct of a length
 * field and a char array takes a string (length set from it), and any type
 * takes "hex:..." raw bytes.
 */
#ifndef __XPSCTL_CODEC_H
#define __XPSCTL_CODEC_H

#include <linux/types.h>

struct btf;

struct codec {
	struct btf *btf;	/* NULL: the map has no BTF, hex only */
	__u32 type_id;
	__u32 size;
};

int codec_init(struct codec *c, int map_fd, int want_value);
void codec_free(struct codec *c);
/* Parse @text into @buf (c->size bytes, zero-filled first). */
int codec_encode(const struct codec *c, const char *text, void *buf,
		 char *err, size_t errsz);
/* Render @buf for display. */
void codec_decode(const struct codec *c, const void *buf, char *out,
		  size_t outsz);

#endif
