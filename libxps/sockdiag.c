// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Established TCP connections XPS never saw, found with sock_diag: the
 * kv-cache's check (xps_kvcache__unseen_conns()) that every connection
 * to its service is one whose writes the handler sees.
 */
#include <stdlib.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <bpf/bpf.h>

#include "internal.h"

/* Cookies of sockets, collected by a dump (a growing array). */
struct cookie_set {
	int conns_fd;		/* the framework's xps_conns */
	__u64 *v;		/* cookies are never 0: 0 is a used slot */
	size_t n, cap;
	int found;		/* the second dump's matches */
};

/*
 * Call @cb for the cookie of each established TCP socket of @family on
 * @port, from one sock_diag dump.  0 or -errno (from the dump or @cb).
 */
static int diag_established(__u16 port, int family,
			    int (*cb)(__u64 cookie, struct cookie_set *set),
			    struct cookie_set *set)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg = {
		.nlh = { .nlmsg_len = sizeof(msg),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.req = { .sdiag_family = family, .sdiag_protocol = IPPROTO_TCP,
			 .idiag_states = 1 << 1 /* TCP_ESTABLISHED */ },
	};
	char buf[16384];
	int fd, done = 0, err = 0;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (send(fd, &msg, sizeof(msg), 0) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!done && !err && (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		struct nlmsghdr *h;

		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			struct inet_diag_msg *m = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_DONE ||
			    h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (ntohs(m->id.idiag_sport) != port)
				continue;
			err = cb((__u64)m->id.idiag_cookie[1] << 32 |
				     m->id.idiag_cookie[0], set);
			if (err)
				break;
		}
	}
	close(fd);
	return err;
}

/* First dump: keep the cookies XPS has no record of. */
static int collect_unrecorded(__u64 cookie, struct cookie_set *set)
{
	struct xps_conn conn;
	__u64 *v;

	if (!bpf_map_lookup_elem(set->conns_fd, &cookie, &conn))
		return 0;
	if (set->n == set->cap) {
		set->cap = set->cap ? 2 * set->cap : 64;
		v = realloc(set->v, set->cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		set->v = v;
	}
	set->v[set->n++] = cookie;
	return 0;
}

/* Second dump: count the kept cookies still established, once each. */
static int mark_still_established(__u64 cookie, struct cookie_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++) {
		if (set->v[i] == cookie) {
			set->v[i] = 0;
			set->found++;
			break;
		}
	}
	return 0;
}

/*
 * Established TCP sockets of @family on @port that XPS has no record of
 * in @conns_fd (the framework's xps_conns), or -errno.
 *
 * XPS records a connection (xps_sockops()) before it is established and
 * forgets it when it closes, so a socket the dump lists as established
 * and the map does not hold may only have closed in between: a client
 * that just hung up is not a connection XPS missed.  A second dump tells
 * them apart.  A socket established at both dumps was established at the
 * lookup between them, so its record, had it one, was there.
 */
int sockdiag_unseen(int conns_fd, __u16 port, int family)
{
	struct cookie_set set = { .conns_fd = conns_fd };
	int err;

	err = diag_established(port, family, collect_unrecorded, &set);
	if (!err && set.n)
		err = diag_established(port, family, mark_still_established,
				       &set);
	free(set.v);
	return err ? err : set.found;
}
