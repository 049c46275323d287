// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The kv-cache's user-space half (libxps/libxps_kv.h): fills under
 * the coherence protocol of docs/coherence.md, the miss queue, the state
 * the filler shares with the handler, and the check that every connection
 * to the service is one XPS sees (its sock_diag scan is sockdiag.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "internal.h"
#include "libxps_kv.h"

#define SKIP_SLOTS		1024
#define SKIP_NS_DEFAULT		(100 * 1000 * 1000ULL)
#define RECHECK_NS_DEFAULT	(10 * 1000 * 1000 * 1000ULL)
#define ARM_SLOTS		1024	/* captures asked for, by connection */
/* replies paired, and keys asked about, not yet taken: one per key */
#define KQ_SIZE			256

/*
 * A queue of entries that each begin with a struct xps_kv_key, in an
 * array of KQ_SIZE beside it, at most one per key (kq_slot()).
 */
struct kq {
	unsigned int head, tail;
	__u64 hash[KQ_SIZE];	/* xps_kv_hkey_of() of each entry's key */
};
_Static_assert(offsetof(struct xps_kv_learned, key) == 0 &&
	       offsetof(struct xps_kv_asked, key) == 0,
	       "a queued entry begins with its key");

/* A capture asked for (struct xps_cap_arm), waiting for its reply. */
struct kv_arm {
	__u64 cookie;		/* 0: an empty slot */
	__u32 reply;
	struct xps_kv_arm tag;
};

struct xps_kvcache {
	char name[XPS_NAME_LEN];
	__u16 port;
	int data_fd, misses_fd, state_fd, versions_fd, config_fd, conns_fd;
	int wpend_fd;		/* opened on first use */
	/* the framework's xps_servers, mapped shared: our slot's word */
	int servers_fd;
	__u32 *servers;
	size_t servers_len;
	/*
	 * The slots of the contexts on our port (ours first; a UDP context
	 * that shares our cache, say) and their words as
	 * xps_kvcache__server_gone() last read them.
	 */
	__u32 port_slots[XPS_MAX_SLOTS], n_port_slots;
	__u32 gone_seen[XPS_MAX_SLOTS];
	struct xps_wpend *wpend;	/* its value, read by the filler */
	/* the handler's state (cgen, flags, ...), mapped shared */
	void *state;
	size_t state_len;
	__u64 skip_ns;
	/* the last unseen-connections check that found none (clean_ns 0: none) */
	__u64 recheck_ns, clean_ns, clean_unrecorded;
	/* keys found not cacheable lately, by hash (0: an empty slot) */
	__u64 skip_hash[SKIP_SLOTS];
	__u64 skip_at[SKIP_SLOTS];
	/* reply capture: our ring in the framework's xps_caps at @slot */
	__u32 slot;
	int caps_fd, ring_fd;
	__u32 ring_id;
	struct ring_buffer *rb;
	/* write-through: our data map in the framework's xps_kv_datas */
	int datas_fd;
	__u32 data_id;
	struct kv_arm arms[ARM_SLOTS];
	struct xps_kv_learned learned[KQ_SIZE];
	struct kq lq;
	/* from the first xps_kvcache__asked_next() on */
	bool asking;
	struct xps_kv_asked asked[KQ_SIZE];
	struct kq aq;
};

/*
 * Take the map of id @id out of the framework's map-of-maps @outer_fd at
 * @slot, unless another process put its own there since.
 */
static void slot_release(int outer_fd, __u32 slot, __u32 id)
{
	__u32 cur = 0;

	if (outer_fd >= 0 && id && !bpf_map_lookup_elem(outer_fd, &slot, &cur) &&
	    cur == id)
		bpf_map_delete_elem(outer_fd, &slot);
}

/* Take our ring out of the framework's slot, unless another took it. */
static void ring_detach(struct xps_kvcache *kc)
{
	slot_release(kc->caps_fd, kc->slot, kc->ring_id);
	if (kc->caps_fd >= 0)
		close(kc->caps_fd);
	if (kc->ring_fd >= 0)
		close(kc->ring_fd);
	kc->caps_fd = kc->ring_fd = -1;
}

/*
 * Put the context's data map in the framework's slot, where the egress
 * step commits the values of writes the handler made records for
 * (docs/coherence.md, "Writes committed by the kernel").
 */
static int data_attach(struct xps_kvcache *kc)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int err;

	kc->datas_fd = bpf_obj_get(XPS_FW_PIN("xps_kv_datas"));
	if (kc->datas_fd < 0) {
		err = -errno;
		pr_warn("cannot open the framework's xps_kv_datas map: %s (loaded by an older XPS? remove it with 'xpsctl reset')\n",
			strerror(-err));
		return err;
	}
	if (bpf_obj_get_info_by_fd(kc->data_fd, &info, &len) ||
	    bpf_map_update_elem(kc->datas_fd, &kc->slot, &kc->data_fd,
				BPF_ANY)) {
		err = -errno;
		pr_warn("cannot install the data map of '%s' for write-through: %s\n",
			kc->name, strerror(-err));
		return err;
	}
	kc->data_id = info.id;
	return 0;
}

