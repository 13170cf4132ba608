/* SPDX-License-Identifier: MIT */
/*
 * parser_lanes.h — the table of the parser helper's user lanes (util/parser_client.h): which
 * slot serves which owner (a uid, or one of the PARSER_OWNER_* keys), how many requests hold
 * each slot now, and which slot an owner without one takes: a free one, else the least
 * recently used slot that no request holds (evicted: its helper must be ended before the new
 * owner's starts), else none (-EBUSY). Pure bookkeeping: no locks (the caller's), no
 * processes, no clock (a use counter orders the slots). Never prints.
 */
#ifndef CTXPROF_PARSER_LANES_H
#define CTXPROF_PARSER_LANES_H

#include <stdint.h>

#define PARSER_LANES_MAX 8 /* user lanes (helper processes) at most, besides the system lane */

struct parser_lane_slot {
        uint32_t owner;    /* the key it serves (valid when live) */
        uint32_t inflight; /* requests holding it now: never evicted while > 0 */
        uint64_t used;     /* the table's use count at its last pin: the LRU order */
        int live;          /* serves owner */
};

struct parser_lane_table {
        struct parser_lane_slot slot[PARSER_LANES_MAX];
        uint64_t uses;
};

/* The slot for owner, held (inflight + 1) until parser_lanes_unpin: its index; *evicted is
 * set to 1 when the slot served another owner until now (its helper is that owner's: end it
 * first), else 0. -EBUSY when every slot is held by other owners' requests. */
int parser_lanes_pin(struct parser_lane_table *, uint32_t owner, int *evicted);
/* A request on slot i ended. */
void parser_lanes_unpin(struct parser_lane_table *, int i);
/* Slots serving an owner now. */
int parser_lanes_live(const struct parser_lane_table *);

#endif
