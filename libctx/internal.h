/* SPDX-License-Identifier: MIT */
/*
 * libctx/internal.h — what the libctx source files share and nothing else: the pool slot
 * layout (the seed's 4184-byte per-thread buffer plus writer-private fields), the per-thread
 * writer state, the pool and label-set primitives, the store/fence helpers. Never installed,
 * never included by readers; all of it is hidden from the shared object's symbol table by
 * -fvisibility=hidden and libctx.map.
 */
#ifndef LIBCTX_INTERNAL_H
#define LIBCTX_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "ctx/abi.h"
#include "ctx/ctx.h"
#define CTXI_LIBCTX_BUILD 1 /* ctx_inline.h: the shared definitions, not the inline API */
#include "ctx/ctx_inline.h"

#define CTXI_HIDDEN __attribute__((visibility("hidden")))
/* libctx's own TLS: in the shared object one TLSDESC call for the module base per function.
 * In libctx.a (built with -DCTXI_ARCHIVE, mk/20-libctx.mk), which is linked into executables
 * only, initial-exec: the block is in the executable's static TLS, and its address is %fs plus
 * a constant the linker fills in, with no call (see the archive's rule for why). */
#ifdef CTXI_ARCHIVE
#define CTXI_TLS __attribute__((visibility("hidden"), tls_model("initial-exec")))
#else
#define CTXI_TLS __attribute__((visibility("hidden"), tls_model("local-dynamic")))
#endif

/* One pool slot. The first 4184 bytes are the seed layout that readers follow. */
struct ctxi_slot {
        custom_labels_labelset_t set;                 /* 0: storage = labels, capacity = 10 */
        custom_labels_label_t labels[CTX_MAX_LABELS]; /* 24 */
        struct {
                unsigned char key[CTX_MAX_KEY_LEN];
                unsigned char val[CTX_MAX_VALUE_LEN];
        } buf[CTX_MAX_LABELS]; /* 344: label i always uses buf[i] */
        /* 4184: writer-private, never published */
        struct ctxi_slot *prev; /* scoped set: the set that was current before */
        uint64_t mirror_span;   /* what the mirror labels show (valid when mirror_shown) */
        uint64_t mirror_root;
        uint32_t mirror_shown; /* 1 = mirror entries 0/1 are visible */
        uint32_t index;        /* position in the pool */
        uint32_t next_free;    /* free-stack link: index + 1 of the next free slot, 0 = none */
        /* label i's key index in the OTel key registry, or CTXI_NO_KEY (unknown: compare the
         * bytes). Equal indexes = equal keys, so with the OTel ABI on the one registry lookup
         * a set needs anyway also finds the label: no second byte compare */
        int16_t kidx[CTX_MAX_LABELS];
        uint8_t hint; /* the user entry last found or added (ctxi_set_find tries it first) */
        /* home slot: the thread's OTel record (otel_thread_ctx_v1 points here while the thread
         * lives); scoped slot: the home record's attributes saved for the end of the scope */
        struct otel_thread_ctx_record otel __attribute__((aligned(8)));
} __attribute__((aligned(64)));

#define CTXI_SLOT_ABI_SIZE 4184u
#define CTXI_NO_KEY        (-1)
_Static_assert(offsetof(struct ctxi_slot, prev) == CTXI_SLOT_ABI_SIZE, "seed layout is 4184 B");
_Static_assert(offsetof(struct ctxi_slot, buf) == 24 + 32 * CTX_MAX_LABELS, "seed layout");

static inline struct ctxi_slot *ctxi_slot_of(custom_labels_labelset_t *set)
{
        return (struct ctxi_slot *)set; /* set is the first member */
}

/* The TLS block's layout, CTXI_ST/CTXI_LD/CTXI_ORDER and the span record's write sequence
 * are in <ctx/ctx_inline.h>, shared with the inline paths of executables. */
_Static_assert(offsetof(struct ctxi_slot, mirror_shown) == CTXI_SLOT_MIRROR_SHOWN_OFF,
               "ctx_inline.h reads mirror_shown at this offset");
