/* SPDX-License-Identifier: MIT */
/*
 * hazard.c — hazard slots (see hazard.h). Owns the owner and word arrays of one domain.
 * Must never allocate after creation, never block in the put-side calls (acquire, protect,
 * release), never print.
 *
 * Ordering argument (the one thing this file must get right). A user does
 *     hazard_protect(word)  [seq_cst store]   then   re-reads the shared "current" word
 *                                                    [seq_cst load] and backs off if changed;
 * a reclaimer does
 *     exchange of the shared "current" word [seq_cst]  then  hazard_wait_clear(old)
 *                                                    [seq_cst loads of every slot].
 * All four are seq_cst, so they sit in one total order. If the user's re-read comes after
 * the exchange, it sees the new word and backs off without touching the resource. Otherwise
 * its protect came before the exchange, which comes before the reclaimer's loads, so the
 * reclaimer sees `old` (or the user's later clear, which means the user is done) and waits.
 * Either way no user touches the resource after the reclaimer's wait returns. This is the
 * store->load (Dekker) pattern: release/acquire alone would allow both sides to miss each
 * other.
 */
#include "sink/hazard.h"
#include "util/hash.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct hazard_domain {
        uint32_t nslots;        /* power of two */
        uint32_t probes;        /* min(HAZARD_MAX_PROBES, nslots) */
        _Atomic int32_t *owner; /* 0 = free, else the owning thread id */
        _Atomic uint64_t *word; /* 0 = nothing protected */
};

/* Odd primes: each is coprime to every power of two, so `base + i * step` (mod nslots) visits
 * nslots distinct slots. Picking the step from the thread id's hash spreads threads that share
 * a base slot onto different probe paths (no secondary clustering). */
static const uint32_t prime_steps[16] = {1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049,
                                         1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097};

static __thread int32_t tl_tid;

int32_t hazard_thread_id(void)
{
        /* A forked child keeps its parent's cached value; it is still unique within the child,
         * which is all the ownership check needs (domains are not shared across processes). */
        if (tl_tid == 0)
                tl_tid = (int32_t)gettid();
        return tl_tid;
}

static void *zalloc_aligned(size_t bytes)
{
        void *p = NULL;
        bytes = (bytes + 63) & ~(size_t)63;
        if (posix_memalign(&p, 64, bytes) != 0)
                return NULL;
        memset(p, 0, bytes);
        return p;
}

struct hazard_domain *hazard_domain_new(uint32_t nslots)
{
        if (nslots == 0)
                nslots = TRACE_HAZARD_SLOTS;
        if (nslots < 2 || (nslots & (nslots - 1)) != 0 || nslots > (1u << 24)) {
                errno = EINVAL;
                return NULL;
        }
        struct hazard_domain *d = calloc(1, sizeof(*d));
        if (!d)
                return NULL;
        d->nslots = nslots;
        d->probes = nslots < HAZARD_MAX_PROBES ? nslots : HAZARD_MAX_PROBES;
        /* Zeroed memory is a valid initial state for these lock-free atomic integers (same size
         * and representation as the plain type on every target gcc supports); no thread can see
         * the domain before this function returns it. */
        d->owner = zalloc_aligned(sizeof(*d->owner) * nslots);
        d->word = zalloc_aligned(sizeof(*d->word) * nslots);
        if (!d->owner || !d->word) {
                hazard_domain_free(d);
                errno = ENOMEM;
                return NULL;
        }
        return d;
}

void hazard_domain_free(struct hazard_domain *d)
{
        if (!d)
                return;
        free(d->owner);
        free(d->word);
        free(d);
}

uint32_t hazard_domain_slots(const struct hazard_domain *d)
{
        return d->nslots;
}

size_t hazard_domain_bytes(const struct hazard_domain *d)
{
        return sizeof(*d) + (size_t)d->nslots * (sizeof(*d->owner) + sizeof(*d->word));
}

int hazard_acquire(struct hazard_domain *d, unsigned *collisions)
{
        int32_t tid = hazard_thread_id();
        uint64_t h = hash_mix64((uint32_t)tid);
        uint32_t mask = d->nslots - 1;
        uint32_t slot = (uint32_t)(h >> 32) & mask;
        uint32_t step = prime_steps[(h >> 8) & 15] & mask; /* odd, so never 0 */
        if (step == 0)
                step = 1; /* nslots == 1 cannot happen (checked in new); belt and braces */

        for (uint32_t i = 0; i < d->probes; i++) {
                int32_t expected = 0;
                /* Relaxed pre-check keeps a taken slot's cache line shared instead of bouncing it
                 * with a failing CAS. Success is acquire: it pairs with the previous owner's
                 * release in hazard_release, so everything that owner did with the slot (its word
                 * clear and any per-slot data the caller keeps) happens-before our use of it. */
                if (atomic_load_explicit(&d->owner[slot], memory_order_relaxed) == 0 &&
                    atomic_compare_exchange_strong_explicit(&d->owner[slot], &expected, tid,
                                                            memory_order_acquire,
                                                            memory_order_relaxed)) {
                        if (collisions)
                                *collisions = i;
                        return (int)slot;
                }
                slot = (slot + step) & mask;
        }
        if (collisions)
                *collisions = d->probes;
        return -1;
}

void hazard_protect(struct hazard_domain *d, int slot, uint64_t word)
{
        /* seq_cst: the store half of the store->load pattern in the file comment. */
        atomic_store_explicit(&d->word[slot], word, memory_order_seq_cst);
}

bool hazard_release(struct hazard_domain *d, int slot)
{
        int32_t tid = hazard_thread_id();
        /* Relaxed is enough to check ownership: only this thread ever stores its own tid here,
         * so reading it back is program order. */
        if (atomic_load_explicit(&d->owner[slot], memory_order_relaxed) != tid)
                return false;
        /* Release: every access the caller made to the protected resource happens-before a
         * reclaimer's (seq_cst, hence acquire) load that reads this 0 in hazard_wait_clear. */
        atomic_store_explicit(&d->word[slot], 0, memory_order_release);
        /* Release: hands the slot, and the caller's per-slot data, to the next owner's acquire
         * CAS in hazard_acquire. A plain store suffices since only the owner writes a non-zero
         * owner back to 0. */
        atomic_store_explicit(&d->owner[slot], 0, memory_order_release);
        return true;
}

bool hazard_in_use(struct hazard_domain *d, uint64_t word)
{
        for (uint32_t i = 0; i < d->nslots; i++)
                /* seq_cst: the load half of the reclaimer's side (file comment). */
                if (atomic_load_explicit(&d->word[i], memory_order_seq_cst) == word)
                        return true;
        return false;
}

uint64_t hazard_wait_clear(struct hazard_domain *d, uint64_t word)
{
        uint64_t waits = 0;
        /* One pass suffices: a slot that starts publishing `word` after we passed it belongs to
         * a user whose re-read comes after the reclaimer's exchange (file comment), so that user
         * backs off without touching the resource. */
        for (uint32_t i = 0; i < d->nslots; i++) {
                unsigned spins = 0;
                while (atomic_load_explicit(&d->word[i], memory_order_seq_cst) == word) {
                        waits++;
                        /* The holder is a consumer thread inside one bounded put; let it run. */
                        if (++spins < 64) {
                                sched_yield();
                        } else {
                                struct timespec ts = {0, 50 * 1000};
                                nanosleep(&ts, NULL);
                        }
                }
        }
        return waits;
}
