/* SPDX-License-Identifier: MIT */
/*
 * service/select_jobs.c — mode context's asks, answered on target jobs (select_jobs.h).
 * Owns the asks' list and the job pool. Must never read a process's files or maps on the
 * caller's thread (only target_select_context, on a job, does), run more than
 * SELECT_JOBS_INFLIGHT jobs, nor let a job write anything but its own argument.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/procs.h"
#include "engine/target_jobs.h"
#include "service/select_jobs.h"
#include "service/target_select.h"
#include "util/clock.h"
#include "util/parser_client.h"

/* One job: the helper's wait for a busy lane and its own deadline for each file it parses,
 * with room for a process mapping several files never seen (each one a request). Past it the
 * job is abandoned: a maps read stalled by the target (its mmap lock held). */
#define SELECT_JOB_DEADLINE_NS (4ull * (PARSER_JOB_WAIT_MS + PARSER_SELF_DEADLINE_MS) * NS_PER_MS)
#define SELECT_FIRST_RETRY_NS  20000000ull /* 20 ms: then half the time since the ask */
#define SELECT_BUSY_RETRY_NS   50000000ull /* the helper was busy: soon, not at once */

struct ask {
        pid_t pid;
        int watch;         /* an exec: asked again until SELECT_WATCH_NS */
        uint64_t first_ns; /* asked (or asked again) */
        uint64_t next_ns;  /* when its next job may start (when job is 0) */
        uint64_t job;      /* the job in flight, 0 when none */
};

/* A job's argument: everything it writes (engine/target_jobs.h: it may outlive the list). */
struct select_job {
        pid_t pid;
        int verdict; /* target_select_context's */
        struct target_stats st;
};

struct select_jobs {
        struct target_jobs *pool;
        struct ask ask[SELECT_ASKS_MAX];
        unsigned nask, inflight;
        struct select_jobs_stats st;
        /* select_jobs_poll's, for the pool's callback */
        select_jobs_answer answer;
        void *answer_ctx;
};

int select_jobs_new(struct select_jobs **out)
{
        struct select_jobs *q = calloc(1, sizeof(*q));
        int err;

        if (!q)
                return -ENOMEM;
        err = target_jobs_init(&q->pool);
        if (err) {
                free(q);
                return err;
        }
        *out = q;
        return 0;
}

void select_jobs_free(struct select_jobs *q)
{
        if (!q)
                return;
        target_jobs_free(q->pool);
        free(q);
}

int select_jobs_fd(const struct select_jobs *q)
{
        return target_jobs_fd(q->pool);
}

static struct ask *find_pid(struct select_jobs *q, pid_t pid)
{
        for (unsigned i = 0; i < q->nask; i++)
                if (q->ask[i].pid == pid)
                        return &q->ask[i];
        return NULL;
}

static struct ask *find_job(struct select_jobs *q, uint64_t job)
{
        for (unsigned i = 0; i < q->nask; i++)
                if (q->ask[i].job == job)
                        return &q->ask[i];
        return NULL;
}

static void forget(struct select_jobs *q, struct ask *a)
{
        *a = q->ask[--q->nask];
}

int select_jobs_ask(struct select_jobs *q, pid_t pid, int watch, uint64_t now)
{
        struct ask *a = find_pid(q, pid);

        if (a) {
                a->watch |= watch;
                a->first_ns = now;
                if (!a->job)
                        a->next_ns = now;
                return 0;
        }
        if (q->nask == SELECT_ASKS_MAX) {
                q->st.full++;
                return -ENOSPC;
        }
        q->ask[q->nask++] = (struct ask){pid, watch, now, now, 0};
        return 0;
}

unsigned select_jobs_room(const struct select_jobs *q)
{
        return SELECT_ASKS_MAX - q->nask;
}

void select_jobs_clear(struct select_jobs *q)
{
        q->nask = 0; /* the jobs in flight are still counted until collected */
}

static void job_run(void *arg)
{
        struct select_job *j = arg;

        j->verdict = target_select_context(j->pid, &j->st);
}

/* An answer for a: the ask ends (told) or waits for its next job. */
static void answered(struct select_jobs *q, struct ask *a, int verdict, uint64_t now)
{
        pid_t pid = a->pid;

        q->st.examined++;
        if (verdict == 1) {
                q->st.selected++;
        } else if ((verdict == TARGET_SELECT_BUSY ||
                    (verdict == TARGET_SELECT_LATER && a->watch)) &&
                   now - a->first_ns <= SELECT_WATCH_NS) {
                a->next_ns = now + (verdict == TARGET_SELECT_BUSY
                                        ? SELECT_BUSY_RETRY_NS
                                        : (now - a->first_ns) / 2 + SELECT_FIRST_RETRY_NS);
                return;
        }
        forget(q, a);
        q->answer(q->answer_ctx, pid, verdict == 1);
}

static void job_done(void *ctx, uint64_t id, enum target_job_end end, void *arg)
{
        struct select_jobs *q = ctx;
        struct ask *a;

        if (end == TARGET_JOB_RETURNED)
                return; /* a second end for an abandoned job: counted then */
        q->inflight--;
        if (end == TARGET_JOB_FINISHED)
                target_stats_add(&q->st.target, &((struct select_job *)arg)->st);
        else
                q->st.abandoned++;
        a = find_job(q, id);
        if (!a)
                return; /* forgotten (a reload) */
        a->job = 0;
        if (end == TARGET_JOB_FINISHED)
                answered(q, a, ((struct select_job *)arg)->verdict, mono_ns());
        else
                forget(q, a); /* a target that stalls its reader: not selected */
}

static void start(struct select_jobs *q, struct ask *a)
{
        struct select_job *j = calloc(1, sizeof(*j));

        if (!j) {
                a->next_ns = mono_ns() + SELECT_BUSY_RETRY_NS;
                return;
        }
        j->pid = a->pid;
        a->job = target_jobs_submit(q->pool, procs_read_owner(a->pid), job_run, free, j,
                                    SELECT_JOB_DEADLINE_NS);
        if (a->job) {
                q->inflight++;
                return;
        }
        q->st.abandoned++; /* refused: every worker stuck */
        forget(q, a);
}

void select_jobs_poll(struct select_jobs *q, uint64_t now, select_jobs_answer answer, void *ctx)
{
        q->answer = answer;
        q->answer_ctx = ctx;
        target_jobs_collect(q->pool, now, job_done, q);
        for (unsigned i = 0; i < q->nask && q->inflight < SELECT_JOBS_INFLIGHT;) {
                struct ask *a = &q->ask[i];
                unsigned n = q->nask;

                if (!a->job && a->next_ns <= now)
                        start(q, a);
                if (q->nask == n)
                        i++; /* else a was forgotten: the last ask took its place */
        }
}

uint64_t select_jobs_next_due(const struct select_jobs *q)
{
        uint64_t due = target_jobs_next_deadline(q->pool);

        if (q->inflight >= SELECT_JOBS_INFLIGHT)
                return due; /* the fd says when one ends */
        for (unsigned i = 0; i < q->nask; i++)
                if (!q->ask[i].job && q->ask[i].next_ns < due)
                        due = q->ask[i].next_ns;
        return due;
}

void select_jobs_get_stats(const struct select_jobs *q, struct select_jobs_stats *out)
{
        *out = q->st;
}
