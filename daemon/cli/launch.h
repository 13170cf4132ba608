/* SPDX-License-Identifier: MIT */
/*
 * launch.h — `record -- COMMAND`: starts COMMAND so that the sampler sees its first
 * instruction. fork() at once, but the child waits on a socketpair until the sampler is
 * ready, then stops itself under ptrace at its exec (so the TLS of the new image can be
 * located before main runs), and runs only once the output is open. Every step can be
 * interrupted by SIGINT/SIGTERM (the caller's stop flag); a command that never ran is
 * killed, one that ran is sent SIGTERM when the recording ends first. Prints its own
 * errors (it is part of the CLI); never exits the process except in the child.
 */
#ifndef CTXPROF_LAUNCH_H
#define CTXPROF_LAUNCH_H

#include <signal.h>
#include <sys/types.h>

struct launch {
        pid_t pid;   /* the command, or -1 (none started) */
        int sync_fd; /* parent's end of the socketpair until the child is released, or -1 */
        int traced;  /* stopped under ptrace at its exec, not yet running */
        int done;    /* reaped: status is valid */
        int status;  /* its wait status once done */
};

/* Fork the child for argv (argv[0] looked up in PATH). It restores orig_int / orig_term (what
 * ctxprof inherited) and waits for launch_exec. 0, or -1 (printed). */
int launch_fork(struct launch *l, char **argv, const struct sigaction *orig_int,
                const struct sigaction *orig_term);
/* Let the child exec and wait until it stopped at the exec (signals that reach it before
 * are passed on). 0: stopped, l->pid can be added as a target; -1: it could not run (or
 * *stop was set: then nothing is printed). */
int launch_exec(struct launch *l, char *const *argv, volatile sig_atomic_t *stop);
/* Let the stopped command run. 0 or -1 (printed). */
int launch_run(struct launch *l, char *const *argv);
/* 1 if the command has ended (reaped, without blocking), else 0. */
int launch_ended(struct launch *l);
/* The recording is over: a command that never ran is killed, one still running gets
 * SIGTERM; both reaped. Closes the socketpair (an unreleased child sees EOF and exits). */
void launch_end(struct launch *l);
/* The command's own result for ctxprof's exit status (as time(1) or perf stat): its exit
 * status, or 128+N when signal N killed it. */
int launch_exit_status(const struct launch *l);

#endif
