/* SPDX-License-Identifier: MIT */
/*
 * test_target_jobs.c — engine/target_jobs.c with real threads and a real blocking read: a
 * job that never returns (a read of a pipe nobody writes yet) is abandoned at its deadline,
 * counted, its worker replaced so that the next job still runs; the worker freed when the
 * read returns, and the abandoned job's id handed back once more (returned) without its
 * stale result; the pool freed while a worker is stuck, without waiting for it; and one
 * owner's stuck jobs never take more than TARGET_JOBS_STUCK_PER_OWNER workers from another's;
 * a job a worker started after the caller read the clock it collects with is not late.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/target_jobs.h"
#include "util/clock.h"

#define DEADLINE_NS 50000000ull /* 50 ms */
#define OWNER_A     1000        /* the targets' owners (uids) */
#define OWNER_B     1001
#define WAIT_NS     5000000000ull

struct job_arg {
        int fd;      /* >= 0: read one byte from it first (blocks until written) */
        int started; /* >= 0: write one byte to it before that */
        int value;
};

static void run(void *arg)
{
        struct job_arg *a = arg;
        char c = 's';

        if (a->started >= 0 && write(a->started, &c, 1) != 1)
                a->value = -100;
        if (a->fd >= 0 && read(a->fd, &c, 1) != 1)
                a->value = -1;
        a->value++;
}

struct seen {
        uint64_t done_id, abandoned_id, returned_id;
        int bad_end; /* an end with the wrong arg */
        int value;
};

static void done(void *ctx, uint64_t id, enum target_job_end end, void *arg)
{
        struct seen *s = ctx;

        if ((end == TARGET_JOB_FINISHED) != (arg != NULL))
                s->bad_end = 1;
        if (end == TARGET_JOB_FINISHED) {
                s->done_id = id;
                s->value = ((struct job_arg *)arg)->value;
        } else if (end == TARGET_JOB_RETURNED) {
                s->returned_id = id;
        } else {
                s->abandoned_id = id;
        }
}

static struct job_arg *job(int fd, int value)
{
        struct job_arg *a = malloc(sizeof(*a));

        cr_assert_not_null(a);
        a->fd = fd;
        a->started = -1;
        a->value = value;
        return a;
}

/* collect until cond holds or WAIT_NS passed */
#define COLLECT_UNTIL(j, s, cond)                                                                  \
        do {                                                                                       \
                uint64_t until = mono_ns() + WAIT_NS;                                              \
                while (!(cond) && mono_ns() < until) {                                             \
                        struct pollfd pf = {.fd = target_jobs_fd(j), .events = POLLIN};            \
                        poll(&pf, 1, 10);                                                          \
                        target_jobs_collect(j, mono_ns(), done, s);                                \
                }                                                                                  \
        } while (0)

/* collect until ended jobs have been abandoned or handed back for their owner (or WAIT_NS
 * passed); *st: the pool's counters then */
static void collect_until_ended(struct target_jobs *j, struct seen *s, struct target_jobs_stats *st,
                                uint64_t ended)
{
        uint64_t until = mono_ns() + WAIT_NS;

        do {
                struct pollfd pf = {.fd = target_jobs_fd(j), .events = POLLIN};

                poll(&pf, 1, 10);
                target_jobs_collect(j, mono_ns(), done, s);
                target_jobs_get_stats(j, st);
        } while (st->abandoned + st->refused_owner < ended && mono_ns() < until);
}

Test(target_jobs, quick_job_delivered)
{
        struct target_jobs *j;
        struct seen s = {0};
        uint64_t id;

        cr_assert_eq(target_jobs_init(&j), 0);
        id = target_jobs_submit(j, OWNER_A, run, free, job(-1, 41), DEADLINE_NS);
        cr_assert_gt(id, 0);
        cr_assert_eq(target_jobs_wait(j, id, mono_ns() + WAIT_NS), 1);
        COLLECT_UNTIL(j, &s, s.done_id == id);
        cr_assert_eq(s.done_id, id);
        cr_assert_eq(s.value, 42);
        target_jobs_free(j);
}

