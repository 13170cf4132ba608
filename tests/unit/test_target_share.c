/* SPDX-License-Identifier: MIT */
/*
 * test_target_share.c — the per-process share of a bounded store: the per-target cap, the
 * global cap, the reserve kept for light processes, the chunk reset, and the shared entry
 * of processes past SHARE_TARGETS.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "sink/target_share.h"

static struct target_share *mk(void)
{
        struct share_limit l[SHARE_STORES] = {
            [SHARE_STACKS] = {.total = 100, .per_target = 40, .reserve = 20, .light = 5},
            [SHARE_LABEL_BYTES] = {.total = 1000, .per_target = 1000, .reserve = 0, .light = 0},
            [SHARE_THREADS] = {.total = 10, .per_target = 10, .reserve = 0, .light = 0},
        };
        struct target_share *t = share_new(l);

        cr_assert_not_null(t);
        return t;
}

Test(target_share, per_target_cap_and_reset)
{
        struct target_share *t = mk();

        cr_assert(share_allows(t, 7, SHARE_STACKS, 0, 40));
        share_add(t, 7, SHARE_STACKS, 40);
        cr_assert(share_allows(t, 7, SHARE_STACKS, 40, 1), "below half of the store: no share");
        cr_assert_not(share_allows(t, 7, SHARE_STACKS, 50, 1), "pid 7 used its 40");
        cr_assert(share_allows(t, 8, SHARE_STACKS, 50, 1), "another process is not charged");
        cr_assert_eq(share_used(t, 7, SHARE_STACKS), 40);
        cr_assert_eq(share_used(t, 7, SHARE_LABEL_BYTES), 0);
        share_new_chunk(t);
        cr_assert_eq(share_used(t, 7, SHARE_STACKS), 0);
        cr_assert(share_allows(t, 7, SHARE_STACKS, 0, 1), "a new chunk, a new share");
        share_free(t);
}

Test(target_share, reserve_only_for_light_processes)
{
        struct target_share *t = mk();

        share_add(t, 1, SHARE_STACKS, 40);
        share_add(t, 2, SHARE_STACKS, 40);
        /* 80 of 100 used: the top 20 are the reserve */
        share_add(t, 3, SHARE_STACKS, 5);
        cr_assert_not(share_allows(t, 3, SHARE_STACKS, 85, 1), "pid 3 is past light (5)");
        cr_assert(share_allows(t, 4, SHARE_STACKS, 85, 1), "a quiet process uses the reserve");
        cr_assert(share_allows(t, 4, SHARE_STACKS, 85, 5));
        cr_assert_not(share_allows(t, 4, SHARE_STACKS, 85, 6));
        cr_assert_not(share_allows(t, 4, SHARE_STACKS, 100, 1), "the store is full");
        share_free(t);
}

/* Past half of the store a process adds only while it holds no more than the average: the
 * flood stops, the others catch up (up to the flood's level). */
Test(target_share, flood_stops_others_catch_up)
{
        struct target_share *t = mk();

        share_add(t, 1, SHARE_LABEL_BYTES, 600);
        share_add(t, 2, SHARE_LABEL_BYTES, 100);
        cr_assert_not(share_allows(t, 1, SHARE_LABEL_BYTES, 700, 1), "the flood is above average");
        cr_assert(share_allows(t, 2, SHARE_LABEL_BYTES, 700, 1), "the quiet one is below");
        cr_assert(share_allows(t, 3, SHARE_LABEL_BYTES, 700, 50), "a newcomer too");
        cr_assert(share_allows(t, 2, SHARE_LABEL_BYTES, 700, 300), "up to the flood's level");
        cr_assert_not(share_allows(t, 2, SHARE_LABEL_BYTES, 700, 301));
        share_free(t);
}

Test(target_share, processes_past_the_table_share_one_entry)
{
        struct target_share *t = mk();

        for (pid_t p = 1; p < (pid_t)SHARE_TARGETS; p++)
                share_add(t, p, SHARE_THREADS, 1);
        cr_assert_eq(share_overflow(t), 0);
        share_add(t, 100000, SHARE_THREADS, 10);
        cr_assert_eq(share_overflow(t), 1);
        cr_assert_not(share_allows(t, 100001, SHARE_THREADS, 5, 1),
                      "a further process is charged with the shared entry's use");
        cr_assert_eq(share_used(t, 5, SHARE_THREADS), 1, "a process with its own entry keeps it");
        share_new_chunk(t);
        cr_assert(share_allows(t, 100001, SHARE_THREADS, 0, 1));
        share_free(t);
}

Test(target_share, refuses_impossible_limits)
{
        struct share_limit l[SHARE_STORES] = {
            [SHARE_STACKS] = {.total = 10, .per_target = 11},
        };

        cr_assert_null(share_new(l));
        cr_assert_eq(errno, EINVAL);
}
