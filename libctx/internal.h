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

#define CTXI_HIDDEN __attribute__((visibility("hidden")))
/* libctx's own TLS: in the shared object one TLSDESC call for the module base per function */
#define CTXI_TLS __attribute__((visibility("hidden"), tls_model("local-dynamic")))

/*
 * Stores a reader may observe are single aligned 8/4-byte stores (__atomic relaxed: the
 * compiler may neither split nor merge nor drop them). CTXI_ORDER() is a compiler-only barrier
 * (atomic_signal_fence): the argument for why that is enough is in labelset.c and span.c.
 */
#define CTXI_ST(lv, v) __atomic_store_n(&(lv), (v), __ATOMIC_RELAXED)
#define CTXI_LD(lv)    __atomic_load_n(&(lv), __ATOMIC_RELAXED)
#define CTXI_ORDER()   __atomic_signal_fence(__ATOMIC_SEQ_CST)

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
        /* home slot: the thread's OTel record (otel_thread_ctx_v1 points here while the thread
         * lives); scoped slot: the home record's attributes saved for the end of the scope */
        struct otel_thread_ctx_record otel __attribute__((aligned(8)));
} __attribute__((aligned(64)));

#define CTXI_SLOT_ABI_SIZE 4184u
_Static_assert(offsetof(struct ctxi_slot, prev) == CTXI_SLOT_ABI_SIZE, "seed layout is 4184 B");
_Static_assert(offsetof(struct ctxi_slot, buf) == 24 + 32 * CTX_MAX_LABELS, "seed layout");

static inline struct ctxi_slot *ctxi_slot_of(custom_labels_labelset_t *set)
{
        return (struct ctxi_slot *)set; /* set is the first member */
}

/* Per-thread writer state (hidden TLS, a few bytes: keeps libctx's TLS block small enough
 * for glibc's static TLS surplus when libctx is dlopen'ed). */
struct ctxi_trace {
        uint8_t trace_id[16], span_id[8], flags;
};
struct ctxi_thread {
        struct ctxi_slot *home;  /* this thread's own slot, NULL until the first write */
        struct ctxi_slot *cur;   /* the current label set (home or a scoped slot), published
                                  * as custom_labels_current_set when that ABI is on */
        uint32_t busy;           /* a label-set write is in progress on this thread */
        uint32_t mirror_pending; /* set_span ran inside a label write: re-sync mirrors at exit */
        uint32_t hook;           /* exit hook registered (pthread_setspecific) */
        uint32_t otel_busy;      /* an OTel record write is in progress on this thread */
        uint32_t otel_pending;   /* a handler deferred a trace write: apply `pend` at leave */
        uint32_t pend_busy;      /* a handler is writing `pend` */
        uint32_t reg_owner;      /* this thread holds the key registry lock */
        struct ctxi_trace pend;  /* the deferred trace write */
};
extern __thread struct ctxi_thread ctxi_self CTXI_TLS;

/* The published ABI variables under hidden alias names (abi_symbols.c): code in the shared
 * object reaches all of libctx's TLS with one module-base TLSDESC call per function instead
 * of one call per exported variable. */
extern __thread custom_labels_labelset_t *ctxi_current_set CTXI_TLS;
extern __thread struct ctx_span_context ctxi_span CTXI_TLS;
extern __thread struct otel_thread_ctx_record *ctxi_otel_ptr CTXI_TLS;

/* abi_switch.c — which ABIs writes update (CTX_ABI_* bits; CTX_ABIS env, ctx_set_abis). */
extern unsigned ctxi_abis CTXI_HIDDEN;
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
CTXI_HIDDEN int ctxi_set_put(struct ctxi_slot *s, const char *key, size_t klen, const char *val,
                             size_t vlen);
CTXI_HIDDEN int ctxi_set_remove(struct ctxi_slot *s, const char *key, size_t klen);
CTXI_HIDDEN void ctxi_set_clear(struct ctxi_slot *s);

CTXI_HIDDEN size_t ctxi_utf8_cut(const char *p, size_t len, size_t max, int *truncated);
/* memcpy for short strings into a writer-owned buffer. gcc expands a variable-length memcpy
 * into `rep movsq` here, whose startup cost dominated set-label; 16-byte moves with an
 * overlapping tail are several times cheaper for keys and values of a few dozen bytes. */
