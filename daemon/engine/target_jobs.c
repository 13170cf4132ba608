/* SPDX-License-Identifier: MIT */
/*
 * engine/target_jobs.c — the worker pool that runs blocking work on targets with deadlines
 * (see target_jobs.h). Owns its threads, its queue and its eventfd. Must never join a
 * worker, never wait on a job but in target_jobs_wait (bounded), never print.
 *
 * Lifetime: the pool is shared by the loop and its workers and freed by whoever lets go
 * last (refs: the loop's one, one per thread), so a worker that a FUSE server lets go after
 * the daemon stopped sampling still finds the pool to free its job in.
 */
#include "engine/target_jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

#define NS_PER_S 1000000000ull

struct job {
        uint64_t id;
        target_job_run run;
        target_job_drop drop;
        void *arg;
        uint64_t deadline_ns; /* how long it may run */
        uint64_t started_ns;  /* 0 = queued */
        int abandoned;        /* the loop gave up on it: the worker drops it */
        int owner_refused;    /* not run: its owner's workers are stuck (handed back as
                               * refused, dropped by collect) */
        int returned;         /* abandoned, then its worker came back (arg dropped already;
                               * handed back as returned) */
        uint32_t owner;       /* who controls the target (target_jobs_submit) */
        struct job *next;
};

struct target_jobs {
        pthread_mutex_t lock;
        pthread_cond_t work; /* a job was queued, or stop */
        pthread_cond_t done; /* a job finished */
        struct job *queue, **queue_tail;
        struct job *running; /* started, not finished (abandoned ones too) */
        struct job *finished;
        unsigned idle; /* workers waiting for a job */
        unsigned refs; /* the loop's (until target_jobs_free) + one per thread */
        int stop;
        int efd;
        uint64_t next_id;
        struct target_jobs_stats st;
};

static void drop_job(struct job *jb)
{
        if (jb->drop)
                jb->drop(jb->arg);
        free(jb);
}

/* Lock held. Frees the pool when nobody else holds it (then unlocks it, gone). 1 = freed. */
static int unref_locked(struct target_jobs *j)
{
        if (--j->refs)
                return 0;
        pthread_mutex_unlock(&j->lock);
        while (j->queue) {
                struct job *jb = j->queue;

                j->queue = jb->next;
                drop_job(jb);
        }
        while (j->finished) {
                struct job *jb = j->finished;

                j->finished = jb->next;
                drop_job(jb);
        }
        close(j->efd);
        pthread_cond_destroy(&j->work);
        pthread_cond_destroy(&j->done);
        pthread_mutex_destroy(&j->lock);
        free(j);
        return 1;
}

static void unlink_running(struct target_jobs *j, struct job *jb)
{
        for (struct job **pp = &j->running; *pp; pp = &(*pp)->next)
                if (*pp == jb) {
                        *pp = jb->next;
                        return;
                }
}

/* Lock held: whether owner's jobs may not take another worker: one of them is stuck, and
 * they hold TARGET_JOBS_STUCK_PER_OWNER workers (stuck, or running and perhaps about to be:
 * counting only the stuck ones let a third job start while the second had not yet passed
 * its deadline). */
static int owner_full_locked(const struct target_jobs *j, uint32_t owner)
{
        unsigned stuck = 0, held = 0;

        for (const struct job *jb = j->running; jb; jb = jb->next)
                if (jb->owner == owner) {
                        held++;
                        stuck += jb->abandoned;
                }
        return stuck && held >= TARGET_JOBS_STUCK_PER_OWNER;
}

/* Lock held: jb goes back to the loop (target_jobs_collect, target_jobs_wait). */
static void deliver_locked(struct target_jobs *j, struct job *jb)
{
        uint64_t one = 1;

        jb->next = j->finished;
        j->finished = jb;
        pthread_cond_broadcast(&j->done);
        if (write(j->efd, &one, sizeof(one)) < 0) {
                /* the counter is far from overflowing; nothing else can fail here */
        }
}

/* Lock held: a job not run is handed back (refused for its owner). */
static void hand_back_locked(struct target_jobs *j, struct job *jb)
{
        jb->owner_refused = 1;
        j->st.refused_owner++;
        deliver_locked(j, jb);
}

/* Lock held: the job the worker just finished goes back to the loop: its result, or (an
 * abandoned one) only the news that its worker is back, its result dropped (stale). */
