/* SPDX-License-Identifier: MIT */
/*
 * parser_spawner.h — the process that starts parser helpers (a zygote), so that the daemon
 * keeps no privilege for their restarts. parser_spawner_start forks it during setup, before
 * the caller drops its capabilities: it keeps only CAP_SETUID, CAP_SETGID and CAP_SETPCAP
 * (what a helper needs to give up root, service/parser_confine.c), no descriptor but its end
 * of a SOCK_SEQPACKET socketpair and the standard streams, every signal but SIGKILL blocked,
 * and PR_SET_PDEATHSIG(SIGKILL). It serves one request at a time from the caller, never from
 * a target: clone(CLONE_PARENT) + exec of /proc/self/exe in PARSER_MODE with a new
 * socketpair's end as its descriptor 3, an empty environment and an empty signal mask. The
 * helper is thus the caller's child (reaped, and its exit status read, by the caller as
 * before), and the caller's end of the helper's socket comes back with its pid. The spawner
 * ends when the caller closes its socket (or dies). Never prints.
 */
#ifndef CTXPROF_PARSER_SPAWNER_H
#define CTXPROF_PARSER_SPAWNER_H

#include <sys/types.h>

struct parser_spawner;

/* Forks the spawner (in the caller's setup, while it still holds CAP_SETUID, CAP_SETGID and
 * CAP_SETPCAP: root). 0 or -errno. */
int parser_spawner_start(struct parser_spawner **out);
/* A helper started by the spawner: argv {tag, PARSER_MODE, "3", user}. *pid (the caller's
 * child) and *sock (the caller's end, close-on-exec) on success; 0, -ETIMEDOUT (no answer in
 * deadline_ms), -EPIPE (the spawner is gone: no helper can start any more), or the spawner's
 * -errno (socketpair, clone). Any thread; requests are serialized. */
int parser_spawner_spawn(struct parser_spawner *sp, const char *user, const char *tag,
                         int deadline_ms, pid_t *pid, int *sock);
/* The wait status of a child of the caller that should end now (a helper that did not say
 * READY, its socket closed; the spawner): reaped within 200 ms, else sent SIGKILL and reaped
 * within as much again; 0 when it did not end even then. */
int parser_reap_child(pid_t pid);

/* Children of the caller (helpers) not reaped in time, reaped once they end (0: a free slot);
 * one that finds the list full stays a zombie until the caller exits. */
#define PARSER_LATE_MAX 8
struct parser_late {
        pid_t pid[PARSER_LATE_MAX];
};
void parser_late_add(struct parser_late *l, pid_t pid);
/* Reaps those that ended (WNOHANG) and frees their slots. */
void parser_late_reap(struct parser_late *l);
/* Closes the spawner's socket (it exits), reaps it and frees sp. NULL is a no-op. */
void parser_spawner_stop(struct parser_spawner *sp);

#endif