_Static_assert(offsetof(struct ctxi_tls, span) == 0, "span record at 0");
_Static_assert(offsetof(struct ctxi_tls, current_set) == CTXI_TLS_CURRENT_SET_OFF, "layout");
_Static_assert(offsetof(struct ctxi_tls, otel_ptr) == CTXI_TLS_OTEL_PTR_OFF, "layout");
extern __thread struct ctxi_tls ctxi_tls CTXI_TLS;
/* &ctxi_tls, computed once: the empty asm hides where the pointer came from, so gcc keeps it
 * in a register instead of redoing the TLSDESC call in every branch that touches TLS (it
 * did: two or three calls per set). Hot paths take it once and pass it down. */
static inline struct ctxi_tls *ctxi_tls_addr(void)
{
        struct ctxi_tls *t = &ctxi_tls;
        __asm__("" : "+r"(t));
        return t;
}
/* The names the write paths use (each one field of the block). */
#define ctxi_self        (ctxi_tls.self)
#define ctxi_span        (ctxi_tls.span)
#define ctxi_current_set (ctxi_tls.current_set)
#define ctxi_otel_ptr    (ctxi_tls.otel_ptr)

/* abi_switch.c — which ABIs writes update (CTX_ABI_* bits; CTX_ABIS env, ctx_set_abis):
 * ctxi_abis, declared in ctx_inline.h. */
static inline int ctxi_on(unsigned abi)
{
        return (__atomic_load_n(&ctxi_abis, __ATOMIC_RELAXED) & abi) != 0;
}
CTXI_HIDDEN int ctxi_abi_interposed(void); /* 1 if another object overrides our ABI symbols */
extern int ctxi_interposed CTXI_HIDDEN;    /* its result, taken in the constructor */

/* Counters behind ctx_get_stats (slot_pool.c). */
struct ctxi_counters {
        uint64_t claims, releases, pool_exhausted, busy_rejected, exit_hook_missing;
        uint64_t otel_attrs_full, otel_publish_failed;
};
extern struct ctxi_counters ctxi_counters CTXI_HIDDEN;
#define CTXI_COUNT(field) __atomic_fetch_add(&ctxi_counters.field, 1, __ATOMIC_RELAXED)

/* slot_pool.c — signal-safe get/put; growth only outside signal context. */
CTXI_HIDDEN struct ctxi_slot *ctxi_pool_get(void); /* NULL when exhausted (not counted) */
CTXI_HIDDEN void ctxi_pool_put(struct ctxi_slot *s);
CTXI_HIDDEN int ctxi_pool_grow(unsigned min_total); /* mutex + mmap: never in a handler */
CTXI_HIDDEN int ctxi_pool_low(void);                /* few slots left: grow when allowed */
CTXI_HIDDEN void ctxi_pool_grow_if_low(void);       /* one more block if low; not in a handler */
CTXI_HIDDEN void ctxi_pool_stats(struct ctx_stats *out);

/* labelset.c — careful in-place edits of a (possibly published) label set. */
CTXI_HIDDEN void ctxi_set_reset(struct ctxi_slot *s); /* empty set, mirrors hidden */
CTXI_HIDDEN void ctxi_set_copy(struct ctxi_slot *dst, const struct ctxi_slot *src);
/* k: the key's registry index when known, else CTXI_NO_KEY. put = find + put_at. */
CTXI_HIDDEN int ctxi_set_put(struct ctxi_slot *s, int k, const char *key, size_t klen,
                             const char *val, size_t vlen);
/* labelset_edit.h: ctxi_set_find (the entry holding a key, or the first hole) and
 * ctxi_set_put_at (replace or add), inline for the set paths. */
/* The add half of ctxi_set_put_at (value already cut): 0 or -ENOSPC. */
CTXI_HIDDEN int ctxi_set_add(struct ctxi_slot *s, int hole, int k, const char *key, size_t klen,
                             const char *val, size_t vlen);
