// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where a service's daemon reaches its server: the address the server
 * listens on, checked by connecting once, so that a service that could
 * accelerate nothing fails with the reason instead of quietly passing
 * every request.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "out.h"
#include "service.h"

/*
 * Where the server listening on TCP @port can be reached from here:
 * "127.0.0.1:PORT" when it listens on every address, else the address it
 * is bound to (the first one found in /proc/net/tcp, then tcp6).  -1 when
 * nothing listens on the port.
 */
static int server_addr(__u32 port, char *buf, size_t n)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], addr[64], txt[INET6_ADDRSTRLEN];
	unsigned int lport, st, i, w[4];
	FILE *f;

	for (i = 0; i < 2; i++) {
		f = fopen(files[i], "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, " %*u: %63[0-9A-Fa-f]:%x %*s %x", addr,
				   &lport, &st) != 3 ||
			    lport != port || st != 0x0A /* TCP_LISTEN */)
				continue;
			fclose(f);
			if (!i) {
				struct in_addr a;

				sscanf(addr, "%8x", &w[0]);
				a.s_addr = w[0];
				if (!a.s_addr)
					snprintf(buf, n, "127.0.0.1:%u", port);
				else
					snprintf(buf, n, "%s:%u",
						 inet_ntoa(a), port);
				return 0;
			} else {
				struct in6_addr a;

				sscanf(addr, "%8x%8x%8x%8x", &w[0], &w[1],
				       &w[2], &w[3]);
				memcpy(&a, w, sizeof(a));
				if (IN6_IS_ADDR_UNSPECIFIED(&a))
					snprintf(buf, n, "127.0.0.1:%u", port);
				else
					snprintf(buf, n, "[%s]:%u",
						 inet_ntop(AF_INET6, &a, txt,
							   sizeof(txt)), port);
				return 0;
			}
		}
		fclose(f);
	}
	return -1;
}

int svc_server_reachable(const char *what, const char *option,
			 const char *given, __u32 port, char *buf, size_t n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char host[256], sport[16];
	const char *colon;
	int fd = -1, err, ok = 0;
	struct pollfd pfd;
	socklen_t len;

	if (given) {
		snprintf(buf, n, "%s", given);
	} else if (server_addr(port, buf, n)) {
		p_err("nothing listens on TCP port %u: start %s first, or give %s HOST:PORT",
		      port, what, option);
		return -1;
	}
	colon = strrchr(buf, ':');
	if (!colon || colon == buf) {
		p_err("%s: expected HOST:PORT, got '%s'", option, buf);
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - buf), buf);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	snprintf(sport, sizeof(sport), "%s", colon + 1);
	err = getaddrinfo(host, sport, &hints, &res);
	if (err) {
		p_err("%s at %s: %s", what, buf, gai_strerror(err));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (!connect(fd, res->ai_addr, res->ai_addrlen) ||
			errno == EINPROGRESS)) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		len = sizeof(err);
		err = ETIMEDOUT;
		if (poll(&pfd, 1, 2000) == 1)
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
		ok = !err;
		errno = err;
	}
	if (!ok)
		p_err("cannot reach %s at %s: %s (is it listening there? %s HOST:PORT says where)",
		      what, buf, strerror(errno), option);
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return ok ? 0 : -1;
}
