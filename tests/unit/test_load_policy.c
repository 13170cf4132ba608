/* SPDX-License-Identifier: MIT */
/*
 * test_load_policy.c — the two host-protection rules: the sampling frequency cap
 * (engine/sample_rate.h) and the debuginfod policy (stack/debuginfod_policy.h).
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "engine/sample_rate.h"
#include "stack/debuginfod_policy.h"

Test(sample_rate, host_rate_shared_by_cpus)
{
        cr_assert_eq(sample_rate_cap(0, 2), SAMPLE_RATE_HOST_FP / 2);
        cr_assert_eq(sample_rate_cap(1, 2), SAMPLE_RATE_HOST_DWARF / 2);
        cr_assert_eq(sample_rate_cap(0, 1), SAMPLE_RATE_HOST_FP);
        /* a huge host still samples at a useful rate */
        cr_assert_eq(sample_rate_cap(1, 4096), SAMPLE_RATE_MIN_CAP);
        cr_assert_gt(sample_rate_cap(0, 0), 0); /* online CPUs from sysconf */
}

Test(debuginfod_policy, off_unless_opted_in)
{
        unsetenv("CTXPROF_DEBUGINFOD");
        unsetenv("DEBUGINFOD_URLS");
        cr_assert_eq(debuginfod_policy_apply(), -1);
        setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
        cr_assert_eq(debuginfod_policy_apply(), 0);
        cr_assert_null(getenv("DEBUGINFOD_URLS"));
        setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
        setenv("CTXPROF_DEBUGINFOD", "1", 1);
        unsetenv("DEBUGINFOD_TIMEOUT");
        cr_assert_eq(debuginfod_policy_apply(), 1);
        cr_assert_str_eq(getenv("DEBUGINFOD_URLS"), "http://127.0.0.1:1");
        cr_assert_str_eq(getenv("DEBUGINFOD_TIMEOUT"), DEBUGINFOD_TIMEOUT_S);
        setenv("DEBUGINFOD_TIMEOUT", "30", 1); /* the user's own timeout wins */
        cr_assert_eq(debuginfod_policy_apply(), 1);
        cr_assert_str_eq(getenv("DEBUGINFOD_TIMEOUT"), "30");
}