CTXI_HIDDEN int ctxi_set_remove(struct ctxi_slot *s, const char *key, size_t klen);
CTXI_HIDDEN void ctxi_set_clear(struct ctxi_slot *s);

CTXI_HIDDEN size_t ctxi_utf8_cut_slow(const char *p, size_t max, int *truncated);
/* Length of the longest prefix of p[0..len) that fits in max bytes without splitting a UTF-8
 * character (inline: a string under the limit costs one compare, not a call). */
static inline size_t ctxi_utf8_cut(const char *p, size_t len, size_t max, int *truncated)
{
        if (__builtin_expect(len <= max, 1))
                return len;
        return ctxi_utf8_cut_slow(p, max, truncated);
}
/* a[0..n) == b[0..n) for short keys, inline (memcmp was a PLT call into libc and 10-15% of a
 * set-label): 8-byte words, the last one overlapping. */
static inline int ctxi_eq_small(const void *a, const void *b, size_t n)
{
        const unsigned char *x = a, *y = b;
        uint64_t u, v;
        if (n >= 8) {
                for (size_t i = 0; i + 8 < n; i += 8) {
                        __builtin_memcpy(&u, x + i, 8);
                        __builtin_memcpy(&v, y + i, 8);
                        if (u != v)
                                return 0;
                }
                __builtin_memcpy(&u, x + n - 8, 8);
                __builtin_memcpy(&v, y + n - 8, 8);
                return u == v;
        }
        for (size_t i = 0; i < n; i++)
                if (x[i] != y[i])
                        return 0;
        return 1;
}
/* memcpy for short strings into a writer-owned buffer. gcc expands a variable-length memcpy
 * into `rep movsq` here, whose startup cost dominated set-label; two overlapping moves from
 * each end (16, 8 or 4 bytes) copy up to 32 bytes without a loop, longer strings take 16-byte
 * moves and an overlapping tail. Overlap writes some bytes twice: fine for a buffer no reader
 * looks at while it is written. */
static inline void ctxi_copy_small(unsigned char *d, const char *s, size_t n)
{
        if (n > 32) {
                size_t i = 0;
                for (; i + 16 < n; i += 16)
                        __builtin_memcpy(d + i, s + i, 16);
                __builtin_memcpy(d + n - 16, s + n - 16, 16);
        } else if (n >= 16) {
                __builtin_memcpy(d, s, 16);
                __builtin_memcpy(d + n - 16, s + n - 16, 16);
        } else if (n >= 8) {
                __builtin_memcpy(d, s, 8);
                __builtin_memcpy(d + n - 8, s + n - 8, 8);
        } else if (n >= 4) {
                __builtin_memcpy(d, s, 4);
                __builtin_memcpy(d + n - 4, s + n - 4, 4);
        } else {
                for (size_t i = 0; i < n; i++)
                        d[i] = (unsigned char)s[i];
        }
}

/* Publish s as the current label set (when the Custom Labels ABI is on). */
static inline void ctxi_publish_set(struct ctxi_tls *t, struct ctxi_slot *s)
{
        t->self.cur = s;
        CTXI_ORDER();
        if (ctxi_on(CTX_ABI_CUSTOM_LABELS) || !s)
                CTXI_ST(t->current_set, s ? &s->set : NULL);
        CTXI_ORDER();
}

/* otel_record.c — the thread's OTel record: header (trace) and attribute entries, each
 * update between valid = 0 and valid = 1. A trace write from a handler that interrupted
 * another record write on this thread is deferred to the interrupted writer's leave. */
