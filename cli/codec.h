/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Text <-> bytes for data-map keys and values, driven by the map's BTF:
 * char arrays take strings, integers take numbers, a struct of a length
 * field and a char array takes a string (length set from it), and any type
 * takes "hex:..." raw bytes.  The key of a kv-cache map (struct
 * xps_kv_hkey, include/xps/kvcache.h) takes the key's text and holds its
 * hash; the key itself is in the value (codec_kv_bind()).
 */
#ifndef __XPSCTL_CODEC_H
#define __XPSCTL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct btf;

struct codec {
	struct btf *btf;	/* NULL: the map has no BTF, hex only */
	__u32 type_id;
	__u32 size;
	bool kvhash;		/* the key is a struct xps_kv_hkey */
};

int codec_init(struct codec *c, int map_fd, int want_value);
void codec_free(struct codec *c);
/* Parse @text into @buf (c->size bytes, zero-filled first). */
int codec_encode(const struct codec *c, const char *text, void *buf,
		 char *err, size_t errsz);
/* Render @buf for display. */
void codec_decode(const struct codec *c, const void *buf, char *out,
		  size_t outsz);

/*
 * kv-cache maps: store key @text in the value @val (struct xps_kv_value)
 * whose map key was encoded from the same text.  -E2BIG when too long.
 */
int codec_kv_bind(const struct codec *key, const char *text, void *val);
/* Render the key stored in the kv-cache value @val. */
void codec_kv_key(const void *val, char *out, size_t outsz);
/* Whether @val holds key @text (a hash collision holds another). */
bool codec_kv_holds(const void *val, const char *text);

#endif
