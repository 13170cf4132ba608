/* SPDX-License-Identifier: MIT */
/*
 * status_health.h — whether the daemon a status file describes is alive: the verdict of
 * `ctxprof status`. The status file is only what the daemon said last; a daemon killed with
 * SIGKILL (or crashed, or on a host that rebooted) leaves "state=running" behind. The
 * identity the daemon wrote (pid, the pid's start time, the boot id) is compared with the
 * live system, and the file's age with its rewrite period.
 *
 * status_health_judge is pure (tests feed it any situation); status_health_probe reads
 * /proc. Never prints.
 */
#ifndef CTXPROF_STATUS_HEALTH_H
#define CTXPROF_STATUS_HEALTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "service/status_file.h" /* STATUS_BOOT_LEN, STATUS_FILE_PERIOD_MS */

/* A status file older than this many rewrite periods describes a daemon that stopped
 * rewriting it (hung, or its process is gone). */
#define STATUS_STALE_PERIODS 5

enum status_health {
        STATUS_HEALTH_RUNNING, /* alive and rewriting its file */
        STATUS_HEALTH_STOPPED, /* stopped cleanly (SIGTERM): state=stopped */
        STATUS_HEALTH_DEAD,    /* says running, but its process is gone (or the pid reused) */
        STATUS_HEALTH_STALE,   /* its process lives but has not rewritten the file for
                                  STATUS_STALE_PERIODS periods */
};

/* What the file says (the daemon record's fields). */
struct status_claim {
        int running;         /* state=running */
        pid_t pid;           /* 0 = unknown */
        uint64_t pid_start;  /* the pid's start time, clock ticks after boot; 0 = unknown */
        const char *boot_id; /* NULL or "" = unknown */
        uint64_t updated;    /* wall clock seconds of the last rewrite */
        uint64_t period_ms;  /* rewrite period; 0 = unknown (STATUS_FILE_PERIOD_MS) */
};

/* What the system says now about claim->pid. */
struct status_probe {
        int exists;                    /* a process (not a zombie) with that pid exists */
        uint64_t pid_start;            /* its start time; 0 = unknown */
        char boot_id[STATUS_BOOT_LEN]; /* "" = unknown */
        uint64_t now;                  /* wall clock seconds */
};

/* The verdict; why (may be NULL) gets one sentence for a human ("" when running). */
enum status_health status_health_judge(const struct status_claim *c, const struct status_probe *p,
                                       char *why, size_t why_len);
/* Fill *p for pid (its existence, start time), this boot's id and the time. */
void status_health_probe(pid_t pid, struct status_probe *p);
/* The start time of pid in clock ticks after boot (field 22 of /proc/PID/stat): 0, -ESRCH
 * (no such process, or a zombie) or -errno. */
int status_health_pid_start(pid_t pid, uint64_t *ticks);
/* This boot's id (/proc/sys/kernel/random/boot_id) into buf: 0 or -errno. */
int status_health_boot_id(char *buf, size_t len);
/* "running", "stopped", "dead", "stale". */
const char *status_health_name(enum status_health h);

#endif