CTXI_HIDDEN void ctxi_otel_attach(struct ctxi_slot *home);
CTXI_HIDDEN int ctxi_otel_set_trace_slow(struct ctxi_tls *t, const struct ctxi_trace *tr);
CTXI_HIDDEN void ctxi_otel_leave_slow(void); /* guard held: apply deferred traces, release */
/* Take the record-write guard: 0 or -EBUSY (counted). */
static inline int ctxi_otel_enter(struct ctxi_tls *t)
{
        if (CTXI_LD(t->self.otel_busy)) {
                CTXI_COUNT(busy_rejected);
                return -EBUSY;
        }
        CTXI_ST(t->self.otel_busy, 1);
        CTXI_ORDER();
        return 0;
}
static inline void ctxi_otel_leave(struct ctxi_tls *t)
{
        if (__builtin_expect(CTXI_LD(t->self.otel_pending), 0)) {
                ctxi_otel_leave_slow();
                return;
        }
        CTXI_ORDER();
        CTXI_ST(t->self.otel_busy, 0);
        CTXI_ORDER();
        if (__builtin_expect(CTXI_LD(t->self.otel_pending), 0)) {
                CTXI_ST(t->self.otel_busy, 1); /* a handler deferred one after the check */
                CTXI_ORDER();
                ctxi_otel_leave_slow();
        }
}
static inline void ctxi_otel_begin(struct otel_thread_ctx_record *r) /* valid = 0 */
{
        CTXI_ST(r->valid, 0);
        CTXI_ORDER();
}
static inline void ctxi_otel_end(struct otel_thread_ctx_record *r) /* valid = 1 */
{
        CTXI_ORDER();
        CTXI_ST(r->valid, OTEL_THREAD_CTX_VALID);
}
/* The header of the thread's own record r (otel_busy held). */
static inline void ctxi_otel_write_trace(struct ctxi_tls *t, struct otel_thread_ctx_record *r,
                                         const struct ctxi_trace *tr)
{
        uint64_t a, b, c;
        __builtin_memcpy(&a, tr->trace_id, 8);
        __builtin_memcpy(&b, tr->trace_id + 8, 8);
        __builtin_memcpy(&c, tr->span_id, 8);
        t->self.otel_trace = (a | b | c | tr->flags) != 0;
        ctxi_otel_begin(r);
        __builtin_memcpy(r->trace_id, tr->trace_id, sizeof(r->trace_id));
        __builtin_memcpy(r->span_id, tr->span_id, sizeof(r->span_id));
        r->trace_flags = tr->flags;
        ctxi_otel_end(r);
}
/* Take the record-write guard (free: checked by the caller), write the header of home's
 * record, release the guard. */
static inline __attribute__((always_inline)) void
ctxi_otel_trace_guarded(struct ctxi_tls *t, struct ctxi_slot *home, const struct ctxi_trace *tr)
{
        CTXI_ST(t->self.otel_busy, 1);
        CTXI_ORDER();
        CTXI_ST(t->self.otel_pending, 0); /* this write is later than any deferred one */
        CTXI_ORDER();
        ctxi_otel_write_trace(t, &home->otel, tr);
        ctxi_otel_leave(t);
}
/* Write the trace header of the thread's record (inline: the record exists and no record
 * write is in progress on this thread; anything else takes the slow path). */
static inline __attribute__((always_inline)) int ctxi_otel_set_trace(struct ctxi_tls *t,
                                                                     const struct ctxi_trace *tr)
{
        struct ctxi_slot *h = t->self.home;
        if (__builtin_expect(!h || !CTXI_LD(t->otel_ptr) || CTXI_LD(t->self.otel_busy), 0))
                return ctxi_otel_set_trace_slow(t, tr);
        ctxi_otel_trace_guarded(t, h, tr);
        return 0;
}
CTXI_HIDDEN int ctxi_otel_fits(const struct otel_thread_ctx_record *r, unsigned k, size_t vlen);
/* Byte offset of key k's entry in r's attributes, or -1. Entries are well formed (ours). */
static inline int ctxi_otel_find(const struct otel_thread_ctx_record *r, unsigned k)
{
        unsigned size = r->attrs_data_size, off = 0;
        while (off + 2 <= size) {
                if (r->attrs_data[off] == k)
                        return (int)off;
                off += 2u + r->attrs_data[off + 1];
        }
        return -1;
}
CTXI_HIDDEN int ctxi_otel_set_moved(struct otel_thread_ctx_record *r, unsigned k, const char *v,
                                    size_t vlen, int off);
