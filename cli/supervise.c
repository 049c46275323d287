// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process supervision of service daemons: start, pid, state, stop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "out.h"
#include "supervise.h"

void supervise_path(char *buf, size_t sz, const char *name, const char *ext)
{
	snprintf(buf, sz, SUPERVISE_RUN_DIR "/%s.%s", name, ext);
}

pid_t supervise_pid(const char *name)
{
	char path[PATH_MAX];
	FILE *f;
	long pid = 0;

	supervise_path(path, sizeof(path), name, "pid");
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid > 0 && !kill(pid, 0) ? (pid_t)pid : 0;
}

pid_t supervise_start(const char *name, char *const argv[])
{
	char log[PATH_MAX], pidf[PATH_MAX];
	int fd, st, pfd[2];
	pid_t pid, child;
	FILE *f;

	if (mkdir(SUPERVISE_RUN_DIR, 0755) && errno != EEXIST) {
		p_err("cannot create " SUPERVISE_RUN_DIR ": %s", strerror(errno));
		return -1;
	}
	supervise_path(log, sizeof(log), name, "log");
	supervise_path(pidf, sizeof(pidf), name, "pid");
	if (pipe(pfd))
		return -1;
	child = fork();
	if (child < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (!child) {
		/* double fork: the daemon is not our child */
		close(pfd[0]);
		if (setsid() < 0 || (pid = fork()) < 0)
			_exit(1);
		if (pid) {
			if (write(pfd[1], &pid, sizeof(pid)) != sizeof(pid))
				_exit(1);
			_exit(0);
		}
		close(pfd[1]);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		/*
		 * Nothing else of the caller's: a daemon that kept its fds
		 * would hold its locks (flock(1)) and keep its pipes from
		 * ever reaching EOF for as long as the service runs.
		 */
		if (close_range(3, ~0u, 0))
			for (fd = 3; fd < sysconf(_SC_OPEN_MAX); fd++)
				close(fd);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	if (read(pfd[0], &pid, sizeof(pid)) != sizeof(pid))
		pid = -1;
	close(pfd[0]);
	/* the intermediate child only, not any other child of the caller */
	waitpid(child, &st, 0);
	if (pid > 0) {
		f = fopen(pidf, "w");
		if (f) {
			fprintf(f, "%d\n", pid);
			fclose(f);
		}
	}
	return pid;
}

int supervise_check(char *const argv[])
{
	char msg[512] = "";
	int pfd[2], st = 0;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (!pid) {
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		dup2(pfd[1], STDOUT_FILENO);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	while (got < (ssize_t)sizeof(msg) - 1 &&
	       (n = read(pfd[0], msg + got, sizeof(msg) - 1 - got)) > 0)
		got += n;
	close(pfd[0]);
	msg[got] = '\0';
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		/* the last line says why (earlier ones are log lines) */
		while (got > 0 && msg[got - 1] == '\n')
			msg[--got] = '\0';
		p_err("%s", strrchr(msg, '\n') ? strrchr(msg, '\n') + 1 :
			    msg[0] ? msg : "the check failed");
		return -1;
	}
	return 0;
}

void supervise_stop(const char *name)
{
	char path[PATH_MAX];
	pid_t pid;
	int i;

	pid = supervise_pid(name);
	if (pid > 0) {
		kill(pid, SIGTERM);
		for (i = 0; i < 50 && !kill(pid, 0); i++)
			usleep(100000);
		if (!kill(pid, 0))
			kill(pid, SIGKILL);
	}
	supervise_path(path, sizeof(path), name, "pid");
	unlink(path);
}

void supervise_state(const char *name, pid_t pid, char *buf, size_t n)
{
	char path[PATH_MAX], line[400] = "";
	FILE *f;

	supervise_path(path, sizeof(path), name, "state");
	f = fopen(path, "r");
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
	}
	if (pid <= 0)
		snprintf(buf, n, "dead: the daemon is not running%s%s",
			 line[0] ? "; it last said: " : "", line);
	else
		snprintf(buf, n, "%s", line[0] ? line : "starting");
}
