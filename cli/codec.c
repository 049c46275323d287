// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include <xps/kvcache.h>

#include "codec.h"

enum shape { SHAPE_HEX, SHAPE_STR, SHAPE_INT, SHAPE_LENSTR };

struct layout {
	enum shape shape;
	__u32 int_size;		/* SHAPE_INT, or the length field's size */
	__u32 len_off;		/* SHAPE_LENSTR: length field offset */
	__u32 str_off;		/* SHAPE_STR/LENSTR: where the bytes go */
	__u32 str_max;
};

static const struct btf_type *resolve(const struct btf *btf, __u32 *id)
{
	const struct btf_type *t = btf__type_by_id(btf, *id);

	while (t && (btf_is_typedef(t) || btf_is_const(t) ||
		     btf_is_volatile(t) || btf_is_restrict(t))) {
		*id = t->type;
		t = btf__type_by_id(btf, *id);
	}
	return t;
}

static bool is_byte_array(const struct btf *btf, const struct btf_type *t,
			  __u32 *n)
{
	const struct btf_type *e;
	__u32 id;

	if (!t || !btf_is_array(t))
		return false;
	id = btf_array(t)->type;
	e = resolve(btf, &id);
	if (!e || !btf_is_int(e) || e->size != 1)
		return false;
	*n = btf_array(t)->nelems;
	return true;
}

static struct layout classify(const struct codec *c)
{
	struct layout l = { .shape = SHAPE_HEX };
	const struct btf_type *t, *mt;
	const struct btf_member *m;
	__u32 id = c->type_id, mid, n, i;
	int len_idx = -1, str_idx = -1;

	if (!c->btf)
		return l;
	t = resolve(c->btf, &id);
	if (!t)
		return l;
	if (is_byte_array(c->btf, t, &n)) {
		l.shape = SHAPE_STR;
		l.str_max = n;
		return l;
	}
	if (btf_is_int(t) && (t->size == 1 || t->size == 2 || t->size == 4 ||
			      t->size == 8)) {
		l.shape = SHAPE_INT;
		l.int_size = t->size;
		return l;
	}
	if (!btf_is_struct(t))
		return l;
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(c->btf, m->name_off);

		mid = m->type;
		mt = resolve(c->btf, &mid);
		if (btf_member_bitfield_size(t, i))
			return l;
		if (mt && btf_is_int(mt) && len_idx < 0 &&
		    (!strcmp(name, "len") || !strcmp(name, "length") ||
		     !strcmp(name, "size") || !strcmp(name, "vlen"))) {
			len_idx = i;
			l.len_off = btf_member_bit_offset(t, i) / 8;
			l.int_size = mt->size;
		} else if (is_byte_array(c->btf, mt, &n) && str_idx < 0) {
			str_idx = i;
			l.str_off = btf_member_bit_offset(t, i) / 8;
			l.str_max = n;
		}
	}
	if (str_idx >= 0 && len_idx >= 0)
		l.shape = SHAPE_LENSTR;
	else if (str_idx >= 0 && btf_vlen(t) == 1)
		l.shape = SHAPE_STR;
	return l;
}

int codec_init(struct codec *c, int map_fd, int want_value)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	memset(c, 0, sizeof(*c));
	if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
		return -errno;
	c->size = want_value ? info.value_size : info.key_size;
	c->type_id = want_value ? info.btf_value_type_id : info.btf_key_type_id;
	if (info.btf_id && c->type_id) {
		c->btf = btf__load_from_kernel_by_id(info.btf_id);
		if (!c->btf)
			c->type_id = 0;
	}
	if (c->btf && !want_value && c->size == sizeof(struct xps_kv_hkey)) {
		const struct btf_type *t = btf__type_by_id(c->btf, c->type_id);

		c->kvhash = t && btf_is_struct(t) &&
			    !strcmp(btf__name_by_offset(c->btf, t->name_off),
				    "xps_kv_hkey");
	}
	return 0;
}

void codec_free(struct codec *c)
{
	btf__free(c->btf);
	c->btf = NULL;
}

static int parse_hex(const char *s, __u8 *buf, __u32 size, char *err,
		     size_t errsz)
{
	__u32 n = 0;

	while (*s) {
		unsigned int b;

		if (isspace((unsigned char)*s) || *s == ':') {
			s++;
			continue;
		}
		if (!isxdigit((unsigned char)s[0]) ||
		    !isxdigit((unsigned char)s[1]) || sscanf(s, "%2x", &b) != 1) {
			snprintf(err, errsz, "bad hex digits at '%.8s'", s);
			return -EINVAL;
		}
		if (n >= size) {
			snprintf(err, errsz, "more than %u bytes", size);
			return -E2BIG;
		}
		buf[n++] = b;
		s += 2;
	}
	return 0;
}

static void put_int(__u8 *dst, __u32 size, __u64 v)
{
	switch (size) {
	case 1: { __u8 x = v; memcpy(dst, &x, 1); break; }
	case 2: { __u16 x = v; memcpy(dst, &x, 2); break; }
	case 4: { __u32 x = v; memcpy(dst, &x, 4); break; }
	default: memcpy(dst, &v, 8); break;
	}
}

