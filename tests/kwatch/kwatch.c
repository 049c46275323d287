// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kwatch: report inet sockets destroyed with memory still charged.
 *
 *   kwatch [-a] [-v] [-g MS]               until SIGINT/SIGTERM
 *   kwatch [-a] [-v] [-g MS] -- CMD ARGS   while CMD runs
 *
 * With a command, kwatch exits with CMD's status, or with 3 when CMD
 * succeeded but a socket was destroyed unbalanced meanwhile.  A psock is
 * freed from an RCU work item after its socket was closed, so kwatch
 * keeps watching for -g milliseconds (default 2000) after CMD exits.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>
#include "kwatch.h"
#include "kwatch.skel.h"

#define KWATCH_EXIT_UNBALANCED	3

static volatile sig_atomic_t stop_signal;
static bool verbose;

static const char *const path_names[KW_NR_PATHS] = {
	[KW_USER_SEND]		= "user_send",
	[KW_KTHREAD_SEND]	= "kthread_send",
	[KW_KTHREAD_SEND_ERR]	= "kthread_send_err",
	[KW_USER_RECV]		= "user_recv",
	[KW_RETRANSMIT]		= "retransmit",
	[KW_DATA_READY]		= "data_ready",
	[KW_WORKER_DATA_READY]	= "worker_data_ready",
	[KW_SKB_DROP]		= "skb_drop",
};

/*
 * Programs that only add detail to a record; a kernel without one of
 * these tracepoints still gets the check itself.
 */
static const char *const optional_progs[] = {
	"send_length", "recv_length", "retransmit", "data_ready",
	"skb_drop",
};

/* /proc/kallsyms, sorted, to name the frames of the stack that freed */
struct ksym {
	unsigned long addr;
	char *name;
};

static struct ksym *ksyms;
static size_t nr_ksyms;

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void ksyms_free(void)
{
	size_t i;

	for (i = 0; i < nr_ksyms; i++)
		free(ksyms[i].name);
	free(ksyms);
	ksyms = NULL;
	nr_ksyms = 0;
}

static int ksyms_load(void)
{
	size_t cap = 0;
	char name[256], type;
	unsigned long addr;
	struct ksym *grown;
	FILE *f;
	int err = 0;

	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%lx %c %255s%*[^\n]", &addr, &type, name) == 3) {
		if (type != 't' && type != 'T')
			continue;
		if (nr_ksyms == cap) {
			cap = cap ? cap * 2 : 4096;
			grown = realloc(ksyms, cap * sizeof(*ksyms));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			ksyms = grown;
		}
		ksyms[nr_ksyms].addr = addr;
		ksyms[nr_ksyms].name = strdup(name);
		if (!ksyms[nr_ksyms].name) {
			err = -ENOMEM;
			break;
		}
		nr_ksyms++;
	}
	fclose(f);
	if (err) {
		ksyms_free();
		return err;
	}
	qsort(ksyms, nr_ksyms, sizeof(*ksyms), ksym_cmp);
	return 0;
}

static const char *ksym_name(unsigned long addr)
{
	size_t lo = 0, hi = nr_ksyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? ksyms[lo - 1].name : "?";
}

/* libbpf's own chatter is only wanted with -v */
static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (level == LIBBPF_INFO && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kwatch [-a] [-v] [-g MS] [-- CMD [ARGS...]]\n"
		"  report inet sockets destroyed with memory still charged\n"
		"  (the conditions inet_sock_destruct() WARNs on once a boot)\n"
		"  -a     also report balanced inet sockets\n"
		"  -g MS  keep watching MS ms after CMD exits (default 2000)\n"
		"  -v     libbpf's messages\n"
		"  exit status: CMD's, or %d if it succeeded and a socket\n"
		"  was destroyed unbalanced\n", KWATCH_EXIT_UNBALANCED);
}

