/* SPDX-License-Identifier: MIT */
/*
 * service/select_jobs.h — the daemon's mode context, off its loop: whether a process
 * publishes context is read from its ELF files (through the parser helper, waiting for its
 * answer) and /proc/PID/maps by target_select_context on a target job (engine/target_jobs.h),
 * never on the loop that drains the rings. Holds the processes asked about (a new image's may
 * ask again, backing off, for SELECT_WATCH_NS: its libraries may still be loading) and runs
 * at most SELECT_JOBS_INFLIGHT jobs at once.
 *
 * Owns its job pool and its list; one thread (the daemon's loop) calls every function. Never
 * prints, never changes a target: the caller is told each answer and acts on it.
 */
#ifndef CTXPROF_SERVICE_SELECT_JOBS_H
#define CTXPROF_SERVICE_SELECT_JOBS_H

#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

#define SELECT_ASKS_MAX 1024 /* processes waiting for an answer at once */
/* Jobs queued or running, not yet collected: the workers run queued jobs back to back and
 * the loop collects many answers a wake. With 4, each answer was a round trip through the
 * loop: 1,000 busy processes on 2 CPUs were located in 40-138 s (on-loop selection before:
 * 28-60 s); with 64, in 18-31 s. A job's deadline runs from its start, not its queueing. */
#define SELECT_JOBS_INFLIGHT 64
#define SELECT_WATCH_NS      3000000000ull /* a new image: 3 s to publish */

struct select_jobs;

struct select_jobs_stats {
        uint64_t examined;          /* jobs that answered */
        uint64_t selected;          /* answers "publishes context" */
        uint64_t full;              /* asks refused: SELECT_ASKS_MAX processes waiting */
        uint64_t abandoned;         /* jobs past their deadline, or refused for their owner's stuck
                                     * jobs (engine/target_jobs.h): the process is left unselected */
        struct target_stats target; /* what the jobs' reads refused */
};

/* Told the end of an ask: publishes 1 (sample it) or 0 (it does not publish, or it is gone,
 * or its window passed). Not told for an ask whose job was abandoned. */
typedef void (*select_jobs_answer)(void *ctx, pid_t pid, int publishes);

/* 0 or -errno. */
int select_jobs_new(struct select_jobs **out);
void select_jobs_free(struct select_jobs *q);
/* Readable when a job has finished (poll it with the rings). */
int select_jobs_fd(const struct select_jobs *q);

/* Ask whether pid publishes context. watch: keep asking (backing off) until it does or
 * SELECT_WATCH_NS have passed (an exec), else one answer (a running process). An ask for a
 * pid already waiting starts its window again. 0, or -ENOSPC (full: counted). */
int select_jobs_ask(struct select_jobs *q, pid_t pid, int watch, uint64_t now);
/* How many more asks fit now. */
unsigned select_jobs_room(const struct select_jobs *q);
/* Forget every ask (a reload): the jobs in flight end unheard. */
void select_jobs_clear(struct select_jobs *q);
/* answer() for every ask that ended, then starts the jobs due. */
void select_jobs_poll(struct select_jobs *q, uint64_t now, select_jobs_answer answer, void *ctx);
/* When select_jobs_poll is due next (UINT64_MAX: nothing to do until the fd says so). */
uint64_t select_jobs_next_due(const struct select_jobs *q);
void select_jobs_get_stats(const struct select_jobs *q, struct select_jobs_stats *out);

#endif
