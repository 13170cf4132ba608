/* SPDX-License-Identifier: MIT */
/*
 * test_parser_lanes.c — util/parser_lanes: which user lane serves which owner. An owner keeps
 * its slot; a new owner takes a free slot, then the least recently used one no request holds
 * (an eviction, said to the caller); a held slot is never taken; with every slot held a new
 * owner is refused (-EBUSY) and nothing changes; the table never serves more than
 * PARSER_LANES_MAX owners.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util/parser_lanes.h"

#define UID0 1000u /* the first of the owners the tests use */

/* pin and unpin owner (one request that ended): its slot */
static int use(struct parser_lane_table *t, uint32_t owner, int *evicted)
{
        int i = parser_lanes_pin(t, owner, evicted);
        cr_assert_geq(i, 0, "owner %u got a slot", owner);
        parser_lanes_unpin(t, i);
        return i;
}

Test(parser_lanes, an_owner_keeps_its_slot_new_ones_take_free_slots)
{
        struct parser_lane_table t;
        int ev, slot[PARSER_LANES_MAX];

        memset(&t, 0, sizeof(t));
        for (int k = 0; k < PARSER_LANES_MAX; k++) {
                slot[k] = use(&t, UID0 + k, &ev);
                cr_assert_eq(ev, 0, "a free slot evicts nothing");
                for (int j = 0; j < k; j++)
                        cr_assert_neq(slot[j], slot[k], "owners %d and %d share a slot", j, k);
        }
        cr_assert_eq(parser_lanes_live(&t), PARSER_LANES_MAX);
        for (int k = 0; k < PARSER_LANES_MAX; k++) {
                cr_assert_eq(use(&t, UID0 + k, &ev), slot[k]);
                cr_assert_eq(ev, 0);
        }
}

Test(parser_lanes, the_least_recently_used_idle_slot_is_evicted)
{
        struct parser_lane_table t;
        int ev, slot[PARSER_LANES_MAX];

        memset(&t, 0, sizeof(t));
        for (int k = 0; k < PARSER_LANES_MAX; k++)
                slot[k] = use(&t, UID0 + k, &ev);
        use(&t, UID0, &ev); /* owner 0 used again: owner 1 is now the least recent */
        int i = use(&t, UID0 + 100, &ev);
        cr_assert_eq(ev, 1, "a full table evicts");
        cr_assert_eq(i, slot[1], "the least recently used (owner 1) went, not slot %d", i);
        cr_assert_eq(use(&t, UID0, &ev), slot[0], "owner 0 kept its slot");
        cr_assert_eq(ev, 0);
        i = use(&t, UID0 + 1, &ev); /* owner 1 comes back: takes the next least recent */
        cr_assert_eq(ev, 1);
        cr_assert_eq(i, slot[2]);
        cr_assert_eq(parser_lanes_live(&t), PARSER_LANES_MAX, "never more than the bound");
}

Test(parser_lanes, a_held_slot_is_never_evicted_all_held_is_busy)
{
        struct parser_lane_table t;
        int ev, held[PARSER_LANES_MAX];

        memset(&t, 0, sizeof(t));
        for (int k = 0; k < PARSER_LANES_MAX; k++)
                held[k] = parser_lanes_pin(&t, UID0 + k, &ev); /* requests in flight */
        cr_assert_eq(parser_lanes_pin(&t, UID0 + 100, &ev), -EBUSY, "every slot is held");
        /* the same owner may still queue on its own slot */
        int again = parser_lanes_pin(&t, UID0 + 3, &ev);
        cr_assert_eq(again, held[3]);
        /* one request ends: only that slot can go, though others are older */
        parser_lanes_unpin(&t, held[5]);
        int i = parser_lanes_pin(&t, UID0 + 100, &ev);
        cr_assert_eq(i, held[5], "the one idle slot");
        cr_assert_eq(ev, 1);
        cr_assert_eq(parser_lanes_pin(&t, UID0 + 5, &ev), -EBUSY, "owner 5 lost its slot");
        /* owner 3's slot had two requests: still held after one ends */
        parser_lanes_unpin(&t, held[3]);
        parser_lanes_unpin(&t, i);
        i = parser_lanes_pin(&t, UID0 + 5, &ev);
        cr_assert_eq(i, held[5], "only the slot just released is idle");
        cr_assert_eq(ev, 1);
}

Test(parser_lanes, unpin_out_of_range_or_idle_changes_nothing)
{
        struct parser_lane_table t;
        int ev;

        memset(&t, 0, sizeof(t));
        parser_lanes_unpin(&t, -1);
        parser_lanes_unpin(&t, PARSER_LANES_MAX);
        int i = use(&t, UID0, &ev);
        parser_lanes_unpin(&t, i); /* once too often */
        cr_assert_eq(t.slot[i].inflight, 0);
        cr_assert_eq(parser_lanes_live(&t), 1);
}