/* CLOCK_MONOTONIC of the record as wall-clock time */
static void format_time(__u64 mono_ns, char *buf, size_t len)
{
	struct timespec now_mono, now_real;
	struct tm tm;
	__s64 real_ns;
	time_t sec;

	clock_gettime(CLOCK_MONOTONIC, &now_mono);
	clock_gettime(CLOCK_REALTIME, &now_real);
	real_ns = (__s64)now_real.tv_sec * 1000000000LL + now_real.tv_nsec -
		  ((__s64)now_mono.tv_sec * 1000000000LL + now_mono.tv_nsec -
		   (__s64)mono_ns);
	sec = real_ns / 1000000000LL;
	localtime_r(&sec, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%06lld", tm.tm_hour, tm.tm_min,
		 tm.tm_sec, (long long)(real_ns % 1000000000LL) / 1000);
}

static const char *proto_name(__u16 family, __u16 proto)
{
	if (proto == IPPROTO_TCP)
		return family == AF_INET6 ? "tcp6" : "tcp";
	if (proto == IPPROTO_UDP)
		return family == AF_INET6 ? "udp6" : "udp";
	return family == AF_INET6 ? "inet6" : "inet";
}

static int handle_event(void *ctx, void *data, size_t size)
{
	const struct kwatch_event *ev = data;
	char when[32];
	int i, nr, first;

	if (size < sizeof(*ev))
		return 0;
	format_time(ev->ts_ns, when, sizeof(when));
	printf("kwatch: %s %s %s lport %u rport %u state %u cookie %llu",
	       when, ev->flags & KW_F_UNBALANCED ? "UNBALANCED" : "balanced",
	       proto_name(ev->family, ev->protocol), ev->lport, ev->rport,
	       ev->state, (unsigned long long)ev->cookie);
	if (ev->rmem_alloc)
		printf(" rmem_alloc %d", ev->rmem_alloc);
	if (ev->wmem_alloc)
		printf(" wmem_alloc %d", ev->wmem_alloc);
	if (ev->wmem_queued)
		printf(" wmem_queued %d", ev->wmem_queued);
	if (ev->forward_alloc)
		printf(" forward_alloc %d", ev->forward_alloc);
	printf(" | %s[%u] | paths:", ev->comm, ev->pid);
	for (i = 0; i < KW_NR_PATHS; i++)
		if (ev->paths[i])
			printf(" %s=%u", path_names[i], ev->paths[i]);
	if (ev->paths[KW_KTHREAD_SEND_ERR])
		printf(" (last error %d)", ev->last_send_err);
	for (i = 0; i < KW_DROP_SITES; i++)
		if (ev->drop_count[i])
			printf(" drop@%s=%u(reason %u)",
			       ksym_name(ev->drop_site[i]), ev->drop_count[i],
			       ev->drop_reason[i]);
	/* the frames above kmem_cache_free() are the tracepoint's own */
	nr = ev->nr_stack > 0 ? ev->nr_stack / 8 : 0;
	for (first = 0; first < nr; first++)
		if (!strcmp(ksym_name(ev->stack[first]), "kmem_cache_free"))
			break;
	first = first < nr ? first + 1 : 0;
	printf(" | freed by:");
	for (i = first; i < nr && i < first + 6; i++)
		printf(" %s%s", i > first ? "<- " : "", ksym_name(ev->stack[i]));
	printf("\n");
	fflush(stdout);
	return 0;
}

static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *tp)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) >= 0;
}

/* the tracepoint of a program: its section name after the '/' */
static const char *prog_target(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	const char *slash = strchr(sec, '/');

	return slash ? slash + 1 : sec;
}

static void disable_missing(struct kwatch_bpf *skel, const struct btf *vmlinux)
{
	struct bpf_program *prog;
	size_t i;

	for (i = 0; i < sizeof(optional_progs) / sizeof(optional_progs[0]); i++) {
		prog = bpf_object__find_program_by_name(skel->obj,
							optional_progs[i]);
		if (!prog || kernel_has_tracepoint(vmlinux, prog_target(prog)))
			continue;
		fprintf(stderr, "kwatch: no tracepoint %s in this kernel: not counted\n",
			prog_target(prog));
		bpf_program__set_autoload(prog, false);
	}
}

