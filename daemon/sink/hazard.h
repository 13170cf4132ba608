/* SPDX-License-Identifier: MIT */
/*
 * hazard.h — a fixed array of hazard slots: a thread claims a slot (ownership recorded by its
 * thread id), publishes the 64-bit word naming the resource it is about to touch, and gives
 * the slot back when done; a reclaimer waits until no slot names the resource it wants to
 * clear. Owns only the slot arrays. Never allocates after hazard_domain_new, never blocks in
 * acquire/protect/release, never prints.
 *
 * The published word is opaque to this file (the trace table publishes "epoch << 32 | table
 * index"); 0 means "nothing protected". Slots are found by hashing the thread id and probing
 * with one of 16 odd primes (coprime to any power-of-two slot count, so a probe sequence
 * visits distinct slots); when no slot is free within the probe limit the caller degrades
 * gracefully (the trace table drops the sample and counts it).
 */
#ifndef CTXPROF_HAZARD_H
#define CTXPROF_HAZARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default slot count; a power of two. Tests pick fewer slots at run time (hazard_domain_new). */
#ifndef TRACE_HAZARD_SLOTS
#define TRACE_HAZARD_SLOTS 8192u
#endif
/* Most slots one acquire looks at before giving up. */
#define HAZARD_MAX_PROBES 64u

struct hazard_domain;

/* nslots: a power of two >= 2 (0 = TRACE_HAZARD_SLOTS). NULL on bad nslots or no memory. */
struct hazard_domain *hazard_domain_new(uint32_t nslots);
void hazard_domain_free(struct hazard_domain *d); /* NULL is fine; no slot may be held */
uint32_t hazard_domain_slots(const struct hazard_domain *d);
size_t hazard_domain_bytes(const struct hazard_domain *d); /* memory held */

/* Claim a free slot for the calling thread. Returns the slot index, or -1 when every probed
 * slot is owned by another thread. *collisions (may be NULL) receives the number of slots
 * found taken before success. A thread must not hold two slots of one domain at once. */
int hazard_acquire(struct hazard_domain *d, unsigned *collisions);
/* Publish `word` (non-zero) in an owned slot. Sequentially consistent: once this returns, a
 * reclaimer's later hazard_wait_clear(word) cannot miss it (see hazard.c). */
void hazard_protect(struct hazard_domain *d, int slot, uint64_t word);
/* Clear the slot's word and give the slot back. Returns false if the slot was not owned by
 * the calling thread (a bug in the caller; nothing is changed then). */
bool hazard_release(struct hazard_domain *d, int slot);

/* True if some slot currently publishes `word`. */
bool hazard_in_use(struct hazard_domain *d, uint64_t word);
/* Block (yielding, then sleeping) until no slot publishes `word`. Returns the number of scans
 * that found it still published (0 = it was clear at once). */
uint64_t hazard_wait_clear(struct hazard_domain *d, uint64_t word);

/* The calling thread's kernel thread id, cached per thread (one syscall per thread). */
int32_t hazard_thread_id(void);

#endif