Test(target_jobs, stuck_job_abandoned_and_replaced)
{
        struct target_jobs_stats st;
        struct target_jobs *j;
        struct seen s = {0};
        uint64_t stuck, next;
        int p[2];
        char c = 'x';

        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(target_jobs_init(&j), 0);
        stuck = target_jobs_submit(j, OWNER_A, run, free, job(p[0], 0), DEADLINE_NS);
        cr_assert_gt(stuck, 0);
        cr_assert_eq(target_jobs_wait(j, stuck, mono_ns() + 2 * DEADLINE_NS), 0);
        COLLECT_UNTIL(j, &s, s.abandoned_id == stuck);
        cr_assert_eq(s.abandoned_id, stuck, "the blocked job was not abandoned");
        target_jobs_get_stats(j, &st);
        cr_assert_eq(st.abandoned, 1);
        cr_assert_eq(st.stuck, 1);
        /* another target's job still runs */
        next = target_jobs_submit(j, OWNER_A, run, free, job(-1, 6), DEADLINE_NS);
        cr_assert_gt(next, 0);
        COLLECT_UNTIL(j, &s, s.done_id == next);
        cr_assert_eq(s.value, 7);
        /* the blocked read returns: its worker drops the job, is no longer stuck, and the
         * job's id comes back once more, as returned, without its (stale) result */
        cr_assert_eq(write(p[1], &c, 1), 1);
        COLLECT_UNTIL(j, &s, s.returned_id == stuck);
        cr_assert_eq(s.returned_id, stuck, "the returned worker was not reported");
        target_jobs_get_stats(j, &st);
        cr_assert_eq(st.stuck, 0);
        cr_assert_eq(st.returned, 1);
        cr_assert_eq(st.completed, 1); /* the abandoned one's result is never delivered */
        cr_assert_eq(s.value, 7);
        cr_assert_not(s.bad_end);
        target_jobs_free(j);
        close(p[0]);
        close(p[1]);
}

Test(target_jobs, free_never_waits_for_a_stuck_worker)
{
        struct target_jobs *j;
        struct seen s = {0};
        uint64_t id, t0;
        int p[2];

        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(target_jobs_init(&j), 0);
        id = target_jobs_submit(j, OWNER_A, run, free, job(p[0], 0), DEADLINE_NS);
        COLLECT_UNTIL(j, &s, s.abandoned_id == id);
        t0 = mono_ns();
        target_jobs_free(j);
        cr_assert_lt(mono_ns() - t0, DEADLINE_NS, "target_jobs_free waited for a worker");
        /* the worker still reads p[0] (it would free the pool if the read returned): left
         * blocked until the test process exits, which does not wait for it either */
}

/* An owner whose targets hold TARGET_JOBS_STUCK_PER_OWNER workers stuck: its next jobs (queued
 * before, or submitted after) are handed back as abandoned without running, while another
 * owner's job runs. With more stuck owners than this, every thread would be taken. */
Test(target_jobs, one_owner_cannot_take_every_worker)
{
        struct target_jobs_stats st;
        struct target_jobs *j;
        struct seen s = {0};
        uint64_t ids[TARGET_JOBS_MAX_THREADS], other;
        int p[2];
        unsigned i, n = TARGET_JOBS_MAX_THREADS;

        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(target_jobs_init(&j), 0);
        for (i = 0; i < n; i++) {
                ids[i] = target_jobs_submit(j, OWNER_A, run, free, job(p[0], 0), DEADLINE_NS);
                cr_assert_gt(ids[i], 0);
        }
        /* every one of them ends: abandoned (stuck) or handed back for its owner */
        collect_until_ended(j, &s, &st, n);
        cr_assert_eq(st.abandoned, TARGET_JOBS_STUCK_PER_OWNER, "abandoned %llu",
                     (unsigned long long)st.abandoned);
        cr_assert_eq(st.stuck, TARGET_JOBS_STUCK_PER_OWNER);
        cr_assert_eq(st.refused_owner, n - TARGET_JOBS_STUCK_PER_OWNER);
        cr_assert_eq(st.refused, 0);
        /* owner A's next job is not run either; owner B's is */
        target_jobs_submit(j, OWNER_A, run, free, job(p[0], 0), DEADLINE_NS);
        other = target_jobs_submit(j, OWNER_B, run, free, job(-1, 1), DEADLINE_NS);
        cr_assert_gt(other, 0);
        COLLECT_UNTIL(j, &s, s.done_id == other);
        cr_assert_eq(s.done_id, other, "another owner's job did not run");
        cr_assert_eq(s.value, 2);
        target_jobs_get_stats(j, &st);
        cr_assert_eq(st.refused_owner, n - TARGET_JOBS_STUCK_PER_OWNER + 1);
        cr_assert_eq(st.stuck, TARGET_JOBS_STUCK_PER_OWNER);
        target_jobs_free(j);
        /* the stuck workers still read p[0]: left blocked, as above */
}

