/* SPDX-License-Identifier: MIT */
/*
 * test_perf_map_budget.c — stack/perf_map_budget: one user's charges stop at its share while
 * another user's still fit; all users' charges stop at the budget; what is given back can
 * be charged again (a user's slot is free again at 0); a charge that does not fit changes
 * nothing and is counted; users beyond PERF_MAP_BUDGET_USERS holding bytes are refused, not
 * merged with another user's share. (Criterion runs each test in a process of its own: the
 * budget starts empty.)
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "stack/perf_map_budget.h"

static uint64_t bytes_now(void)
{
        struct perf_map_budget_stats st;
        perf_map_budget_get(&st);
        return st.bytes;
}

Test(perf_map_budget, a_users_share_leaves_room_for_others)
{
        cr_assert_eq(perf_map_budget_charge(1000, PERF_MAP_USER_SHARE - 10), 0);
        cr_assert_eq(perf_map_budget_charge(1000, 11), -ENOSPC, "past its share");
        cr_assert_eq(perf_map_budget_charge(1000, 10), 0, "exactly its share");
        cr_assert_eq(perf_map_budget_charge(1000, 1), -ENOSPC);
        cr_assert_eq(perf_map_budget_charge(1001, PERF_MAP_USER_SHARE), 0, "another user");
        cr_assert_eq(bytes_now(), 2 * PERF_MAP_USER_SHARE);
        perf_map_budget_release(1000, PERF_MAP_USER_SHARE / 2);
        cr_assert_eq(perf_map_budget_charge(1000, PERF_MAP_USER_SHARE / 2), 0, "given back");
        struct perf_map_budget_stats st;
        perf_map_budget_get(&st);
        cr_assert_eq(st.refused, 2);
        cr_assert_eq(st.peak, 2 * PERF_MAP_USER_SHARE);
}

Test(perf_map_budget, all_users_stop_at_the_budget)
{
        const uint32_t users = (uint32_t)(PERF_MAP_BUDGET_BYTES / PERF_MAP_USER_SHARE);
        for (uint32_t u = 0; u < users; u++)
                cr_assert_eq(perf_map_budget_charge(2000 + u, PERF_MAP_USER_SHARE), 0);
        cr_assert_eq(bytes_now(), PERF_MAP_BUDGET_BYTES);
        cr_assert_eq(perf_map_budget_charge(9999, 1), -ENOSPC, "the budget is spent");
        perf_map_budget_release(2000, 100);
        cr_assert_eq(perf_map_budget_charge(9999, 100), 0);
        cr_assert_eq(perf_map_budget_charge(9999, 1), -ENOSPC);
        /* a release beyond what a user holds gives back only what it holds */
        perf_map_budget_release(9999, 1000);
        cr_assert_eq(bytes_now(), PERF_MAP_BUDGET_BYTES - 100);
}

Test(perf_map_budget, users_beyond_the_table_are_refused)
{
        for (uint32_t u = 0; u < PERF_MAP_BUDGET_USERS; u++)
                cr_assert_eq(perf_map_budget_charge(u, 1), 0);
        cr_assert_eq(perf_map_budget_charge(PERF_MAP_BUDGET_USERS, 1), -ENOSPC,
                     "no slot: refused, never charged to another user");
        cr_assert_eq(perf_map_budget_charge(7, 1), 0, "a user holding bytes still charges");
        perf_map_budget_release(5, 1); /* its slot is free */
        cr_assert_eq(perf_map_budget_charge(PERF_MAP_BUDGET_USERS, 1), 0);
        cr_assert_eq(bytes_now(), PERF_MAP_BUDGET_USERS + 1);
}
