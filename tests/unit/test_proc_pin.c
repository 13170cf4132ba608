/* SPDX-License-Identifier: MIT */
/*
 * test_proc_pin.c — util/proc_pin against a real recycled pid: a child is pinned, killed and
 * reaped, and a second child, of another user, is forked into the very same pid (root writes
 * /proc/sys/kernel/ns_last_pid under its lock). A read by pid then gets the second child's
 * bytes (what every /proc/PID read of the daemon did before pins); every read through the
 * old pin (its /proc/PID directory, its maps, process_vm_readv) fails with -ESRCH, never
 * returns them, and is counted as pid_recycled. So does a job of the process table
 * (engine/procs.h), which reads by pid: the victim's OpenTelemetry process context (its
 * service.name) is never taken as the old process's. Skipped (loudly) when not root.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "engine/procs.h"
#include "stack/modules.h"
#include "stack/proc_maps.h"
#include "util/clock.h"
#include "util/maps_line.h"
#include "util/proc_pin.h"

#define REFRESH_DEADLINE_NS 10000000000ull /* 10 s */
#define NS_LAST_PID         "/proc/sys/kernel/ns_last_pid"
/* Other processes of the machine may take the pid first: tries before giving up. */
#define RECYCLE_TRIES 50
/* The second child's user: anyone but root (nobody). */
#define VICTIM_UID 65534
#define OLD_NAME   "pin-attacker"
#define NEW_NAME   "pin-victim"
#define NEW_SECRET "victim-secret-bytes"

/* What a child holds in memory (read with process_vm_readv at the same address in both). */
static char secret[32] = "attacker-bytes";
/* The service.name a child publishes in its process context (libctx, OTEP 4719), or NULL. */
static const char *child_service;

