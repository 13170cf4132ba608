/* SPDX-License-Identifier: MIT */
/*
 * engine/target_jobs.h — work on a target process that can block (reading its files, its
 * /proc text and its memory, any of which a FUSE server the target's user runs can leave
 * unanswered forever) run off the sampling loop, on worker threads, each job with a deadline.
 *
 * The loop submits a job (a function and its argument, one job per target at a time: the
 * caller keeps that rule), goes on sampling, and learns of the end through an eventfd
 * (target_jobs_fd: poll it with the rings) and target_jobs_collect, which hands back every
 * finished job and every job past its deadline. A job past its deadline is *abandoned*: its
 * worker is left blocked where it is (nothing can wake a thread out of a FUSE request but
 * the server or SIGKILL), counted, and replaced by a new worker, up to TARGET_JOBS_MAX_THREADS
 * threads in all; the caller marks the job's target so that it gets no more jobs. A worker
 * that comes back from an abandoned job frees the job's argument itself (its result is
 * stale), says so through collect (TARGET_JOB_RETURNED: the caller may give the target jobs
 * again) and serves again.
 *
 * Workers are detached: target_jobs_free never waits for one, so neither does process exit
 * or SIGTERM. A job's argument must own everything the job writes (never a pointer into the
 * caller's state: an abandoned worker may return after the caller is gone). Never prints.
 *
 * Thread safety: submit, collect, wait and free are for one thread (the sampling loop).
 */
#ifndef CTXPROF_ENGINE_TARGET_JOBS_H
#define CTXPROF_ENGINE_TARGET_JOBS_H

#include <stdint.h>

#define TARGET_JOBS_WORKERS 2 /* workers not stuck that the pool keeps at most */
/* Workers in all, stuck ones included: TARGET_JOBS_MAX_THREADS / TARGET_JOBS_STUCK_PER_OWNER
 * users stalling targets at once take every one (a stuck thread costs its stack's touched
 * pages, tens of KiB). */
#define TARGET_JOBS_MAX_THREADS 64
/* Workers one owner's targets may hold stuck: once one of its jobs is stuck, a job of an
 * owner whose jobs hold that many workers (stuck or running) is not run (refused, handed back
 * like an abandoned one), so that one user's stalling targets cannot take every thread from
 * the others' (TARGET_JOBS_MAX_THREADS / this owners it takes). */
#define TARGET_JOBS_STUCK_PER_OWNER 2

struct target_jobs;

/* A job's work, run on a worker: reads the target, writes only into arg. */
typedef void (*target_job_run)(void *arg);
/* Frees arg (the job is over, delivered or abandoned). */
typedef void (*target_job_drop)(void *arg);
enum target_job_end {
        TARGET_JOB_FINISHED,  /* it returned in time: arg holds what it wrote */
        TARGET_JOB_ABANDONED, /* past its deadline: arg NULL (its worker still holds it) */
        TARGET_JOB_REFUSED,   /* not run, its owner's workers are stuck: arg NULL (dropped) */
        TARGET_JOB_RETURNED,  /* an abandoned job's worker came back (a second end for the
                               * same id): arg NULL (dropped: its result is stale) */
};
/* A job ended: arg is its argument for TARGET_JOB_FINISHED (still owned by the pool: freed
 * after this returns), else NULL. */
typedef void (*target_job_done)(void *ctx, uint64_t id, enum target_job_end end, void *arg);

struct target_jobs_stats {
        uint64_t submitted;     /* jobs started or queued */
        uint64_t completed;     /* jobs whose result was delivered */
        uint64_t abandoned;     /* jobs past their deadline: their worker left blocked */
        uint64_t refused;       /* jobs not taken: every worker stuck and no thread left */
        uint64_t refused_owner; /* jobs not run: their owner had TARGET_JOBS_STUCK_PER_OWNER
                                 * workers stuck (handed back as abandoned) */
        uint64_t stuck;         /* workers blocked in an abandoned job now */
        uint64_t returned;      /* workers back from an abandoned job */
        uint64_t threads;       /* worker threads now, stuck ones included */
};

/* A pool with no thread yet (workers start on demand). 0 or -errno. */
int target_jobs_init(struct target_jobs **out);
/* Stops idle workers; never waits for a busy or stuck one (it frees what is left when it
 * returns, if it ever does). */
void target_jobs_free(struct target_jobs *j);
/* Readable when target_jobs_collect has a finished job to hand back. */
int target_jobs_fd(const struct target_jobs *j);

/* Run run(arg) on a worker, abandoned if it has not returned deadline_ns after it started.
 * owner: who controls the target (its real uid): when the owner's targets hold
 * TARGET_JOBS_STUCK_PER_OWNER workers, one of them stuck, the job is not run and collect
 * hands it back as refused (TARGET_JOB_REFUSED; counted in refused_owner). A job id
 * (> 0), or 0 when refused (counted): then arg was dropped already. */
uint64_t target_jobs_submit(struct target_jobs *j, uint32_t owner, target_job_run run,
                            target_job_drop drop, void *arg, uint64_t deadline_ns);
/* done() for every finished job, every job past its deadline at now, every job refused for
 * its owner and every abandoned job whose worker came back; the count. */
unsigned target_jobs_collect(struct target_jobs *j, uint64_t now, target_job_done done, void *ctx);
/* Wait until job id has finished, or until the monotonic time until_ns: 1 finished (collect
 * hands it back), 0 not yet. */
int target_jobs_wait(struct target_jobs *j, uint64_t id, uint64_t until_ns);
/* The earliest deadline of a running job (monotonic ns), or UINT64_MAX. */
uint64_t target_jobs_next_deadline(struct target_jobs *j);
void target_jobs_get_stats(struct target_jobs *j, struct target_jobs_stats *out);

#endif
