/* SPDX-License-Identifier: MIT */
/*
 * test_procs_index.c — engine/procs.h's pid index, which procs_find uses at every sample: a
 * full table of PROCS_MAX processes finds each one, a reused pid finds its newest entry,
 * and after procs_compact moved the entries every live one is found where it went and a
 * dropped one is not. The pids are above any pid the kernel gives (pid_max is at most
 * 2^22), so the entries are of processes that do not exist: nothing here reads a process.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "engine/procs.h"
#include "stack/modules.h"
#include "util/clock.h"

#define FAKE_PID0 (1 << 22) /* PID_MAX_LIMIT: no process has it or any pid above */

static struct modules *mods;
static struct procs t;

static void setup(void)
{
        mods = modules_new();
        cr_assert_not_null(mods);
        cr_assert_eq(procs_init(&t, mods), 0);
}

static void teardown(void)
{
        procs_free(&t);
        modules_free(mods);
}

TestSuite(procs_index, .init = setup, .fini = teardown);

Test(procs_index, full_table_reused_pid_and_compaction)
{
        uint64_t now = mono_ns();

        for (int i = 0; i < PROCS_MAX - 1; i++)
                cr_assert_not_null(procs_new(&t, FAKE_PID0 + i, "x", now), "entry %d", i);
        for (int i = 0; i < PROCS_MAX - 1; i++) {
                struct proc *p = procs_find(&t, FAKE_PID0 + i);

                cr_assert_not_null(p, "pid %d not found", FAKE_PID0 + i);
                cr_assert_eq(p->pid, FAKE_PID0 + i);
        }
        cr_assert_null(procs_find(&t, FAKE_PID0 - 1));

        /* pid 7 reused: its newest entry is found, the old one is not */
        struct proc *old = procs_find(&t, FAKE_PID0 + 7);
        proc_mark_dead(old, 0, 0);
        struct proc *newer = procs_new(&t, FAKE_PID0 + 7, "y", now);
        cr_assert_not_null(newer);
        cr_assert_eq(procs_find(&t, FAKE_PID0 + 7), newer);
        cr_assert_eq(t.n, PROCS_MAX);

        /* every odd pid dead long ago: the next entry compacts the table, moving the rest */
        for (int i = 1; i < PROCS_MAX - 1; i += 2)
                if (i != 7) /* its newest entry lives */
                        proc_mark_dead(procs_find(&t, FAKE_PID0 + i), 0, 0);
        now = mono_ns();
        cr_assert_not_null(procs_new(&t, FAKE_PID0 + PROCS_MAX, "z", now));
        cr_assert_lt(t.n, PROCS_MAX, "the table was not compacted");
        for (int i = 0; i < PROCS_MAX - 1; i++) {
                struct proc *p = procs_find(&t, FAKE_PID0 + i);

                if (i % 2 && i != 7) {
                        cr_assert_null(p, "dropped pid %d still found", FAKE_PID0 + i);
                        continue;
                }
                cr_assert_not_null(p, "pid %d lost by the compaction", FAKE_PID0 + i);
                cr_assert_eq(p->pid, FAKE_PID0 + i);
                cr_assert(p->alive, "pid %d: an entry that is not its newest", FAKE_PID0 + i);
        }
        cr_assert_str_eq(procs_find(&t, FAKE_PID0 + 7)->name, "y");
        cr_assert_eq(procs_find(&t, FAKE_PID0 + PROCS_MAX)->pid, FAKE_PID0 + PROCS_MAX);
}