/* A child named name that says it is ready on a pipe, then waits to be killed. */
static pid_t spawn(const char *name, const char *bytes, uid_t uid)
{
        int p[2];
        cr_assert_eq(pipe(p), 0);
        pid_t c = fork();
        cr_assert(c >= 0);
        if (!c) {
                close(p[0]);
                snprintf(secret, sizeof(secret), "%s", bytes);
                prctl(PR_SET_NAME, name);
                if (uid && setresuid(uid, uid, uid))
                        _exit(1);
                if (child_service && ctx_set_resource(child_service, NULL, NULL, NULL))
                        _exit(1);
                /* never outlives a failed test (after setresuid, which clears it) */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (write(p[1], "r", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(p[1]);
        char b;
        cr_assert_eq(read(p[0], &b, 1), 1, "child %d not ready", (int)c);
        close(p[0]);
        return c;
}

static void kill_reap(pid_t c)
{
        kill(c, SIGKILL);
        cr_assert_eq(waitpid(c, NULL, 0), c);
}

/* A child forked into pid (free now) through ns_last_pid, or -1 when others kept taking it. */
static pid_t spawn_at(pid_t pid, const char *name, const char *bytes, uid_t uid)
{
        int fd = open(NS_LAST_PID, O_RDWR | O_CLOEXEC);
        cr_assert(fd >= 0, "%s: %s", NS_LAST_PID, strerror(errno));
        cr_assert_eq(flock(fd, LOCK_EX), 0);
        pid_t c = -1;
        for (int i = 0; i < RECYCLE_TRIES && c != pid; i++) {
                char v[32];
                int n = snprintf(v, sizeof(v), "%d", (int)pid - 1);
                cr_assert_eq(pwrite(fd, v, (size_t)n, 0), n);
                c = spawn(name, bytes, uid);
                if (c != pid) {
                        kill_reap(c);
                        c = -1;
                }
        }
        flock(fd, LOCK_UN);
        close(fd);
        return c;
}

/* The comm of procdir's process, "" when unreadable. */
static void comm_at(int procdir, char *buf, size_t len)
{
        buf[0] = 0;
        int fd = openat(procdir, "comm", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, len - 1);
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        buf[strcspn(buf, "\n")] = 0;
}

static int count_cb(const struct maps_line *l, void *arg)
{
        (void)l;
        ++*(int *)arg;
        return 0;
}

static void need_root(void)
{
        if (geteuid() != 0 || access(NS_LAST_PID, W_OK))
                cr_skip_test("SKIPPED: needs root and a writable %s to recycle a pid", NS_LAST_PID);
}

Test(proc_pin, pins_a_live_process_and_reads_its_own)
{
        pid_t a = spawn(OLD_NAME, "attacker-bytes", 0);
        struct proc_pin pin;
        struct target_stats st = {0};
        cr_assert_eq(proc_pin_open(&pin, a), 0);
        cr_assert_eq(proc_pin_check(&pin, &st), 0);
        int dir = proc_pin_dir(&pin, &st);
        cr_assert(dir >= 0, "%s", strerror(-dir));
        char comm[32];
        comm_at(dir, comm, sizeof(comm));
        cr_assert_str_eq(comm, OLD_NAME);
        uint64_t start;
        cr_assert_eq(proc_stat_start(dir, &start), 0);
        cr_assert_eq(start, pin.start);
        int lines = 0;
        cr_assert_eq(maps_foreach_at(dir, count_cb, &lines, &st), 0);
        cr_assert_gt(lines, 0);
        close(dir);
        char buf[sizeof(secret)] = {0};
        cr_assert_eq(proc_pin_vm_read(&pin, buf, (uintptr_t)secret, sizeof(buf), &st),
                     (ssize_t)sizeof(buf));
        cr_assert_str_eq(buf, "attacker-bytes");
        cr_assert_eq(st.pid_recycled, 0);

        struct proc_pin dup;
        cr_assert_eq(proc_pin_dup(&dup, &pin), 0);
        cr_assert_neq(dup.pidfd, pin.pidfd);
        proc_pin_close(&pin);
        cr_assert_eq(pin.pidfd, -1);
        cr_assert_eq(proc_pin_check(&dup, NULL), 0); /* the dup pins on its own */
        kill(a, SIGKILL);
        /* exited, not yet reaped (a zombie keeps its pid): no longer alive for the pin */
        for (int i = 0; proc_pin_check(&dup, &st) == 0; i++)
                cr_assert_lt(i, 1000000, "the pin never saw the exit");
        cr_assert_eq(waitpid(a, NULL, 0), a);
        cr_assert_eq(proc_pin_check(&dup, &st), -ESRCH);
        proc_pin_close(&dup);
        cr_assert_eq(proc_pin_open(&pin, a), -ESRCH);
        cr_assert_eq(proc_pin_check(&pin, NULL), -ESRCH); /* a failed pin fails every check */
        cr_assert_eq(proc_pin_dir(&pin, NULL), -ESRCH);
}

Test(proc_pin, recycled_pid_never_reads_the_new_process, .timeout = 60)
{
        need_root();
        pid_t a = spawn(OLD_NAME, "attacker-bytes", 0);
        struct proc_pin pin;
        struct target_stats st = {0};
        cr_assert_eq(proc_pin_open(&pin, a), 0);
        int early = proc_pin_dir(&pin, &st); /* opened while a lived */
        cr_assert(early >= 0);
        struct modules *mods = modules_new();
        cr_assert_not_null(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open_pinned(mods, &pin, &pm), 0);

        kill_reap(a);
        pid_t b = spawn_at(a, NEW_NAME, NEW_SECRET, VICTIM_UID);
        if (b < 0)
                cr_skip_test("SKIPPED: pid %d kept going to other processes", (int)a);

        /* By pid, the pid is the victim's now: what an unpinned read gets. */
        char comm[32];
        int bypid = proc_pid_dir(a);
        cr_assert(bypid >= 0);
        comm_at(bypid, comm, sizeof(comm));
        close(bypid);
        cr_assert_str_eq(comm, NEW_NAME, "the pid was not recycled to the victim");

        /* Through the pin: refused, counted, never the victim's bytes. */
        cr_assert_eq(proc_pin_check(&pin, &st), -ESRCH);
        cr_assert_eq(st.pid_recycled, 1);
        cr_assert_eq(proc_pin_dir(&pin, &st), -ESRCH);
        cr_assert_eq(st.pid_recycled, 2);
        char buf[sizeof(secret)];
        memset(buf, 'x', sizeof(buf));
        cr_assert_eq(proc_pin_vm_read(&pin, buf, (uintptr_t)secret, sizeof(buf), &st), -ESRCH);
        cr_assert_null(memmem(buf, sizeof(buf), NEW_SECRET, strlen(NEW_SECRET)));
        cr_assert_eq(st.pid_recycled, 3);

        /* A /proc/PID directory opened for the old process stays the old process's. */
        comm_at(early, comm, sizeof(comm));
        cr_assert_str_neq(comm, NEW_NAME);
        int lines = 0;
        int r = maps_foreach_at(early, count_cb, &lines, NULL);
        cr_assert(r == -ESRCH || (r == 0 && lines == 0), "r=%d lines=%d", r, lines);
        close(early);

        /* The mapping table of the old process: no re-read of the victim's maps. */
        uint64_t before = modules_target_stats(mods)->pid_recycled;
        /* a read put off by the maps budget (-EAGAIN) is tried again until it runs */
        uint64_t deadline = mono_ns() + REFRESH_DEADLINE_NS;
        while ((r = proc_maps_refresh(pm)) == -EAGAIN && mono_ns() < deadline)
                sched_yield();
        cr_assert_eq(r, -ESRCH, "r=%d", r);
        cr_assert_eq(modules_target_stats(mods)->pid_recycled, before + 1);
        struct proc_maps *pm2 = NULL;
        cr_assert_eq(proc_maps_open_pinned(mods, &pin, &pm2), -ESRCH);

        proc_maps_free(pm);
        modules_free(mods);
        proc_pin_close(&pin);
        kill_reap(b);
}

Test(proc_pin, recycled_pid_job_keeps_nothing, .timeout = 60)
{
        need_root();
        pid_t a = spawn(OLD_NAME, "attacker-bytes", 0);
        struct modules *mods = modules_new();
        cr_assert_not_null(mods);
        struct procs t;
        cr_assert_eq(procs_init(&t, mods), 0); /* no job pool: jobs run in the caller */
        struct proc *p = procs_new(&t, a, OLD_NAME, mono_ns());
        cr_assert_not_null(p);

        kill_reap(a);
        child_service = "victim_secret_svc";
        pid_t b = spawn_at(a, NEW_NAME, NEW_SECRET, VICTIM_UID);
        child_service = NULL;
        if (b < 0)
                cr_skip_test("SKIPPED: pid %d kept going to other processes", (int)a);

        /* p's exit is not handled yet (its event still queued): its process-context job
         * runs, and reads by pid what is the victim's now */
        uint64_t before = t.target.pid_recycled;
        proc_pctx_refresh(&t, p, mono_ns(), 0);
        cr_assert_null(p->otel.service_name,
                       "the victim's service.name %s taken as the old process's",
                       p->otel.service_name);
        cr_assert_eq(p->otel.n_res, 0);
        cr_assert_gt(t.target.pid_recycled, before, "the job's refusal is not counted");

        /* what the victim publishes is readable, so the refusal above is the pin's */
        struct proc *pb = procs_new(&t, b, NEW_NAME, mono_ns());
        cr_assert_not_null(pb);
        proc_pctx_refresh(&t, pb, mono_ns(), 0);
        cr_assert_not_null(pb->otel.service_name);
        cr_assert_str_eq(pb->otel.service_name, "victim_secret_svc");

        procs_free(&t);
        modules_free(mods);
        kill_reap(b);
}