static void finish_locked(struct target_jobs *j, struct job *jb)
{
        unlink_running(j, jb);
        if (jb->abandoned) {
                j->st.stuck--;
                j->st.returned++;
                if (jb->drop)
                        jb->drop(jb->arg);
                jb->drop = NULL;
                jb->arg = NULL;
                jb->returned = 1;
        }
        deliver_locked(j, jb);
}

static void *worker(void *arg)
{
        struct target_jobs *j = arg;

        pthread_mutex_lock(&j->lock);
        for (;;) {
                struct job *jb;

                while (!j->queue && !j->stop) {
                        j->idle++;
                        pthread_cond_wait(&j->work, &j->lock);
                        j->idle--;
                }
                if (j->stop)
                        break;
                jb = j->queue;
                j->queue = jb->next;
                if (!j->queue)
                        j->queue_tail = &j->queue;
                /* queued before its owner's other jobs got stuck */
                if (owner_full_locked(j, jb->owner)) {
                        hand_back_locked(j, jb);
                        continue;
                }
                jb->started_ns = mono_ns();
                jb->next = j->running;
                j->running = jb;
                pthread_mutex_unlock(&j->lock);
                jb->run(jb->arg); /* may block forever: the loop abandons it then */
                pthread_mutex_lock(&j->lock);
                finish_locked(j, jb);
                /* one stuck worker came back: the pool may hold one thread more than it needs */
                if (j->st.threads - j->st.stuck > TARGET_JOBS_WORKERS)
                        break;
        }
        j->st.threads--;
        if (!unref_locked(j))
                pthread_mutex_unlock(&j->lock);
        return NULL;
}

/* Lock held: a new worker when the queue has a job no idle worker will take. 0 or -errno. */
static int grow_locked(struct target_jobs *j)
{
        pthread_attr_t attr;
        pthread_t t;
        int err;

        unsigned live = (unsigned)(j->st.threads - j->st.stuck);

        if (j->idle || live >= TARGET_JOBS_WORKERS)
                return 0; /* a worker takes it when it is free */
        if (j->st.threads >= TARGET_JOBS_MAX_THREADS)
                return live ? 0 : -EAGAIN; /* every thread stuck: nothing would run it */
        if (pthread_attr_init(&attr))
                return -ENOMEM;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        err = pthread_create(&t, &attr, worker, j);
        pthread_attr_destroy(&attr);
        if (err)
                return live ? 0 : -err;
        j->st.threads++;
        j->refs++;
        return 0;
}

int target_jobs_init(struct target_jobs **out)
{
        struct target_jobs *j = calloc(1, sizeof(*j));

        if (!j)
                return -ENOMEM;
        j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (j->efd < 0) {
                int e = errno;

                free(j);
                return -e;
        }
        pthread_mutex_init(&j->lock, NULL);
        pthread_cond_init(&j->work, NULL);
        {
                pthread_condattr_t ca;

                pthread_condattr_init(&ca);
                pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
                pthread_cond_init(&j->done, &ca);
                pthread_condattr_destroy(&ca);
        }
        j->queue_tail = &j->queue;
        j->refs = 1;
        j->next_id = 1;
        *out = j;
        return 0;
}

void target_jobs_free(struct target_jobs *j)
{
        if (!j)
                return;
        pthread_mutex_lock(&j->lock);
        j->stop = 1;
        pthread_cond_broadcast(&j->work);
        if (!unref_locked(j))
                pthread_mutex_unlock(&j->lock);
}

int target_jobs_fd(const struct target_jobs *j)
{
        return j->efd;
}

uint64_t target_jobs_submit(struct target_jobs *j, uint32_t owner, target_job_run run,
                            target_job_drop drop, void *arg, uint64_t deadline_ns)
{
        struct job *jb = calloc(1, sizeof(*jb));
        uint64_t id;

        if (!jb) {
                if (drop)
                        drop(arg);
                return 0;
        }
        *jb = (struct job){
            .run = run, .drop = drop, .arg = arg, .deadline_ns = deadline_ns, .owner = owner};
        pthread_mutex_lock(&j->lock);
        if (owner_full_locked(j, owner)) {
                id = jb->id = j->next_id++;
                j->st.submitted++;
                hand_back_locked(j, jb);
                pthread_mutex_unlock(&j->lock);
                return id;
        }
        if (grow_locked(j)) {
                j->st.refused++;
                pthread_mutex_unlock(&j->lock);
                drop_job(jb);
                return 0;
        }
        id = jb->id = j->next_id++;
        *j->queue_tail = jb;
        j->queue_tail = &jb->next;
        j->st.submitted++;
        pthread_cond_signal(&j->work);
        pthread_mutex_unlock(&j->lock);
        return id;
}