/* Take our data map out of the framework's slot, unless another took it. */
static void data_detach(struct xps_kvcache *kc)
{
	slot_release(kc->datas_fd, kc->slot, kc->data_id);
	if (kc->datas_fd >= 0)
		close(kc->datas_fd);
	kc->datas_fd = -1;
}

void xps_kvcache__close(struct xps_kvcache *kc)
{
	int *fds[7];
	size_t i;

	if (!kc)
		return;
	fds[0] = &kc->data_fd;
	fds[1] = &kc->misses_fd;
	fds[2] = &kc->state_fd;
	fds[3] = &kc->versions_fd;
	fds[4] = &kc->config_fd;
	fds[5] = &kc->conns_fd;
	fds[6] = &kc->wpend_fd;
	data_detach(kc);
	ring_detach(kc);
	ring_buffer__free(kc->rb);
	free(kc->wpend);
	if (kc->servers)
		munmap(kc->servers, kc->servers_len);
	if (kc->servers_fd >= 0)
		close(kc->servers_fd);
	if (kc->state)
		munmap(kc->state, kc->state_len);
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	free(kc);
}

static int on_capture(void *ctx, void *data, size_t size);

/*
 * Make the ring the handler's reply captures go to and put it in the
 * framework's slot (docs/coherence.md, "Learning from the server's
 * replies").  The previous reader's ring, if any, is replaced.
 */