static inline void ctxi_copy_small(unsigned char *d, const char *s, size_t n)
{
        while (n >= 16) {
                __builtin_memcpy(d, s, 16);
                d += 16, s += 16, n -= 16;
        }
        if (n >= 8) {
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
static inline void ctxi_publish_set(struct ctxi_slot *s)
{
        ctxi_self.cur = s;
        CTXI_ORDER();
        if (ctxi_on(CTX_ABI_CUSTOM_LABELS) || !s)
                CTXI_ST(ctxi_current_set, s ? &s->set : NULL);
        CTXI_ORDER();
}

/* otel_record.c — the thread's OTel record: header (trace) and attribute entries, each
 * update between valid = 0 and valid = 1. A trace write from a handler that interrupted
 * another record write on this thread is deferred to the interrupted writer's leave. */
CTXI_HIDDEN void ctxi_otel_attach(struct ctxi_slot *home);
CTXI_HIDDEN int ctxi_otel_set_trace(const struct ctxi_trace *t);
CTXI_HIDDEN void ctxi_otel_leave_slow(void); /* guard held: apply deferred traces, release */
/* Take the record-write guard: 0 or -EBUSY (counted). */
static inline int ctxi_otel_enter(void)
{
        if (CTXI_LD(ctxi_self.otel_busy)) {
                CTXI_COUNT(busy_rejected);
                return -EBUSY;
        }
        CTXI_ST(ctxi_self.otel_busy, 1);
        CTXI_ORDER();
        return 0;
}
static inline void ctxi_otel_leave(void)
{
        if (__builtin_expect(CTXI_LD(ctxi_self.otel_pending), 0)) {
                ctxi_otel_leave_slow();
                return;
        }
        CTXI_ORDER();
        CTXI_ST(ctxi_self.otel_busy, 0);
        CTXI_ORDER();
        if (__builtin_expect(CTXI_LD(ctxi_self.otel_pending), 0)) {
                CTXI_ST(ctxi_self.otel_busy, 1); /* a handler deferred one after the check */
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
CTXI_HIDDEN int ctxi_otel_fits(const struct otel_thread_ctx_record *r, unsigned k, size_t vlen);
/* Between begin and end: set k's entry if it fits (0), else remove it (-ENOSPC). */
CTXI_HIDDEN int ctxi_otel_set(struct otel_thread_ctx_record *r, unsigned k, const char *v,
                              size_t vlen);
CTXI_HIDDEN void ctxi_otel_put(struct otel_thread_ctx_record *r, unsigned k, const char *v,
                               size_t vlen);
CTXI_HIDDEN void ctxi_otel_del(struct otel_thread_ctx_record *r, unsigned k);
#define CTXI_OTEL_VALUE_MAX 255 /* the entry length is a uint8 */

/* otel_keys.c — the process-wide attribute key registry (threadlocal.attribute_key_map). */
CTXI_HIDDEN int ctxi_key_find(const char *key, size_t klen);  /* index or -1; lock-free */
CTXI_HIDDEN int ctxi_key_index(const char *key, size_t klen); /* find or register */
CTXI_HIDDEN unsigned ctxi_key_count(void);
CTXI_HIDDEN const char *ctxi_key_name(unsigned i, size_t *len); /* NUL-terminated */

/* otel_process.c — the OTEL_CTX mapping; republish when the key map grew (try-lock: never
 * waits; a busy publisher picks the change up). */
CTXI_HIDDEN void ctxi_process_republish(void);

/* span.c — make slot s's mirror labels show the thread's current span record. */
CTXI_HIDDEN void ctxi_mirror_sync(struct ctxi_slot *s);
CTXI_HIDDEN int ctxi_mirroring_on(void);

/* thread_state.c — the calling thread's current set (claiming its slot on first use). */
CTXI_HIDDEN struct ctxi_slot *ctxi_thread_attach(int *err); /* the lazy first-write path */
static inline struct ctxi_slot *ctxi_thread_slot(int *err)
{
        struct ctxi_slot *cur = ctxi_self.cur; /* inline: no extra TLS call in the .so */
        if (__builtin_expect(cur != NULL, 1))
                return cur;
        return ctxi_thread_attach(err);
}
/* Enter/leave a label-set write on this thread (same-thread reentrancy guard). */
static inline int ctxi_enter(void)
{
        if (CTXI_LD(ctxi_self.busy)) {
                CTXI_COUNT(busy_rejected);
                return -EBUSY;
        }
        CTXI_ST(ctxi_self.busy, 1);
        CTXI_ORDER();
        return 0;
}
CTXI_HIDDEN void ctxi_leave_slow(void);
static inline void ctxi_leave(void)
{
        CTXI_ORDER();
        CTXI_ST(ctxi_self.busy, 0);
        CTXI_ORDER();
        if (__builtin_expect(CTXI_LD(ctxi_self.mirror_pending), 0))
                ctxi_leave_slow();
}

#endif /* LIBCTX_INTERNAL_H */
