/* SPDX-License-Identifier: MIT */
/*
 * parser_lanes.c — which user lane serves which owner, least recently used evicted
 * (parser_lanes.h). Must never evict a slot a request holds, nor grow past PARSER_LANES_MAX.
 */
#include "util/parser_lanes.h"

#include <errno.h>

int parser_lanes_pin(struct parser_lane_table *t, uint32_t owner, int *evicted)
{
        int pick = -1;

        *evicted = 0;
        for (int i = 0; i < PARSER_LANES_MAX; i++) {
                const struct parser_lane_slot *s = &t->slot[i];
                if (s->live && s->owner == owner) {
                        pick = i;
                        break;
                }
                /* else a free slot first, then the least recently used one no request holds */
                if (s->inflight)
                        continue;
                if (pick < 0 || (t->slot[pick].live && (!s->live || s->used < t->slot[pick].used)))
                        pick = i;
        }
        if (pick < 0)
                return -EBUSY;
        struct parser_lane_slot *s = &t->slot[pick];
        if (!s->live || s->owner != owner) {
                *evicted = s->live;
                s->owner = owner;
                s->live = 1;
        }
        s->inflight++;
        s->used = ++t->uses;
        return pick;
}

void parser_lanes_unpin(struct parser_lane_table *t, int i)
{
        if (i >= 0 && i < PARSER_LANES_MAX && t->slot[i].inflight)
                t->slot[i].inflight--;
}

int parser_lanes_live(const struct parser_lane_table *t)
{
        int n = 0;
        for (int i = 0; i < PARSER_LANES_MAX; i++)
                n += t->slot[i].live;
        return n;
}
