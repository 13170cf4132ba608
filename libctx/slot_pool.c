/* SPDX-License-Identifier: MIT */
/*
 * libctx/slot_pool.c — the pool of pre-allocated per-thread storage slots (the seed's
 * TLS-priming design). Owns the blocks, the atomic claim counter for never-used slots, the
 * lock-free free-slot stack of recycled ones, and the counters behind ctx_get_stats.
 *
 * Must never: allocate, lock or make a system call in ctxi_pool_get/ctxi_pool_put (they run
 * on a thread's first write, possibly inside a signal handler); free or unmap a block (an
 * interrupted reader may still be following a pointer into it, so memory only ever grows).
 *
 * Layout: slot index i lives in blocks[i / BLOCK_SLOTS][i % BLOCK_SLOTS]. A block is one
 * mmap of BLOCK_SLOTS slots, published by storing its pointer (release) before raising
 * `allocated` (release); claimers read `allocated` (acquire) first.
 *
 * Free stack (Treiber): free_head = (tag << 32) | (index + 1), 0 in the low half = empty.
 * Every successful push or pop increments the 32-bit tag, so a pop that read head H and
 * next N can only succeed if nobody pushed or popped in between — the ABA case (slot popped,
 * re-pushed with a different next) makes the CAS fail. A slot's next_free link is read
 * with an atomic load; reading a stale link of a slot another thread just popped is harmless
 * because the tag check rejects it, and the memory is never unmapped.
 * Same-thread reentrancy (a signal handler popping while the interrupted code is between its
 * load and its CAS) is the same case: the handler's operation changes the tag.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

#include "internal.h"

#define BLOCK_SLOTS 64u
#define MAX_BLOCKS  1024u /* 65536 slots, 276 MB at most */

static struct ctxi_slot *blocks[MAX_BLOCKS];
static uint32_t allocated; /* slots in published blocks */
static uint32_t claimed;   /* never-used slots handed out: indexes [0, claimed) */
static uint64_t free_head; /* (tag << 32) | (index + 1) */
static uint32_t want_grow; /* a get failed: grow at the next chance outside a handler */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;

struct ctxi_counters ctxi_counters;

static struct ctxi_slot *slot_at(uint32_t i)
{
        struct ctxi_slot *b = __atomic_load_n(&blocks[i / BLOCK_SLOTS], __ATOMIC_ACQUIRE);
        return &b[i % BLOCK_SLOTS];
}

struct ctxi_slot *ctxi_pool_get(void)
{
        uint64_t h = __atomic_load_n(&free_head, __ATOMIC_ACQUIRE);
        while ((uint32_t)h != 0) {
                struct ctxi_slot *s = slot_at((uint32_t)h - 1);
                uint32_t next = __atomic_load_n(&s->next_free, __ATOMIC_RELAXED);
                uint64_t nh = (((h >> 32) + 1) << 32) | next;
                if (__atomic_compare_exchange_n(&free_head, &h, nh, 1, __ATOMIC_ACQUIRE,
                                                __ATOMIC_ACQUIRE)) {
                        CTXI_COUNT(claims);
                        return s;
                }
        }
        uint32_t c = __atomic_load_n(&claimed, __ATOMIC_RELAXED);
        while (c < __atomic_load_n(&allocated, __ATOMIC_ACQUIRE)) {
                if (__atomic_compare_exchange_n(&claimed, &c, c + 1, 1, __ATOMIC_RELAXED,
                                                __ATOMIC_RELAXED)) {
                        CTXI_COUNT(claims);
                        return slot_at(c);
                }
        }
        __atomic_store_n(&want_grow, 1, __ATOMIC_RELAXED);
        return NULL;
}

void ctxi_pool_put(struct ctxi_slot *s)
{
        uint64_t h = __atomic_load_n(&free_head, __ATOMIC_RELAXED);
        uint64_t nh;
        do {
                __atomic_store_n(&s->next_free, (uint32_t)h, __ATOMIC_RELAXED);
                nh = (((h >> 32) + 1) << 32) | (s->index + 1);
        } while (!__atomic_compare_exchange_n(&free_head, &h, nh, 1, __ATOMIC_RELEASE,
                                              __ATOMIC_RELAXED));
        CTXI_COUNT(releases);
}

int ctxi_pool_grow(unsigned min_total)
{
        int err = 0;
        if (pthread_mutex_lock(&grow_lock) != 0)
                return -ENOMEM;
        uint32_t have = __atomic_load_n(&allocated, __ATOMIC_RELAXED);
        while (have < min_total) {
                uint32_t nb = have / BLOCK_SLOTS;
                if (nb >= MAX_BLOCKS) {
                        err = -ENOMEM;
                        break;
                }
                struct ctxi_slot *b = mmap(NULL, BLOCK_SLOTS * sizeof(*b), PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (b == MAP_FAILED) {
                        err = -ENOMEM;
                        break;
                }
                for (uint32_t i = 0; i < BLOCK_SLOTS; i++)
                        b[i].index = have + i;
                __atomic_store_n(&blocks[nb], b, __ATOMIC_RELEASE);
                have += BLOCK_SLOTS;
                __atomic_store_n(&allocated, have, __ATOMIC_RELEASE);
        }
        if (!err)
                __atomic_store_n(&want_grow, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&grow_lock);
        return err;
}

int ctxi_pool_low(void)
{
        if (__atomic_load_n(&want_grow, __ATOMIC_RELAXED))
                return 1;
        uint32_t fresh = __atomic_load_n(&allocated, __ATOMIC_RELAXED) -
                         __atomic_load_n(&claimed, __ATOMIC_RELAXED);
        return fresh < BLOCK_SLOTS / 4 &&
               (uint32_t)__atomic_load_n(&free_head, __ATOMIC_RELAXED) == 0;
}

void ctxi_pool_grow_if_low(void)
{
        if (ctxi_pool_low())
                (void)ctxi_pool_grow(__atomic_load_n(&allocated, __ATOMIC_RELAXED) + BLOCK_SLOTS);
}

void ctx_get_stats(struct ctx_stats *out)
{
        if (!out)
                return;
        uint64_t total = __atomic_load_n(&allocated, __ATOMIC_RELAXED);
        uint64_t claims = __atomic_load_n(&ctxi_counters.claims, __ATOMIC_RELAXED);
        uint64_t releases = __atomic_load_n(&ctxi_counters.releases, __ATOMIC_RELAXED);
        uint64_t in_use = claims >= releases ? claims - releases : 0;
        out->slots_total = total;
        out->slots_free = total >= in_use ? total - in_use : 0;
        out->blocks = total / BLOCK_SLOTS;
        out->claims = claims;
        out->releases = releases;
        out->pool_exhausted = __atomic_load_n(&ctxi_counters.pool_exhausted, __ATOMIC_RELAXED);
        out->busy_rejected = __atomic_load_n(&ctxi_counters.busy_rejected, __ATOMIC_RELAXED);
        out->exit_hook_missing =
            __atomic_load_n(&ctxi_counters.exit_hook_missing, __ATOMIC_RELAXED);
        out->abi_interposed = (uint64_t)ctxi_interposed;
        out->otel_attrs_full = __atomic_load_n(&ctxi_counters.otel_attrs_full, __ATOMIC_RELAXED);
        out->otel_publish_failed =
            __atomic_load_n(&ctxi_counters.otel_publish_failed, __ATOMIC_RELAXED);
}

int ctx_reserve(unsigned slots)
{
        return ctxi_pool_grow(slots);
}