/* Lock held: mark the jobs past their deadline abandoned; their ids into ids (at most max). */
static unsigned abandon_late_locked(struct target_jobs *j, uint64_t now, uint64_t *ids,
                                    unsigned max)
{
        unsigned n = 0;

        for (struct job *jb = j->running; jb && n < max; jb = jb->next) {
                /* started after the caller read its clock: not late (now - started_ns would
                 * wrap, and a job a worker took up while the loop woke for the one before it
                 * would be abandoned at once, its target marked stuck) */
                if (jb->abandoned || now < jb->started_ns || now - jb->started_ns < jb->deadline_ns)
                        continue;
                jb->abandoned = 1;
                j->st.abandoned++;
                j->st.stuck++;
                ids[n++] = jb->id;
        }
        /* the stuck workers' jobs still queued get a fresh worker (within the bound) */
        if (n && j->queue)
                grow_locked(j);
        return n;
}

unsigned target_jobs_collect(struct target_jobs *j, uint64_t now, target_job_done done, void *ctx)
{
        uint64_t ids[TARGET_JOBS_MAX_THREADS], v;
        struct job *fin;
        unsigned n, count = 0, others = 0;

        if (read(j->efd, &v, sizeof(v)) < 0) {
                /* EAGAIN: nothing finished since the last read (a deadline may have passed) */
        }
        pthread_mutex_lock(&j->lock);
        fin = j->finished;
        j->finished = NULL;
        n = abandon_late_locked(j, now, ids, TARGET_JOBS_MAX_THREADS);
        pthread_mutex_unlock(&j->lock);
        while (fin) {
                struct job *jb = fin;

                fin = jb->next;
                if (jb->owner_refused)
                        done(ctx, jb->id, TARGET_JOB_REFUSED, NULL);
                else if (jb->returned)
                        done(ctx, jb->id, TARGET_JOB_RETURNED, NULL);
                else
                        done(ctx, jb->id, TARGET_JOB_FINISHED, jb->arg);
                if (jb->owner_refused || jb->returned)
                        others++;
                else
                        count++;
                drop_job(jb);
        }
        for (unsigned i = 0; i < n; i++)
                done(ctx, ids[i], TARGET_JOB_ABANDONED, NULL);
        pthread_mutex_lock(&j->lock);
        j->st.completed += count;
        pthread_mutex_unlock(&j->lock);
        return count + others + n;
}

static int finished_locked(const struct target_jobs *j, uint64_t id)
{
        for (const struct job *jb = j->finished; jb; jb = jb->next)
                if (jb->id == id && !jb->returned)
                        return 1;
        return 0;
}

int target_jobs_wait(struct target_jobs *j, uint64_t id, uint64_t until_ns)
{
        struct timespec ts = {.tv_sec = (time_t)(until_ns / NS_PER_S),
                              .tv_nsec = (long)(until_ns % NS_PER_S)};
        int found;

        pthread_mutex_lock(&j->lock);
        while (!(found = finished_locked(j, id)) &&
               pthread_cond_timedwait(&j->done, &j->lock, &ts) != ETIMEDOUT) {
        }
        if (!found)
                found = finished_locked(j, id);
        pthread_mutex_unlock(&j->lock);
        return found;
}

uint64_t target_jobs_next_deadline(struct target_jobs *j)
{
        uint64_t next = UINT64_MAX;

        pthread_mutex_lock(&j->lock);
        for (const struct job *jb = j->running; jb; jb = jb->next)
                if (!jb->abandoned && jb->started_ns + jb->deadline_ns < next)
                        next = jb->started_ns + jb->deadline_ns;
        pthread_mutex_unlock(&j->lock);
        return next;
}

void target_jobs_get_stats(struct target_jobs *j, struct target_jobs_stats *out)
{
        pthread_mutex_lock(&j->lock);
        *out = j->st;
        pthread_mutex_unlock(&j->lock);
}