/* Between begin and end: set k's entry if it fits (0), else remove it (-ENOSPC). A value of
 * the same length is rewritten in place (inline: the common case of a tracer's set). */
static inline int ctxi_otel_set(struct otel_thread_ctx_record *r, unsigned k, const char *v,
                                size_t vlen)
{
        int off = ctxi_otel_find(r, k);
        if (off >= 0 && r->attrs_data[off + 1] == vlen) {
                ctxi_copy_small(&r->attrs_data[off + 2], v, vlen);
                return 0;
        }
        return ctxi_otel_set_moved(r, k, v, vlen, off);
}
CTXI_HIDDEN void ctxi_otel_put(struct otel_thread_ctx_record *r, unsigned k, const char *v,
                               size_t vlen);
CTXI_HIDDEN void ctxi_otel_del(struct otel_thread_ctx_record *r, unsigned k);
#define CTXI_OTEL_VALUE_MAX 255 /* the entry length is a uint8 */

/* otel_keys.c — the process-wide attribute key registry (threadlocal.attribute_key_map). */
CTXI_HIDDEN int ctxi_key_find(const char *key, size_t klen);  /* index or -1; lock-free */
CTXI_HIDDEN int ctxi_key_index(const char *key, size_t klen); /* find or register */
/* The registry's storage, read inline by ctx_set_attr: a name and its length never change
 * once `count` (stored with release after them) covers their index. */
struct ctxi_keys {
        char name[OTEL_THREAD_CTX_MAX_KEYS][CTX_MAX_KEY_LEN + 1]; /* NUL-terminated */
        uint8_t len[OTEL_THREAD_CTX_MAX_KEYS];
        uint32_t count; /* registered keys */
};
extern struct ctxi_keys ctxi_keys CTXI_HIDDEN;
static inline unsigned ctxi_key_count(void)
{
        return __atomic_load_n(&ctxi_keys.count, __ATOMIC_ACQUIRE);
}
static inline const char *ctxi_key_name(unsigned i, size_t *len)
{
        *len = ctxi_keys.len[i];
        return ctxi_keys.name[i];
}

/* otel_process.c — the OTEL_CTX mapping; republish when the key map grew (try-lock: never
 * waits; a busy publisher picks the change up). */
CTXI_HIDDEN void ctxi_process_republish(void);

/* span.c — make slot s's mirror labels show the thread's current span record. */
CTXI_HIDDEN void ctxi_mirror_sync(struct ctxi_tls *t, struct ctxi_slot *s);
CTXI_HIDDEN int ctxi_mirroring_on(void);

/* thread_state.c — the calling thread's current set (claiming its slot on first use). */
CTXI_HIDDEN struct ctxi_slot *ctxi_thread_attach(int *err); /* the lazy first-write path */
static inline struct ctxi_slot *ctxi_thread_slot(struct ctxi_tls *t, int *err)
{
        struct ctxi_slot *cur = t->self.cur; /* inline: no extra TLS call in the .so */
        if (__builtin_expect(cur != NULL, 1))
                return cur;
        return ctxi_thread_attach(err);
}
/* Enter/leave a label-set write on this thread (same-thread reentrancy guard). */
static inline int ctxi_enter(struct ctxi_tls *t)
{
        if (CTXI_LD(t->self.busy)) {
                CTXI_COUNT(busy_rejected);
                return -EBUSY;
        }
        CTXI_ST(t->self.busy, 1);
        CTXI_ORDER();
        return 0;
}
CTXI_HIDDEN void ctxi_leave_slow(void);
static inline void ctxi_leave(struct ctxi_tls *t)
{
        CTXI_ORDER();
        CTXI_ST(t->self.busy, 0);
        CTXI_ORDER();
        if (__builtin_expect(CTXI_LD(t->self.mirror_pending) | CTXI_LD(t->self.otel_pending), 0))
                ctxi_leave_slow();
}

#endif /* LIBCTX_INTERNAL_H */