/* Several users stall targets at once, each up to its TARGET_JOBS_STUCK_PER_OWNER workers:
 * eight of them (16 stuck workers; the pool had 8 threads in all, so the fifth user left no
 * worker) and another user's job still runs. */
Test(target_jobs, eight_stalling_users_leave_a_worker)
{
        const unsigned users = 8, n = users * TARGET_JOBS_STUCK_PER_OWNER;
        struct target_jobs_stats st;
        struct target_jobs *j;
        struct seen s = {0};
        uint64_t other;
        int p[2];

        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(target_jobs_init(&j), 0);
        for (unsigned u = 0; u < users; u++) {
                for (unsigned k = 0; k < TARGET_JOBS_STUCK_PER_OWNER; k++)
                        cr_assert_gt(target_jobs_submit(j, OWNER_B + 1 + u, run, free, job(p[0], 0),
                                                        DEADLINE_NS),
                                     0, "user %u's job %u refused", u, k);
                /* each user's jobs are abandoned before the next user's come */
                collect_until_ended(j, &s, &st, (u + 1) * TARGET_JOBS_STUCK_PER_OWNER);
        }
        cr_assert_eq(st.stuck, n, "stuck %llu", (unsigned long long)st.stuck);
        cr_assert_eq(st.refused + st.refused_owner, 0);
        other = target_jobs_submit(j, OWNER_A, run, free, job(-1, 1), DEADLINE_NS);
        cr_assert_gt(other, 0, "no worker left for another user");
        COLLECT_UNTIL(j, &s, s.done_id == other);
        cr_assert_eq(s.done_id, other, "another user's job did not run");
        cr_assert_eq(s.value, 2);
        target_jobs_free(j);
        /* the stuck workers still read p[0]: left blocked, as above */
}

/* The loop reads its clock, then collects; a worker may take up a queued job in between (it
 * does so right when the job before it ends, which is what woke the loop). That job started
 * after "now": it is not late. (now - started wrapped around, and such a job was abandoned at
 * once, its target marked stuck.) */
Test(target_jobs, job_started_after_the_callers_clock_is_not_late)
{
        struct target_jobs_stats st;
        struct target_jobs *j;
        struct seen s = {0};
        struct job_arg *a;
        int p[2], started[2];
        char c = 'x';

        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(pipe(started), 0);
        cr_assert_eq(target_jobs_init(&j), 0);
        uint64_t before = mono_ns();
        a = job(p[0], 0);
        a->started = started[1];
        uint64_t id = target_jobs_submit(j, OWNER_A, run, free, a, DEADLINE_NS);
        cr_assert_gt(id, 0);
        struct pollfd pf = {.fd = started[0], .events = POLLIN};
        cr_assert_eq(poll(&pf, 1, (int)(WAIT_NS / NS_PER_MS)), 1, "the job never started");
        cr_assert_eq(read(started[0], &c, 1), 1);
        target_jobs_collect(j, before, done, &s);
        target_jobs_get_stats(j, &st);
        cr_assert_eq(st.abandoned, 0, "a job started after the caller's clock was abandoned");
        cr_assert_eq(s.abandoned_id, 0);
        cr_assert_eq(write(p[1], &c, 1), 1);
        COLLECT_UNTIL(j, &s, s.done_id == id);
        cr_assert_eq(s.done_id, id);
        cr_assert_eq(s.value, 1);
        target_jobs_free(j);
        for (int i = 0; i < 2; i++) {
                close(p[i]);
                close(started[i]);
        }
}
