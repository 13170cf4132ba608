/* SPDX-License-Identifier: MIT */
/*
 * test_select_jobs.c — mode context's asks (service/select_jobs.h) against real processes:
 * a fixture that publishes context (tests/fixtures/tls_fx_pie, libctx linked in) is
 * answered "publishes", one that links no libctx (tls_fx_none) and a process gone are
 * answered "does not"; the list's bound refuses and counts; a reload's clear drops the asks
 * in flight unheard. The answers come from target jobs, through the fd the loop polls.
 * Never leaves a child behind (each dies with SIGKILL).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "service/select_jobs.h"
#include "util/clock.h"

#define ANSWER_WAIT_NS (20ull * NS_PER_SEC) /* a loaded machine's jobs, not a time asserted */

struct answers {
        pid_t pid[8];
        int publishes[8];
        int n;
};

static void on_answer(void *ctx, pid_t pid, int publishes)
{
        struct answers *a = ctx;

        cr_assert(a->n < 8, "more answers than asks");
        a->pid[a->n] = pid;
        a->publishes[a->n] = publishes;
        a->n++;
}

/* A fixture child (stdout: its READY line read, then ignored), or fails the test. */
static pid_t start_fixture(const char *name)
{
        const char *b = getenv("TEST_BUILD");
        char path[512], line[256];
        int p[2];
        pid_t pid;
        FILE *out;

        snprintf(path, sizeof(path), "%s/tests/fixtures/%s", b && *b ? b : "build", name);
        cr_assert(access(path, X_OK) == 0, "fixture %s missing: build with make test-bins", path);
        cr_assert(pipe2(p, O_CLOEXEC) == 0);
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                dup2(p[1], 1);
                execl(path, path, (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        out = fdopen(p[0], "r");
        cr_assert(out);
        while (fgets(line, sizeof(line), out))
                if (!strncmp(line, "READY", 5))
                        break;
        cr_assert(!feof(out), "fixture %s exited before READY", name);
        fclose(out); /* the child may write on: SIGPIPE ends nothing it needs */
        return pid;
}

static void stop(pid_t pid)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* Polls q the way the daemon's loop does until want answers came or the wait ran out. */
static void run_until(struct select_jobs *q, struct answers *a, int want)
{
        uint64_t end = mono_ns() + ANSWER_WAIT_NS;

        while (a->n < want && mono_ns() < end) {
                uint64_t now = mono_ns(), due = select_jobs_next_due(q);
                int ms = due == UINT64_MAX ? 100 : due <= now ? 0 : (int)((due - now) / NS_PER_MS);
                struct pollfd pfd = {.fd = select_jobs_fd(q), .events = POLLIN};

                poll(&pfd, 1, ms > 100 ? 100 : ms);
                select_jobs_poll(q, mono_ns(), on_answer, a);
        }
}

Test(select_jobs, publishes_or_not)
{
        struct select_jobs *q;
        struct select_jobs_stats st;
        struct answers a = {0};
        pid_t yes = start_fixture("tls_fx_pie"), no = start_fixture("tls_fx_none");
        pid_t gone = fork();

        cr_assert(gone >= 0);
        if (gone == 0)
                _exit(0);
        waitpid(gone, NULL, 0);
        cr_assert(select_jobs_new(&q) == 0);
        cr_assert(select_jobs_ask(q, yes, 0, mono_ns()) == 0);
        cr_assert(select_jobs_ask(q, no, 0, mono_ns()) == 0);
        cr_assert(select_jobs_ask(q, gone, 0, mono_ns()) == 0);
        cr_assert(select_jobs_ask(q, yes, 0, mono_ns()) == 0, "a second ask is the same ask");
        cr_assert_eq(select_jobs_room(q), SELECT_ASKS_MAX - 3);
        run_until(q, &a, 3);
        cr_assert_eq(a.n, 3, "%d answers of 3", a.n);
        for (int i = 0; i < a.n; i++) {
                cr_assert(a.pid[i] == yes || a.pid[i] == no || a.pid[i] == gone);
                cr_assert_eq(a.publishes[i], a.pid[i] == yes, "pid %d answered %d", a.pid[i],
                             a.publishes[i]);
        }
        select_jobs_get_stats(q, &st);
        cr_assert_eq(st.examined, 3);
        cr_assert_eq(st.selected, 1);
        cr_assert_eq(st.abandoned, 0);
        cr_assert_eq(select_jobs_room(q), SELECT_ASKS_MAX);
        select_jobs_free(q);
        stop(yes);
        stop(no);
}

Test(select_jobs, bounded_and_cleared)
{
        struct select_jobs *q;
        struct select_jobs_stats st;
        struct answers a = {0};
        pid_t yes = start_fixture("tls_fx_pie");
        uint64_t now = mono_ns();

        cr_assert(select_jobs_new(&q) == 0);
        /* pids no process has (past pid_max's 2^22): asked, never run before the clear */
        for (unsigned i = 0; i < SELECT_ASKS_MAX; i++)
                cr_assert(select_jobs_ask(q, (pid_t)(5000000 + i), 1, now) == 0);
        cr_assert_eq(select_jobs_ask(q, yes, 0, now), -ENOSPC);
        select_jobs_get_stats(q, &st);
        cr_assert_eq(st.full, 1);
        cr_assert_eq(select_jobs_room(q), 0);
        select_jobs_poll(q, now, on_answer, &a); /* starts SELECT_JOBS_INFLIGHT jobs */
        select_jobs_clear(q);
        cr_assert_eq(select_jobs_room(q), SELECT_ASKS_MAX);
        cr_assert(select_jobs_ask(q, yes, 0, mono_ns()) == 0);
        run_until(q, &a, 1);
        cr_assert_eq(a.n, 1, "the jobs cleared were answered, or the new ask was not");
        cr_assert(a.pid[0] == yes && a.publishes[0]);
        select_jobs_free(q);
        stop(yes);
}