static int ring_attach(struct xps_kvcache *kc, __u32 slot)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int err;

	kc->slot = slot;
	kc->caps_fd = bpf_obj_get(XPS_FW_PIN("xps_caps"));
	if (kc->caps_fd < 0) {
		err = -errno;
		pr_warn("cannot open the framework's xps_caps map: %s (loaded by an older XPS? remove it with 'xpsctl reset')\n",
			strerror(-err));
		return err;
	}
	kc->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "xps_cap_ring", 0,
				     0, XPS_CAP_RING_SIZE, NULL);
	if (kc->ring_fd < 0 ||
	    bpf_obj_get_info_by_fd(kc->ring_fd, &info, &len)) {
		err = -errno;
		pr_warn("cannot create the reply capture ring of '%s': %s\n",
			kc->name, strerror(-err));
		return err;
	}
	kc->ring_id = info.id;
	kc->rb = ring_buffer__new(kc->ring_fd, on_capture, kc, NULL);
	if (!kc->rb) {
		err = -errno;
		pr_warn("cannot map the reply capture ring of '%s': %s\n",
			kc->name, strerror(-err));
		return err;
	}
	if (bpf_map_update_elem(kc->caps_fd, &slot, &kc->ring_fd, BPF_ANY)) {
		err = -errno;
		pr_warn("cannot install the reply capture ring of '%s': %s\n",
			kc->name, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * A slot's word in the mapped xps_servers.  The kernel lays an array map's
 * elements out 8 bytes apart (round_up(value_size, 8)): slot N's __u32 is
 * word 2N, and word 2N + 1 is padding.
 */
#define SERVER_STRIDE	2

static __u32 *server_word(struct xps_kvcache *kc, __u32 slot)
{
	return &kc->servers[slot * SERVER_STRIDE];
}

/* xps_context__for_each(): another context on our port. */
static int add_port_slot(const struct xps_ctx_info *info, __u32 slot,
			 void *data)
{
	struct xps_kvcache *kc = data;

	if (info->pred.lport == kc->port && slot != kc->slot &&
	    kc->n_port_slots < XPS_MAX_SLOTS)
		kc->port_slots[kc->n_port_slots++] = slot;
	return 0;
}

struct xps_kvcache *xps_kvcache__open(const struct xps_context *ctx,
				      const struct xps_kvcache_opts *opts)
{
	struct xps_ctx_info info;
	struct xps_kvcache *kc;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (!ctx || !OPTS_VALID(opts, xps_kvcache_opts))
		return libxps_err_ptr(-EINVAL);
	if (xps_context__info(ctx, &info))
		return NULL;
	kc = calloc(1, sizeof(*kc));
	if (!kc)
		return libxps_err_ptr(-ENOMEM);
	kc->caps_fd = kc->ring_fd = kc->wpend_fd = kc->servers_fd = -1;
	kc->datas_fd = -1;
	snprintf(kc->name, sizeof(kc->name), "%s", xps_context__name(ctx));
	kc->port = info.pred.lport;
	kc->skip_ns = OPTS_GET(opts, skip_ns, 0) ?: SKIP_NS_DEFAULT;
	kc->recheck_ns = OPTS_GET(opts, recheck_ns, 0) ?: RECHECK_NS_DEFAULT;
	kc->data_fd = xps_context__map_fd(ctx, XPS_CTX_MAP_DATA);
	kc->misses_fd = xps_context__map_fd(ctx, XPS_CTX_MAP_MISSES);
	kc->state_fd = xps_context__map_fd(ctx, XPS_CTX_MAP_STATE);
	kc->versions_fd = xps_context__map_fd(ctx, XPS_CTX_MAP_VERSIONS);
	kc->config_fd = xps_framework__map_fd(XPS_FW_MAP_CONFIG);
	kc->conns_fd = xps_framework__map_fd(XPS_FW_MAP_CONNS);
	if (kc->data_fd < 0 || kc->misses_fd < 0 || kc->state_fd < 0 ||
	    kc->versions_fd < 0 || kc->config_fd < 0 || kc->conns_fd < 0) {
		/* each failure was logged by the map_fd call */
		pr_warn("context '%s' is not a kv-cache (bpf/lib/kvcache.bpf.h)\n",
			kc->name);
		err = -ENOENT;
		goto fail;
	}
	err = ring_attach(kc, ctx->slot);
	if (!err)
		err = data_attach(kc);
	if (err)
		goto fail;
	kc->servers_fd = xps_framework__map_fd(XPS_FW_MAP_SERVERS);
	if (kc->servers_fd < 0) {
		err = kc->servers_fd;
		goto fail;
	}
	kc->servers_len = XPS_MAX_SLOTS * SERVER_STRIDE * sizeof(__u32);
	kc->servers = mmap(NULL, kc->servers_len, PROT_READ | PROT_WRITE,
			   MAP_SHARED, kc->servers_fd, 0);
	if (kc->servers == MAP_FAILED) {
		err = -errno;
		kc->servers = NULL;
		pr_warn("cannot map the framework's xps_servers: %s\n",
			strerror(-err));
		goto fail;
	}
	kc->port_slots[0] = kc->slot;
	kc->n_port_slots = 1;
	xps_context__for_each(add_port_slot, kc);
	kc->state_len = page > 0 ? (size_t)page : 4096;
	kc->state = mmap(NULL, kc->state_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED, kc->state_fd, 0);
	if (kc->state == MAP_FAILED) {
		err = -errno;
		kc->state = NULL;
		pr_warn("cannot map the state of '%s': %s (a handler built before its state map was mappable?)\n",
			kc->name, strerror(-err));
		goto fail;
	}
	return kc;
fail:
	xps_kvcache__close(kc);
	return libxps_err_ptr(err);
}

__u16 xps_kvcache__port(const struct xps_kvcache *kc)
{
	return kc ? kc->port : 0;
}

void *xps_kvcache__state(struct xps_kvcache *kc)
{
	return kc ? kc->state : NULL;
}

/* Every kv-cache handler's state begins with struct xps_kv_state. */
static struct xps_kv_state *kv_state(struct xps_kvcache *kc)
{
	return kc->state;
}

static __u32 *state_cgen(struct xps_kvcache *kc)
{
	return &kv_state(kc)->cgen;
}

static __u32 *state_flags(struct xps_kvcache *kc)
{
	return &kv_state(kc)->flags;
}

void xps_kvcache__flags(struct xps_kvcache *kc, __u32 set, __u32 clear)
{
	if (!kc)
		return;
	/*
	 * Atomic, never a lookup-modify-update of the whole value: that
	 * could undo a cache generation the handler bumped meanwhile (a
	 * flush lost).
	 */
	if (set)
		__atomic_fetch_or(state_flags(kc), set, __ATOMIC_SEQ_CST);
	if (clear)
		__atomic_fetch_and(state_flags(kc), ~clear, __ATOMIC_SEQ_CST);
}

void xps_kvcache__invalidate(struct xps_kvcache *kc)
{
	if (kc)
		__atomic_fetch_add(state_cgen(kc), 1, __ATOMIC_SEQ_CST);
}

/* CLOCK_MONOTONIC: the clock of bpf_ktime_get_ns() */
static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void xps_kvcache__lease(struct xps_kvcache *kc, __u64 ns)
{
	if (!kc)
		return;
	/* 0 would mean "no lease in force": an ended lease is 1 */
	__atomic_store_n(&kv_state(kc)->lease_ns, ns ? now_ns() + ns : 1,
			 __ATOMIC_SEQ_CST);
}

__u32 xps_kvcache__stops(struct xps_kvcache *kc)
{
	return kc ? __atomic_load_n(state_flags(kc), __ATOMIC_SEQ_CST) : 0;
}

/*
 * Set @set and clear @clear in the flags, unless the handler's stop
 * generation moved since @seen was read.
 */
static int flags_unless_stopped(struct xps_kvcache *kc, __u32 set,
				__u32 clear, __u32 seen)
{
	__u32 cur;

	if (!kc)
		return libxps_err(-EINVAL);
	cur = __atomic_load_n(state_flags(kc), __ATOMIC_SEQ_CST);
	do {
		if ((cur ^ seen) >> XPS_KV_STOP_GEN_SHIFT)
			return -EAGAIN;	/* routine: not logged */
	} while (!__atomic_compare_exchange_n(state_flags(kc), &cur,
					      (cur | set) & ~clear, false,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	return 0;
}

int xps_kvcache__lift(struct xps_kvcache *kc, __u32 clear, __u32 seen)
{
	return flags_unless_stopped(kc, 0, clear, seen);
}

int xps_kvcache__grant(struct xps_kvcache *kc, __u32 set, __u32 seen)
{
	return flags_unless_stopped(kc, set, 0, seen);
}

long long xps_kvcache__writes_all_pending(struct xps_kvcache *kc)
{
	__u32 zero = 0;

	if (!kc)
		return libxps_err(-EINVAL);
	if (kc->wpend_fd < 0)
		kc->wpend_fd = xps_framework__map_fd(XPS_FW_MAP_WPEND);
	if (kc->wpend_fd < 0)
		return libxps_err(kc->wpend_fd);
	/* 32 KiB: off the stack */
	if (!kc->wpend && !(kc->wpend = malloc(sizeof(*kc->wpend))))
		return libxps_err(-ENOMEM);
	if (bpf_map_lookup_elem(kc->wpend_fd, &zero, kc->wpend))
		return libxps_err(-errno);
	return (long long)kc->wpend->ovf;
}

bool xps_kvcache__server_gone(struct xps_kvcache *kc)
{
	bool gone = false;
	__u32 i, slot;

	if (!kc)
		return false;
	for (i = 0; i < kc->n_port_slots; i++) {
		slot = kc->port_slots[i];
		if (slot >= XPS_MAX_SLOTS)
			continue;
		kc->gone_seen[i] = __atomic_load_n(server_word(kc, slot),
						   __ATOMIC_SEQ_CST);
		gone |= kc->gone_seen[i] & XPS_SERVER_GONE;
	}
	return gone;
}

int xps_kvcache__server_back(struct xps_kvcache *kc)
{
	__u32 i, slot, seen;
	int err = 0;

	if (!kc)
		return libxps_err(-EINVAL);
	for (i = 0; i < kc->n_port_slots; i++) {
		slot = kc->port_slots[i];
		seen = kc->gone_seen[i];
		if (slot >= XPS_MAX_SLOTS || !(seen & XPS_SERVER_GONE))
			continue;
		/* a close since it was read moved the count: it stays seen */
		if (!__atomic_compare_exchange_n(server_word(kc, slot), &seen,
						 seen & ~XPS_SERVER_GONE, false,
						 __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			err = -EAGAIN;
	}
	return err;
}

void xps_kvcache__idle_pass(struct xps_kvcache *kc, __u64 ns)
{
	if (kc)
		__atomic_store_n(&kv_state(kc)->idle_pass_ns, ns,
				 __ATOMIC_SEQ_CST);
}

/* ---- keys skipped lately --------------------------------------------- */

static __u64 skip_hash(const struct xps_kv_key *key)
{
	return xps_kv_hash_key(key) | 1;	/* 0 marks an empty slot */
}

void xps_kvcache__fill_skip(struct xps_kvcache *kc,
			    const struct xps_kv_key *key)
{
	__u64 h;

	if (!kc || !key)
		return;
	h = skip_hash(key);
	kc->skip_hash[h % SKIP_SLOTS] = h;
	kc->skip_at[h % SKIP_SLOTS] = now_ns();
}

static bool skipped_lately(struct xps_kvcache *kc,
			   const struct xps_kv_key *key)
{
	__u64 h = skip_hash(key);

	return kc->skip_hash[h % SKIP_SLOTS] == h &&
	       now_ns() - kc->skip_at[h % SKIP_SLOTS] < kc->skip_ns;
}

/*
 * A key as the handler wrote it: its bytes past len may be stale (a len
 * over XPS_KV_KEY_MAX becomes 0).  Zero them, as xps_kv_key_set() leaves
 * a key.
 */
static void key_tidy(struct xps_kv_key *key)
{
	if (key->len > XPS_KV_KEY_MAX)
		key->len = 0;
	memset(key->b + key->len, 0, XPS_KV_KEY_MAX - key->len);
	key->pad = 0;
}

/* ---- the miss queue -------------------------------------------------- */

int xps_kvcache__miss_pop(struct xps_kvcache *kc, struct xps_kv_key *key)
{
	if (!kc || !key)
		return libxps_err(-EINVAL);
	for (;;) {
		if (bpf_map_lookup_and_delete_elem(kc->misses_fd, NULL, key))
			return libxps_err(-errno);
		key_tidy(key);
		if (!skipped_lately(kc, key))
			return 0;
	}
}

int xps_kvcache__miss_retry(struct xps_kvcache *kc,
			    const struct xps_kv_key *key)
{
	if (!kc || !key)
		return libxps_err(-EINVAL);
	/* a full queue drops its oldest entry: a miss is only a hint */
	if (bpf_map_update_elem(kc->misses_fd, NULL, key, BPF_EXIST))
		return libxps_err(-errno);
	return 0;
}

/* ---- learning from the server's replies ------------------------------- */

/*
 * The entry of @key (tidy) in @q, whose entries of @stride bytes are at
 * @ents: the one queued already, or a new one at the tail; -1 when the
 * queue is full.
 */
static int kq_slot(struct kq *q, const void *ents, size_t stride,
		   const struct xps_kv_key *key)
{
	__u64 hash = xps_kv_hkey_of(key).hash;
	unsigned int i, k;

	for (i = q->head; i != q->tail; i++) {
		k = i % KQ_SIZE;
		if (q->hash[k] == hash &&
		    !memcmp((const char *)ents + k * stride, key, sizeof(*key)))
			return k;
	}
	if (q->tail - q->head == KQ_SIZE)
		return -1;
	k = q->tail++ % KQ_SIZE;
	q->hash[k] = hash;
	return k;
}

/* Queue an ARM's key for xps_kvcache__asked_next(), once per key. */
static void ask_queue(struct xps_kvcache *kc, const struct xps_kv_arm *tag)
{
	struct xps_kv_key key = tag->key;
	struct xps_kv_asked *q;
	int k;

	if (!kc->asking)
		return;
	key_tidy(&key);
	k = kq_slot(&kc->aq, kc->asked, sizeof(kc->asked[0]), &key);
	if (k < 0)
		return;		/* its reply will be asked about */
	q = &kc->asked[k];
	q->key = key;
	q->version = tag->version;
	q->cgen = tag->cgen;
	q->pad = 0;
}

/*
 * One record of the capture ring: an ARM (a GET missed; its key and
 * stamps) is kept by connection until the REPLY with the same number
 * comes; the pair is queued for xps_kvcache__learn_next().  Anything
 * else (a reply nobody armed, an arm whose reply was not captured) is
 * dropped: learning is only ever a hint.
 *
 * A key already queued is replaced in place by the pair that came later
 * (whose stamps are usually the later ones; replies on two connections
 * may finish out of order, and older stamps only make a value that is
 * never served), and one PTTL (or `me`) answers for it.  Every GET of a
 * key that misses asks again until the filler has learned it, so under
 * load most pairs repeat a queued key.  A full queue drops the pair:
 * the next miss asks again, with fresher stamps than a pair left waiting
 * in the ring would have.
 */
static int on_capture(void *ctx, void *data, size_t size)
{
	const struct xps_cap_hdr *h = data;
	struct xps_kvcache *kc = ctx;
	struct xps_kv_learned *l;
	struct xps_kv_key key;
	struct kv_arm *a;
	int k;

	if (size < sizeof(*h))
		return 0;
	a = &kc->arms[h->cookie % ARM_SLOTS];
	if (h->kind == XPS_CAP_ARM) {
		const struct xps_cap_arm *rec = data;

		if (size < sizeof(*rec) || h->len != sizeof(a->tag))
			return 0;
		memcpy(&a->tag, rec->tag, sizeof(a->tag));
		if (a->tag.key.len < 1 || a->tag.key.len > XPS_KV_KEY_MAX) {
			a->cookie = 0;
			return 0;
		}
		a->cookie = h->cookie;
		a->reply = h->reply;
		ask_queue(kc, &a->tag);
		return 0;
	}
	if (h->kind != XPS_CAP_REPLY || size < sizeof(struct xps_cap_reply) ||
	    h->len > XPS_CAP_REPLY_MAX || !h->cookie ||
	    a->cookie != h->cookie || a->reply != h->reply)
		return 0;
	a->cookie = 0;		/* one reply per arm */
	key = a->tag.key;
	key_tidy(&key);
	k = kq_slot(&kc->lq, kc->learned, sizeof(kc->learned[0]), &key);
	if (k < 0)
		return 0;	/* a hint lost */
	l = &kc->learned[k];
	l->key = key;
	l->version = a->tag.version;
	l->cgen = a->tag.cgen;
	l->len = h->len;
	memcpy(l->reply, ((const struct xps_cap_reply *)data)->b, h->len);
	return 0;
}

/*
 * Take the next entry of @q (entries of @stride bytes at @ents) into
 * @out, reading the ring when it is empty; keys skipped lately are
 * dropped.  -ENOENT when there is none now.
 */
static int kq_next(struct xps_kvcache *kc, struct kq *q, const void *ents,
		   size_t stride, void *out)
{
	int n;

	for (;;) {
		if (q->head == q->tail) {
			n = ring_buffer__consume(kc->rb);
			if (n < 0)
				return libxps_err(n);
			if (q->head == q->tail)
				return libxps_err(-ENOENT);
		}
		memcpy(out, (const char *)ents + (q->head++ % KQ_SIZE) * stride,
		       stride);
		if (!skipped_lately(kc, out))
			return 0;
	}
}

int xps_kvcache__learn_next(struct xps_kvcache *kc,
			    struct xps_kv_learned *out)
{
	if (!kc || !out)
		return libxps_err(-EINVAL);
	return kq_next(kc, &kc->lq, kc->learned, sizeof(*out), out);
}

int xps_kvcache__asked_next(struct xps_kvcache *kc, struct xps_kv_asked *a)
{
	if (!kc || !a)
		return libxps_err(-EINVAL);
	kc->asking = true;
	return kq_next(kc, &kc->aq, kc->asked, sizeof(*a), a);
}

int xps_kvcache__learn_wait(struct xps_kvcache *kc, unsigned int timeout_us)
{
	struct timespec ts = {
		.tv_sec = timeout_us / 1000000,
		.tv_nsec = (timeout_us % 1000000) * 1000L,
	};
	struct epoll_event ev;
	int fd, n;

	if (!kc)
		return libxps_err(-EINVAL);
	if (kc->lq.head != kc->lq.tail || kc->aq.head != kc->aq.tail)
		return 1;
	fd = ring_buffer__epoll_fd(kc->rb);
	n = epoll_pwait2(fd, &ev, 1, &ts, NULL);
	if (n < 0 && errno == ENOSYS)	/* before Linux 5.11: whole ms */
		n = epoll_wait(fd, &ev, 1, (timeout_us + 999) / 1000);
	if (n < 0)
		return errno == EINTR ? 0 : libxps_err(-errno);
	return n > 0;
}

int xps_kvcache__learn_commit(struct xps_kvcache *kc,
			      const struct xps_kv_learned *l,
			      struct xps_kv_value *value)
{
	if (!kc || !l || !value)
		return libxps_err(-EINVAL);
	value->version = l->version;
	value->cgen = l->cgen;
	return xps_kvcache__fill_commit(kc, &l->key, value);
}

/* ---- fills ------------------------------------------------------------ */

int xps_kvcache__fill_begin(struct xps_kvcache *kc,
			    const struct xps_kv_key *key,
			    struct xps_kv_value *value)
{
	struct xps_kv_hkey h;
	struct xps_config cfg;
	__u32 zero = 0;

	if (!kc || !key || !value)
		return libxps_err(-EINVAL);
	h = xps_kv_hkey_of(key);
	/*
	 * The stamps first, the unanswered writes second: read the other
	 * way round, a write could bump the version between the two reads
	 * and be missed by both (docs/coherence.md).
	 */
	value->cgen = __atomic_load_n(state_cgen(kc), __ATOMIC_SEQ_CST);
	/* a key never written has no entry: version 0 */
	if (bpf_map_lookup_elem(kc->versions_fd, &h, &value->version)) {
		if (errno != ENOENT)
			return libxps_err(-errno);
		value->version = 0;
	}
	if (bpf_map_lookup_elem(kc->config_fd, &zero, &cfg))
		return libxps_err(-errno);
	if (cfg.unacked_writes)
		return libxps_err(-EBUSY);	/* not logged: it is routine */
	return 0;
}

int xps_kvcache__fill_commit(struct xps_kvcache *kc,
			     const struct xps_kv_key *key,
			     struct xps_kv_value *value)
{
	struct xps_kv_hkey h;

	if (!kc || !key || !value || value->len > XPS_KV_VALUE_MAX)
		return libxps_err(-EINVAL);
	h = xps_kv_hkey_of(key);
	value->key = *key;
	/* only the kernel's write-through knows an expiry */
	value->expire_ns = 0;
	value->expire_tai_ns = 0;
	value->pending = 0;	/* a fill is the server's value */
	xps_kv_value_seal(value);	/* last: every field is set */
	if (bpf_map_update_elem(kc->data_fd, &h, value, BPF_ANY))
		return libxps_err(-errno);
	return 0;
}

/* ---- connections the handler cannot see -------------------------------- */

int xps_kvcache__unseen_conns(struct xps_kvcache *kc)
{
	struct xps_config cfg;
	__u32 zero = 0;
	__u64 now;
	int a, b;

	if (!kc)
		return libxps_err(-EINVAL);
	if (bpf_map_lookup_elem(kc->config_fd, &zero, &cfg))
		return libxps_err(-errno);
	now = now_ns();
	/* every connection since the last clean check was recorded */
	if (kc->clean_ns && cfg.unrecorded == kc->clean_unrecorded &&
	    now - kc->clean_ns < kc->recheck_ns)
		return 0;
	kc->clean_ns = 0;
	a = sockdiag_unseen(kc->conns_fd, kc->port, AF_INET);
	if (a < 0)
		return libxps_err(a);
	b = sockdiag_unseen(kc->conns_fd, kc->port, AF_INET6);
	if (b < 0)
		return libxps_err(b);
	if (!a && !b) {
		/* the count read before the walk: a failure since shows */
		kc->clean_ns = now ?: 1;
		kc->clean_unrecorded = cfg.unrecorded;
	}
	return a + b;
}
