/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Supervision of the daemons of xpsctl's services: a daemon runs detached
 * (not xpsctl's child), with its pid, log and state in
 * SUPERVISE_RUN_DIR/NAME.{pid,log,state}, NAME being its service's.
 * The daemon writes the state file itself; everything else is here.
 */
#ifndef __XPSCTL_SUPERVISE_H
#define __XPSCTL_SUPERVISE_H

#include <stddef.h>
#include <sys/types.h>

#define SUPERVISE_RUN_DIR "/run/xps"

/* SUPERVISE_RUN_DIR/NAME.EXT */
void supervise_path(char *buf, size_t sz, const char *name, const char *ext);
/*
 * Run "@argv" once and wait for it: 0 when it exits 0, else -1 with its
 * last line of output reported as the error.  For a daemon's --check.
 */
int supervise_check(char *const argv[]);
/* Start @argv detached for service @name; its pid, or -1. */
pid_t supervise_start(const char *name, char *const argv[]);
/* The pid of @name's daemon while it runs, else 0. */
pid_t supervise_pid(const char *name);
/* SIGTERM @name's daemon, SIGKILL it after 5 s; remove its pid file. */
void supervise_stop(const char *name);
/*
 * What the daemon last said of its service (running, degraded: WHY,
 * restarting: WHY), "starting" before it says anything, and "dead: ..."
 * when @pid is 0: the daemon is gone.
 */
void supervise_state(const char *name, pid_t pid, char *buf, size_t n);

#endif
