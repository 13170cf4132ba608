/* SPDX-License-Identifier: MIT */
/*
 * libctx/otel_keys.c — the process-wide attribute key registry behind OTEP 4947's
 * threadlocal.attribute_key_map: key name -> uint8 index, append-only, at most 256 keys.
 * Owns the names (ctxi_keys: NUL-terminated for the protobuf encoder, read inline by
 * ctx_set_attr), a small open-addressing hash table for lock-free lookups, and the
 * registration lock.
 * Must never: remove or reorder a key (indexes are forever); allocate; block a signal
 * handler on a lock its own thread holds (that case returns -EBUSY).
 *
 * Lookup is lock-free: a table cell is 0 or index + 1, stored (release) after the name;
 * names never change once their cell is set. Registration takes a spin lock (another thread
 * holds it for a few hundred instructions at most), appends, then asks otel_process.c to
 * republish the process context.
 */
#include <string.h>

#include "internal.h"

#define TABLE_SIZE 512u /* power of two, twice the key limit */
#define HASH_K     0x9E3779B97F4A7C15ull

struct ctxi_keys ctxi_keys;        /* the names, their lengths and the count (internal.h) */
static uint16_t table[TABLE_SIZE]; /* index + 1, 0 = empty */
static int reg_lock;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
}

/* Cheap, not strong: length, first and last 8 bytes, two multiplies (a byte-wise hash cost
 * more than the rest of a label write). Collisions only lengthen the probe. */
static uint32_t hash(const char *k, size_t n)
{
        uint64_t a = 0, b = 0;
        if (n >= 8) {
                memcpy(&a, k, 8);
                memcpy(&b, k + n - 8, 8);
        } else {
                for (size_t i = 0; i < n; i++)
                        a = a << 8 | (unsigned char)k[i];
        }
        uint64_t h = (a ^ (b * HASH_K) ^ n) * HASH_K;
        return (uint32_t)(h >> 32);
}

/* The cell holding key, or the empty cell where it would go. */
static uint32_t probe(const char *key, size_t klen, int *found)
{
        uint32_t c = hash(key, klen) & (TABLE_SIZE - 1);
        for (;;) {
                uint16_t v = __atomic_load_n(&table[c], __ATOMIC_ACQUIRE);
                if (v == 0) {
                        *found = 0;
                        return c;
                }
                if (ctxi_keys.len[v - 1] == klen &&
                    ctxi_eq_small(ctxi_keys.name[v - 1], key, klen)) {
                        *found = 1;
                        return c;
                }
                c = (c + 1) & (TABLE_SIZE - 1);
        }
}

int ctxi_key_find(const char *key, size_t klen)
{
        int found;
        uint32_t c = probe(key, klen, &found);
        return found ? (int)__atomic_load_n(&table[c], __ATOMIC_ACQUIRE) - 1 : -1;
}

static int add_locked(const char *key, size_t klen)
{
        int found;
        uint32_t c = probe(key, klen, &found);
        if (found)
                return table[c] - 1;
        uint32_t n = __atomic_load_n(&ctxi_keys.count, __ATOMIC_RELAXED);
        if (n >= OTEL_THREAD_CTX_MAX_KEYS)
                return -ENOSPC;
        memcpy(ctxi_keys.name[n], key, klen);
        ctxi_keys.name[n][klen] = '\0';
        ctxi_keys.len[n] = (uint8_t)klen;
        __atomic_store_n(&table[c], (uint16_t)(n + 1), __ATOMIC_RELEASE);
        __atomic_store_n(&ctxi_keys.count, n + 1, __ATOMIC_SEQ_CST);
        return (int)n;
}

int ctxi_key_index(const char *key, size_t klen)
{
        int truncated = 0;
        klen = ctxi_utf8_cut(key, klen, CTX_MAX_KEY_LEN, &truncated);
        int i = ctxi_key_find(key, klen);
        if (__builtin_expect(i >= 0, 1))
                return i;
        if (CTXI_LD(ctxi_self.reg_owner)) { /* a handler interrupted our own registration */
                CTXI_COUNT(busy_rejected);
                return -EBUSY;
        }
        CTXI_ST(ctxi_self.reg_owner, 1);
        CTXI_ORDER();
        while (__atomic_exchange_n(&reg_lock, 1, __ATOMIC_ACQUIRE))
                cpu_relax();
        i = add_locked(key, klen);
        __atomic_store_n(&reg_lock, 0, __ATOMIC_RELEASE);
        CTXI_ORDER();
        CTXI_ST(ctxi_self.reg_owner, 0);
        if (i >= 0)
                ctxi_process_republish();
        return i;
}

int ctx_register_key(const char *key, size_t key_len)
{
        if (!key || key_len == 0)
                return -EINVAL;
        return ctxi_key_index(key, key_len);
}