static __u64 get_int(const __u8 *src, __u32 size)
{
	switch (size) {
	case 1: return src[0];
	case 2: { __u16 x; memcpy(&x, src, 2); return x; }
	case 4: { __u32 x; memcpy(&x, src, 4); return x; }
	default: { __u64 x; memcpy(&x, src, 8); return x; }
	}
}

int codec_encode(const struct codec *c, const char *text, void *buf,
		 char *err, size_t errsz)
{
	struct layout l = classify(c);
	__u8 *b = buf;
	size_t n;

	memset(buf, 0, c->size);
	if (c->kvhash) {
		struct xps_kv_key k;

		if (xps_kv_key_set(&k, text, strlen(text))) {
			snprintf(err, errsz, "'%.20s...' is longer than %u bytes",
				 text, XPS_KV_KEY_MAX);
			return -E2BIG;
		}
		*(struct xps_kv_hkey *)buf = xps_kv_hkey_of(&k);
		return 0;
	}
	if (!strncmp(text, "hex:", 4))
		return parse_hex(text + 4, b, c->size, err, errsz);
	switch (l.shape) {
	case SHAPE_STR:
	case SHAPE_LENSTR:
		n = strlen(text);
		if (n > l.str_max) {
			snprintf(err, errsz, "'%.20s...' is %zu bytes, the field holds %u",
				 text, n, l.str_max);
			return -E2BIG;
		}
		memcpy(b + l.str_off, text, n);
		if (l.shape == SHAPE_LENSTR)
			put_int(b + l.len_off, l.int_size, n);
		return 0;
	case SHAPE_INT: {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(text, &end, 0);
		if (errno || *end || end == text) {
			snprintf(err, errsz, "'%s' is not a number", text);
			return -EINVAL;
		}
		if (l.int_size < 8 && v >> (l.int_size * 8)) {
			snprintf(err, errsz, "%s does not fit in %u bytes",
				 text, l.int_size);
			return -ERANGE;
		}
		put_int(b, l.int_size, v);
		return 0;
	}
	default:
		snprintf(err, errsz, "this map's layout takes raw bytes: write hex:<bytes>");
		return -EINVAL;
	}
}

static void render_bytes(const __u8 *p, __u32 n, bool as_text, char *out,
			 size_t outsz)
{
	size_t o = 0;
	__u32 i;

	if (!as_text) {
		o += snprintf(out, outsz, "hex:");
		for (i = 0; i < n && o + 3 < outsz; i++)
			o += snprintf(out + o, outsz - o, "%02x", p[i]);
		return;
	}
	for (i = 0; i < n && o + 5 < outsz; i++) {
		if (isprint(p[i]) && p[i] != '\\')
			out[o++] = p[i];
		else
			o += snprintf(out + o, outsz - o, "\\x%02x", p[i]);
	}
	out[o] = '\0';
}

void codec_decode(const struct codec *c, const void *buf, char *out,
		  size_t outsz)
{
	struct layout l = classify(c);
	const __u8 *b = buf;
	__u32 n;

	if (c->kvhash) {
		snprintf(out, outsz, "hash:%016llx",
			 (unsigned long long)((const struct xps_kv_hkey *)buf)->hash);
		return;
	}
	switch (l.shape) {
	case SHAPE_STR:
		for (n = 0; n < l.str_max && b[l.str_off + n]; n++)
			;
		/* text only if everything after the string is padding */
		render_bytes(b + l.str_off, n, true, out, outsz);
		for (; n < l.str_max; n++)
			if (b[l.str_off + n])
				render_bytes(b, c->size, false, out, outsz);
		return;
	case SHAPE_LENSTR:
		n = get_int(b + l.len_off, l.int_size);
		if (n > l.str_max)
			break;
		render_bytes(b + l.str_off, n, true, out, outsz);
		return;
	case SHAPE_INT:
		snprintf(out, outsz, "%llu",
			 (unsigned long long)get_int(b, l.int_size));
		return;
	default:
		break;
	}
	render_bytes(b, c->size, false, out, outsz);
}

int codec_kv_bind(const struct codec *key, const char *text, void *val)
{
	if (!key->kvhash)
		return 0;
	return xps_kv_key_set(&((struct xps_kv_value *)val)->key, text,
			      strlen(text)) ? -E2BIG : 0;
}

void codec_kv_key(const void *val, char *out, size_t outsz)
{
	const struct xps_kv_key *k = &((const struct xps_kv_value *)val)->key;

	render_bytes(k->b, k->len <= XPS_KV_KEY_MAX ? k->len : 0, true, out,
		     outsz);
}

bool codec_kv_holds(const void *val, const char *text)
{
	const struct xps_kv_key *k = &((const struct xps_kv_value *)val)->key;
	size_t n = strlen(text);

	return k->len == n && n <= XPS_KV_KEY_MAX && !memcmp(k->b, text, n);
}
