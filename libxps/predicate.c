// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Predicates: which flows a context takes.  A predicate from a listening
 * socket, its key in the framework's xps_preds, the sorted masks the data
 * path tries in turn, and which two predicates conflict.
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/bpf.h>

#include "internal.h"

static void v4_mapped(__u8 *dst, const void *v4)
{
	memset(dst, 0, 10);
	dst[10] = 0xff;
	dst[11] = 0xff;
	memcpy(dst + 12, v4, 4);
}

int xps_predicate__from_socket(int sock, struct xps_predicate *pred)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int proto, type, v6only = 0;
	socklen_t olen = sizeof(int);
	static const __u8 zero[16];

	memset(pred, 0, sizeof(*pred));
	if (getsockname(sock, (struct sockaddr *)&ss, &len))
		return libxps_err(-errno);
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &olen))
		return libxps_err(-errno);
	olen = sizeof(int);
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &proto, &olen))
		return libxps_err(-errno);
	if ((type != SOCK_STREAM || proto != IPPROTO_TCP) &&
	    (type != SOCK_DGRAM || proto != IPPROTO_UDP)) {
		pr_warn("socket %d is neither TCP nor UDP\n", sock);
		return libxps_err(-EPROTONOSUPPORT);
	}
	pred->proto = proto;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		pred->family = AF_INET;
		pred->lport = ntohs(sin->sin_port);
		if (sin->sin_addr.s_addr != htonl(INADDR_ANY)) {
			pred->has_laddr = true;
			v4_mapped(pred->laddr, &sin->sin_addr);
		}
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		pred->lport = ntohs(sin6->sin6_port);
		olen = sizeof(int);
		getsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &olen);
		if (!memcmp(&sin6->sin6_addr, zero, 16)) {
			/* [::] takes IPv4 too unless IPV6_V6ONLY */
			pred->family = v6only ? AF_INET6 : AF_UNSPEC;
		} else {
			pred->has_laddr = true;
			memcpy(pred->laddr, &sin6->sin6_addr, 16);
			pred->family = IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) ?
				       AF_INET : AF_INET6;
		}
	} else {
		pr_warn("socket %d is not an IPv4 or IPv6 socket\n", sock);
		return libxps_err(-EAFNOSUPPORT);
	}
	if (!pred->lport) {
		pr_warn("socket %d is not bound to a port\n", sock);
		return libxps_err(-EINVAL);
	}
	return 0;
}

void pred_to_key(const struct xps_predicate *p, struct xps_pred_key *k)
{
	memset(k, 0, sizeof(*k));
	k->proto = p->proto;
	k->lport = p->lport;
	if (p->lport)
		k->mask = XPS_PRED_LPORT;
	if (p->family) {
		k->mask |= XPS_PRED_FAMILY;
		k->family = p->family;
	}
	if (p->has_laddr) {
		k->mask |= XPS_PRED_LADDR;
		memcpy(k->laddr, p->laddr, 16);
	}
	if (p->has_raddr) {
		k->mask |= XPS_PRED_RADDR;
		memcpy(k->raddr, p->raddr, 16);
	}
	if (p->rport) {
		k->mask |= XPS_PRED_RPORT;
		k->rport = p->rport;
	}
}

static int popcount8(__u8 v)
{
	return __builtin_popcount(v);
}

static int mask_cmp(const void *a, const void *b)
{
	__u8 x = *(const __u8 *)a, y = *(const __u8 *)b;

	/* more fields first; among equals, the higher mask value first */
	if (popcount8(x) != popcount8(y))
		return popcount8(y) - popcount8(x);
	return (int)y - (int)x;
}

/* Rebuild the sorted list of masks in use for @proto. */
int masks_sync(struct xps_fw *fw, __u8 proto)
{
	struct xps_pred_masks pm = {};
	struct xps_ctx_info info;
	__u32 slot, i, idx = proto == IPPROTO_UDP;
	bool seen[XPS_PRED_NMASKS] = {};

	for (slot = 0; slot < XPS_MAX_SLOTS; slot++) {
		if (bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) ||
		    !info.flags || (info.flags & XPS_SLOT_SUB) ||
		    info.pred.proto != proto)
			continue;
		seen[info.pred.mask & (XPS_PRED_NMASKS - 1)] = true;
	}
	for (i = 0; i < XPS_PRED_NMASKS; i++)
		if (seen[i])
			pm.masks[pm.count++] = i;
	qsort(pm.masks, pm.count, 1, mask_cmp);
	if (bpf_map_update_elem(fw->masks, &idx, &pm, BPF_ANY))
		return -errno;
	return 0;
}

static bool addr_overlap(const struct xps_pred_key *a,
			 const struct xps_pred_key *b, __u8 bit,
			 const __u8 *aa, const __u8 *ba)
{
	if (!(a->mask & bit) || !(b->mask & bit))
		return true;
	return !memcmp(aa, ba, 16);
}

/* Two predicates of the same specificity that can match the same flow. */
bool pred_conflict(const struct xps_pred_key *a,
			  const struct xps_pred_key *b)
{
	if (a->proto != b->proto || a->lport != b->lport)
		return false;
	if ((a->mask & XPS_PRED_FAMILY) && (b->mask & XPS_PRED_FAMILY) &&
	    a->family != b->family)
		return false;
	if (!addr_overlap(a, b, XPS_PRED_LADDR, a->laddr, b->laddr))
		return false;
	if ((a->mask & XPS_PRED_RADDR) != (b->mask & XPS_PRED_RADDR) ||
	    (a->mask & XPS_PRED_RPORT) != (b->mask & XPS_PRED_RPORT))
		return false;	/* a more specific one wins: no conflict */
	if (!addr_overlap(a, b, XPS_PRED_RADDR, a->raddr, b->raddr))
		return false;
	return a->rport == b->rport;
}

LIBXPS_ALIAS(xps_predicate_from_socket, xps_predicate__from_socket);
