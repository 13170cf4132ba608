/* SPDX-License-Identifier: MIT */
/*
 * test_maps_budget.c — stack/maps_budget: the loop's time budget for /proc/PID/maps reads,
 * on a clock the test gives. A full bucket allows reads; a read's cost goes into debt; an
 * expensive read waits for the refill (MAPS_BUDGET_SHARE_PCT of elapsed time) while a cheap
 * one still runs within the reserve; one blocked read leaves at most MAPS_BUDGET_DEBT_MAX_NS
 * of debt; the bucket never holds more than MAPS_BUDGET_BURST_NS.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "stack/maps_budget.h"

#define MS 1000000ull
#define T0 (1000 * 1000 * MS) /* any monotonic time */

static const uint64_t expensive = 50 * MS;

Test(maps_budget, debt_waits_for_the_refill_cheap_reads_use_the_reserve)
{
        struct maps_budget b;

        cr_assert_eq(maps_budget_init(&b), 0);
        cr_assert(maps_budget_allow(&b, T0, expensive), "a full bucket");
        /* a read of 600 ms: 100 ms of debt */
        maps_budget_charge(&b, T0, 600 * MS);
        uint64_t t = T0 + 600 * MS; /* it ended; its own 600 ms refilled 60 */
        cr_assert_not(maps_budget_allow(&b, t, expensive), "in debt");
        cr_assert(maps_budget_allow(&b, t, 0), "a first read runs within the reserve");
        cr_assert(maps_budget_allow(&b, t, MAPS_BUDGET_CHEAP_NS), "a cheap one too");
        /* 40 ms of debt left: repaid by 400 ms more at 10% */
        cr_assert_not(maps_budget_allow(&b, t + 390 * MS, expensive));
        cr_assert(maps_budget_allow(&b, t + 410 * MS, expensive), "repaid");
        maps_budget_destroy(&b);
}

Test(maps_budget, deep_debt_stops_cheap_reads_too)
{
        struct maps_budget b;

        cr_assert_eq(maps_budget_init(&b), 0);
        maps_budget_charge(&b, T0, MAPS_BUDGET_BURST_NS + MAPS_BUDGET_RESERVE_NS + 10 * MS);
        cr_assert_not(maps_budget_allow(&b, T0, 0), "past the reserve");
        maps_budget_destroy(&b);
}

Test(maps_budget, debt_and_bucket_are_bounded)
{
        struct maps_budget b;

        cr_assert_eq(maps_budget_init(&b), 0);
        /* a read that blocked for ten minutes is charged as MAPS_BUDGET_DEBT_MAX_NS: the full
         * bucket less that is the debt, repaid at the share */
        maps_budget_charge(&b, T0, 600000 * MS);
        uint64_t debt = (uint64_t)(MAPS_BUDGET_DEBT_MAX_NS - MAPS_BUDGET_BURST_NS);
        uint64_t repaid = debt * 100 / MAPS_BUDGET_SHARE_PCT;
        cr_assert_not(maps_budget_allow(&b, T0 + repaid - 10 * MS, expensive));
        cr_assert(maps_budget_allow(&b, T0 + repaid + 10 * MS, expensive));
        /* an hour idle fills the bucket only to its burst: two burst-sized reads do not fit */
        uint64_t t = T0 + 3600000 * MS;
        cr_assert(maps_budget_allow(&b, t, expensive));
        maps_budget_charge(&b, t, MAPS_BUDGET_BURST_NS);
        cr_assert_not(maps_budget_allow(&b, t, expensive));
        maps_budget_destroy(&b);
}
