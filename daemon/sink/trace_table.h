/* SPDX-License-Identifier: MIT */
/*
 * trace_table.h — the daemon's stack dedup table: equal stacks get one 64-bit trace id per
 * epoch, puts are lock-free from any number of consumer threads, and the JFR writer rotates
 * the table once per chunk to receive every stored stack exactly once. Triple-buffered
 * (ACTIVE takes puts, STANDBY holds traces kept alive for the next chunk, SCRATCH is being
 * drained); see docs/trace-table.md for the design and the ordering arguments.
 *
 * Owns the three tables, their frame arenas and the hazard slots. Never allocates after
 * trace_table_new, never prints, never blocks a put.
 */
#ifndef CTXPROF_TRACE_TABLE_H
#define CTXPROF_TRACE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack/frame.h"

/* Returned by trace_table_put when the stack could not be stored (table or arena full, no
 * hazard slot free, rotation raced the put too often, invalid arguments). Never a real id:
 * real ids have an epoch >= 1 in their upper 32 bits. */
#define TRACE_DROPPED_ID 1ull

/* Trace id layout: (instance epoch << 32) | slot. The epoch is the ACTIVE table's instance
 * number when the stack was first stored (1 for the first table, +1 per rotation). */
static inline uint32_t trace_id_epoch(uint64_t id)
{
        return (uint32_t)(id >> 32);
}
static inline uint32_t trace_id_slot(uint64_t id)
{
        return (uint32_t)id;
}

struct trace_table_config {
        uint32_t capacity;     /* distinct traces per table (per epoch); 0 = 16384, max 2^30 */
        uint64_t arena_bytes;  /* frame arena per table; 0 = capacity * (24 + 32 * 16) bytes */
        uint32_t max_frames;   /* longer stacks are refused (DROPPED); 0 = CTXPROF_MAX_FRAMES */
        uint32_t hazard_slots; /* power of two; 0 = TRACE_HAZARD_SLOTS (8192); tests use few */
};

/* Memory: 3 * (index_buckets * 8 + arena_bytes) + hazard_slots * 44 bytes, where
 * index_buckets is the power of two >= capacity * 4 / 3. All of it is allocated here. */
struct trace_table *trace_table_new(const struct trace_table_config *cfg); /* NULL: errno */

/* Caller guarantees no put or rotate runs concurrently. NULL is fine. */
void trace_table_free(struct trace_table *tt);

/* Stores a stack (leaf first) and returns its id, or TRACE_DROPPED_ID (counted).
 * The key is exactly: n, the truncated flag, and every byte of frames[0..n) (offset,
 * module_id, flags). The pid is deliberately not part of it: (module, offset) frames mean
 * the same code in every process, and the sample carries the thread. n == 0 is a valid
 * (empty) stack. Lock-free, allocation-free; safe from any number of threads, concurrently
 * with trace_table_rotate. */
uint64_t trace_table_put(struct trace_table *tt, const struct ctxprof_frame *frames, uint32_t n,
                         bool truncated);

/* trace_table_put for a caller that shares the table among producers (the JFR sink: one
 * per target process, sink/target_share.h): a stack already stored is found whatever
 * may_insert says; a miss stores it only when may_insert, else returns TRACE_DROPPED_ID,
 * counted in dropped_share. *inserted (may be NULL): this put stored a new stack. */
uint64_t trace_table_put_share(struct trace_table *tt, const struct ctxprof_frame *frames,
                               uint32_t n, bool truncated, bool may_insert, bool *inserted);

/* Traces in ACTIVE now (a relaxed read: cheap, exact only between puts), and the capacity. */
uint32_t trace_table_fill(struct trace_table *tt);
uint32_t trace_table_capacity(const struct trace_table *tt);

/* Called by rotate once per trace handed out; return true to keep the trace (with its id) for
 * the next rotation. A trace is kept if any checker says so. */
typedef bool (*trace_table_liveness_fn)(void *ctx, uint64_t id);
#define TRACE_TABLE_MAX_CHECKERS 8
/* 0, -EINVAL (fn NULL), -ENOSPC (TRACE_TABLE_MAX_CHECKERS reached). Waits for a running
 * rotate to finish. */
int trace_table_add_liveness_checker(struct trace_table *tt, trace_table_liveness_fn fn, void *ctx);

/* Receives each trace of a rotation once. `frames` is valid only during the call. */
typedef void (*trace_table_processor_fn)(void *ctx, uint64_t id, const struct ctxprof_frame *frames,
                                         uint32_t n, bool truncated);

/* Rotation (one chunk boundary). Afterwards puts go to a fresh, empty table with the next
 * epoch; the processor has been called exactly once for every trace stored in the previous
 * ACTIVE table and every trace kept by the previous rotation (the union; ids are distinct,
 * the same stack may appear under two ids: one kept, one new). Traces the checkers keep are
 * carried into STANDBY with their ids. The processor is called from this thread, never with
 * TRACE_DROPPED_ID (the JFR writer adds its own placeholder stack for that id).
 * processor may be NULL (traces are then only checked for liveness).
 * Returns 0, or -EBUSY if another rotate is running. Waits for puts still inside the old
 * ACTIVE table (each is a bounded, non-blocking operation). */
int trace_table_rotate(struct trace_table *tt, trace_table_processor_fn processor, void *ctx);

struct trace_table_stats {
        uint64_t puts;    /* calls to trace_table_put that got a hazard slot */
        uint64_t hits;    /* puts whose stack was already stored in ACTIVE */
        uint64_t inserts; /* puts that stored a new stack */
        uint64_t dropped; /* TRACE_DROPPED_ID returned: the sum of the six below */
        uint64_t dropped_table_full;
        uint64_t dropped_arena_full;
        uint64_t dropped_no_hazard;     /* every probed hazard slot taken */
        uint64_t dropped_rotation_race; /* ACTIVE changed under the put too many times */
        uint64_t dropped_invalid;       /* n > max_frames or frames NULL with n > 0 */
        uint64_t dropped_share;         /* a miss with may_insert false (share used up) */
        uint64_t insert_races;          /* another put stored the same stack first */
        uint64_t wasted_arena_bytes;    /* arena space lost to those races */
        uint64_t probes;                /* index buckets inspected by all puts */
        uint64_t probe_max;             /* longest probe sequence of one put */
        uint64_t hazard_collisions;     /* hazard slots found taken before a free one */
        uint64_t rotations;
        uint64_t rotation_hazard_waits; /* times a rotation waited for a put in the old ACTIVE */
        uint64_t last_rotation_ns;
        uint64_t last_preserved;   /* traces the last rotation carried into STANDBY */
        uint64_t preserve_dropped; /* live traces that did not fit into STANDBY (total) */
        uint32_t epoch;            /* current ACTIVE epoch */
        uint32_t capacity;         /* traces per table */
        uint32_t index_buckets;    /* hash buckets per table */
        uint32_t active_fill;      /* traces in ACTIVE now */
        uint32_t standby_fill;     /* traces in STANDBY now */
        uint64_t active_arena_used;
        uint64_t arena_bytes;  /* per table */
        uint64_t memory_bytes; /* everything trace_table_new allocated */
};

/* A snapshot; counters are read without stopping puts, so they are individually exact but
 * not mutually consistent while puts run. */
void trace_table_stats(struct trace_table *tt, struct trace_table_stats *out);

/* The hazard domain puts use (tests hold its slots to exercise exhaustion). */
struct hazard_domain *trace_table_hazards(struct trace_table *tt);

#endif
