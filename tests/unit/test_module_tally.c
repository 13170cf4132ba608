/* SPDX-License-Identifier: MIT */
/*
 * test_module_tally.c — counts per module id: the top N by count (ties by id), bounded
 * memory with the overflow counted as `other`, an empty tally.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "stack/module_tally.h"

Test(module_tally, top_n_by_count)
{
        static struct module_tally t;
        struct module_tally_entry top[3];
        unsigned i, n;

        memset(&t, 0, sizeof(t));
        for (i = 0; i < 5; i++)
                module_tally_add(&t, 7);
        module_tally_add(&t, 3);
        for (i = 0; i < 9; i++)
                module_tally_add(&t, 12);
        module_tally_add(&t, 2);
        for (i = 0; i < 5; i++)
                module_tally_add(&t, 4);
        n = module_tally_top(&t, top, 3);
        cr_assert_eq(n, 3);
        cr_expect_eq(top[0].module_id, 12);
        cr_expect_eq(top[0].count, 9);
        cr_expect_eq(top[1].module_id, 4); /* tie with 7: lower id first */
        cr_expect_eq(top[1].count, 5);
        cr_expect_eq(top[2].module_id, 7);
        cr_expect_eq(top[2].count, 5);
        cr_expect_eq(t.other, 0);
}

Test(module_tally, fewer_than_asked_and_empty)
{
        static struct module_tally t;
        struct module_tally_entry top[4];

        memset(&t, 0, sizeof(t));
        cr_expect_eq(module_tally_top(&t, top, 4), 0);
        module_tally_add(&t, 1);
        module_tally_add(&t, 9);
        module_tally_add(&t, 9);
        cr_assert_eq(module_tally_top(&t, top, 4), 2);
        cr_expect_eq(top[0].module_id, 9);
        cr_expect_eq(top[1].module_id, 1);
        cr_expect_eq(module_tally_top(&t, top, 0), 0);
}

Test(module_tally, bounded)
{
        static struct module_tally t;
        struct module_tally_entry top[1];
        uint32_t id;

        memset(&t, 0, sizeof(t));
        for (id = 100; id < 100 + MODULE_TALLY_MAX + 10; id++)
                module_tally_add(&t, id);
        module_tally_add(&t, 100); /* known: still counted */
        cr_expect_eq(t.n, MODULE_TALLY_MAX);
        cr_expect_eq(t.other, 10);
        cr_assert_eq(module_tally_top(&t, top, 1), 1);
        cr_expect_eq(top[0].module_id, 100);
        cr_expect_eq(top[0].count, 2);
}