static pid_t start_command(char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* the command gets the signal dispositions kwatch started with */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "kwatch: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	struct ring_buffer *rb = NULL;
	struct kwatch_bpf *skel = NULL;
	struct btf *vmlinux = NULL;
	struct sigaction sa = {};
	bool report_all = false;
	long grace_ms = 2000;
	int cmd_status = 0, err = 0, opt;
	pid_t child = -1;
	struct timespec deadline = {};
	bool grace = false;

	while ((opt = getopt(argc, argv, "+ag:vh")) != -1) {
		switch (opt) {
		case 'a':
			report_all = true;
			break;
		case 'g':
			grace_ms = strtol(optarg, NULL, 10);
			if (grace_ms < 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}

	libbpf_set_print(print_libbpf);

	err = ksyms_load();
	if (err) {
		fprintf(stderr, "kwatch: /proc/kallsyms: %s\n", strerror(-err));
		goto cleanup;
	}

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		err = -errno;
		fprintf(stderr, "kwatch: no kernel BTF: %s\n", strerror(-err));
		goto cleanup;
	}
	skel = kwatch_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "kwatch: open: %s\n", strerror(-err));
		goto cleanup;
	}
	skel->rodata->report_all = report_all;
	disable_missing(skel, vmlinux);
	err = kwatch_bpf__load(skel);
	if (err) {
		fprintf(stderr, "kwatch: load: %s\n", strerror(-err));
		goto cleanup;
	}
	err = kwatch_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "kwatch: attach: %s\n", strerror(-err));
		goto cleanup;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), handle_event,
			      NULL, NULL);
	if (!rb) {
		err = -errno;
		fprintf(stderr, "kwatch: ring buffer: %s\n", strerror(-err));
		goto cleanup;
	}

	/* no SA_RESTART: the signal must end the poll below */
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (optind < argc) {
		fflush(stdout);
		child = start_command(argv + optind);
		if (child < 0) {
			err = -errno;
			fprintf(stderr, "kwatch: fork: %s\n", strerror(-err));
			goto cleanup;
		}
	} else {
		fprintf(stderr, "kwatch: watching, ^C to stop\n");
	}

	for (;;) {
		struct timespec now;
		int n, status;

		n = ring_buffer__poll(rb, 100);
		if (n < 0 && n != -EINTR) {
			err = n;
			fprintf(stderr, "kwatch: poll: %s\n", strerror(-err));
			break;
		}
		if (child > 0 && stop_signal) {
			/* pass it on; the command decides when it is done */
			kill(child, stop_signal);
			stop_signal = 0;
		}
		if (child < 0 && stop_signal)
			break;
		if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
			cmd_status = WIFEXITED(status) ? WEXITSTATUS(status) :
				     128 + WTERMSIG(status);
			child = 0;
			grace = true;
			clock_gettime(CLOCK_MONOTONIC, &deadline);
			deadline.tv_sec += grace_ms / 1000;
			deadline.tv_nsec += (grace_ms % 1000) * 1000000L;
			if (deadline.tv_nsec >= 1000000000L) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
		}
		if (grace) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > deadline.tv_sec ||
			    (now.tv_sec == deadline.tv_sec &&
			     now.tv_nsec >= deadline.tv_nsec))
				break;
		}
	}
	/* records submitted just before the loop ended */
	ring_buffer__consume(rb);

	if (skel->bss->nr_lost)
		fprintf(stderr, "kwatch: %llu records lost (ring buffer full)\n",
			(unsigned long long)skel->bss->nr_lost);
	if (skel->bss->nr_unbalanced) {
		fprintf(stderr, "kwatch: %llu socket(s) destroyed with memory still charged\n",
			(unsigned long long)skel->bss->nr_unbalanced);
	} else if (verbose) {
		fprintf(stderr, "kwatch: no socket destroyed unbalanced\n");
	}
	if (!err)
		err = cmd_status ? cmd_status :
		      skel->bss->nr_unbalanced ? KWATCH_EXIT_UNBALANCED : 0;
	else
		err = 1;

cleanup:
	if (child > 0) {
		/* kwatch failed under a running command: do not orphan it */
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
	ring_buffer__free(rb);
	kwatch_bpf__destroy(skel);
	btf__free(vmlinux);
	ksyms_free();
	return err < 0 ? 1 : err;
}
