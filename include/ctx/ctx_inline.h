/* SPDX-License-Identifier: MIT */
/*
 * ctx/ctx_inline.h — ctx_set_span and ctx_clear_span as static inline functions, for code
 * that goes into an *executable* linked with libctx.a: there every libctx TLS variable is at
 * a fixed offset from %fs, so the call, the PLT and the TLSDESC call all go away. Whenever a
 * call needs more than the span record's stores (an OTel trace to clear, mirror labels to
 * write or hide, the thread's first write) it calls the library function.
 *
 * Also the one definition of what the inline paths and libctx share: the layout of libctx's
 * TLS block (struct ctxi_tls), the span record's write sequence and the "span record only"
 * test. Everything named ctxi_* here is private to libctx and the libctx.a it came with: it
 * changes with the library's version, which is why the inline paths link only against the
 * archive (its ctxi_abis and ctxi_mirroring stay global there; libctx.so keeps them local, so
 * linking this header's inline paths against libctx.so fails at link time instead of reading
 * another version's layout).
 *
 * Must never: be used from a shared object (compiled -fPIC without -fPIE it falls back to
 * the library calls: TLS from a shared object needs TLSDESC, and the initial-exec model is
 * sound only in the executable); differ from the library in what a reader can see.
 */
#ifndef CTX_CTX_INLINE_H
#define CTX_CTX_INLINE_H

#include <stdint.h>

#include "ctx/abi.h"
#include "ctx/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Stores a reader may observe are single aligned 8/4-byte stores (__atomic relaxed: the
 * compiler may neither split nor merge nor drop them). CTXI_ORDER() is a compiler-only barrier
 * (atomic_signal_fence): the argument for why that is enough is in libctx/labelset.c and
 * libctx/span.c.
 */
#define CTXI_ST(lv, v) __atomic_store_n(&(lv), (v), __ATOMIC_RELAXED)
#define CTXI_LD(lv)    __atomic_load_n(&(lv), __ATOMIC_RELAXED)
#define CTXI_ORDER()   __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Per-thread writer state (part of the TLS block: a few bytes, so that libctx's TLS fits
 * glibc's static TLS surplus when libctx.so is dlopen'ed). */
struct ctxi_slot;
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
        uint32_t otel_trace;     /* the OTel record's header shows a trace (set with it, while
                                  * otel_busy is held): set-span's "no trace to clear" test
                                  * without following otel_ptr into the record */
        struct ctxi_trace pend;  /* the deferred trace write */
};

/*
 * All of libctx's TLS is this one block (libctx/abi_symbols.c): the exported ABI variables
 * are symbols defined *at offsets inside it* (custom_labels_current_set = ctxi_tls + 64, ...),
 * so their layout, names, sizes and symbol-named TLSDESC relocations are unchanged, while
 * code in the shared object reaches everything from one address: one TLSDESC call per
 * function, and in an executable one %fs-relative address.
 */
struct ctxi_tls {
        struct ctx_span_context span;            /* 0: ctx_span_context_v1 (64-aligned) */
        custom_labels_labelset_t *current_set;   /* 64: custom_labels_current_set */
        struct otel_thread_ctx_record *otel_ptr; /* 72: otel_thread_ctx_v1 */
        struct ctxi_thread self;                 /* 80: writer-private */
} __attribute__((aligned(64)));
#define CTXI_TLS_CURRENT_SET_OFF 64
#define CTXI_TLS_OTEL_PTR_OFF    72
/* offset of a slot's mirror_shown (1 = its span-id mirror labels are visible); libctx's
 * internal.h asserts it against struct ctxi_slot */
#define CTXI_SLOT_MIRROR_SHOWN_OFF 4208

/* Process-wide switches (libctx/abi_switch.c, libctx/span.c). */
extern unsigned ctxi_abis __attribute__((visibility("hidden"))); /* CTX_ABI_* */
extern int ctxi_mirroring __attribute__((visibility("hidden"))); /* 1: span-id mirrors */

/* The OTel record shows no trace and no record write is in progress on this thread (a
 * handler must go through the deferral), so a span-only write leaves it alone. Three loads
 * from the TLS block, none through otel_ptr: following the pointer into the record was the
 * longest dependent chain of a set-span (TLS address, pointer, record). */
static inline int ctxi_otel_shows_no_trace(const struct ctxi_tls *t)
{
        return CTXI_LD(t->otel_ptr) && !(CTXI_LD(t->self.otel_busy) | t->self.otel_trace);
}

/* The current label set shows mirror labels, or a mirror sync that a handler interrupted is
 * in progress (libctx/span.c, ctxi_mirror_sync raises the flag first). */
static inline int ctxi_mirrors_shown(const struct ctxi_tls *t)
{
        const struct ctxi_slot *cur = t->self.cur;
        return cur && CTXI_LD(*(const uint32_t *)(const void *)((const char *)cur +
                                                                CTXI_SLOT_MIRROR_SHOWN_OFF));
}

/* A span write under `abis` must also write the mirror labels (or hide old ones). */
static inline int ctxi_mirrors_needed(const struct ctxi_tls *t, unsigned abis)
{
        return (abis & CTX_ABI_CUSTOM_LABELS) &&
               (__atomic_load_n(&ctxi_mirroring, __ATOMIC_RELAXED) || ctxi_mirrors_shown(t));
}

/* Write {span, root, ck} into the span record: checksum 0, ids, checksum; then reload the
 * ids and redo the whole sequence if a signal handler on this thread wrote the record in
 * between (the order and the repair are argued at the top of libctx/span.c). */
static inline void ctxi_span_write(struct ctxi_tls *t, uint64_t span, uint64_t root, uint64_t ck)
{
        struct ctx_span_context *r = &t->span;
        do {
                CTXI_ST(r->checksum, 0);
                CTXI_ORDER();
                CTXI_ST(r->span_id, span);
                CTXI_ST(r->root_span_id, root);
                CTXI_ORDER();
                CTXI_ST(r->checksum, ck);
                CTXI_ORDER();
        } while (__builtin_expect(
            ((CTXI_LD(r->span_id) ^ span) | (CTXI_LD(r->root_span_id) ^ root)) != 0, 0));
}

/*
 * The two tests of a span-only write (ctx_set_span's common path and the inline paths), in the
 * order of libctx/span.c's set_trace: the OTel test before the record write, the mirror test
 * after it (a handler that shows the mirrors in between leaves mirror_shown set, which the test
 * then sees). Each term is its own branch with its own hint, so that the common case (every
 * ABI on, no trace, mirroring off, no mirrors shown) runs straight through branches that are
 * not taken: as one `&&` chain gcc laid it out as six taken jumps, which cost more than the
 * work (libctx/span.c, docs/libctx.md).
 */
/* The OTel record may show a trace (to clear), or cannot be written here (no record yet, a
 * record write in progress on this thread): the write needs the library's whole path. */
static inline __attribute__((always_inline)) int ctxi_span_needs_otel(const struct ctxi_tls *t,
                                                                      unsigned abis)
{
        if (__builtin_expect(!(abis & CTX_ABI_OTEL_THREAD), 0))
                return 0;
        if (__builtin_expect(CTXI_LD(t->otel_ptr) == NULL, 0))
                return 1;
        return __builtin_expect((CTXI_LD(t->self.otel_busy) | t->self.otel_trace) != 0, 0);
}

/* ctxi_mirrors_needed, laid out for mirroring off (the case where a span write is only the
 * record; with mirroring on, the mirror update costs far more than a taken branch). */
static inline __attribute__((always_inline)) int ctxi_span_needs_mirrors(const struct ctxi_tls *t,
                                                                         unsigned abis)
{
        if (__builtin_expect(!(abis & CTX_ABI_CUSTOM_LABELS), 0))
                return 0;
        if (__builtin_expect(__atomic_load_n(&ctxi_mirroring, __ATOMIC_RELAXED), 0))
                return 1;
        const struct ctxi_slot *cur = t->self.cur;
        if (__builtin_expect(cur == NULL, 0))
                return 0;
        return __builtin_expect(
            CTXI_LD(
                *(const uint32_t *)(const void *)((const char *)cur + CTXI_SLOT_MIRROR_SHOWN_OFF)),
            0);
}

#if !defined(CTXI_LIBCTX_BUILD)
#if defined(__PIC__) && !defined(__PIE__)
/* A shared object: TLS needs TLSDESC there, so the library does the work. */
static inline int ctx_inline_set_span(uint64_t span_id, uint64_t root_span_id)
{
        return ctx_set_span(span_id, root_span_id);
}
static inline int ctx_inline_clear_span(void)
{
        return ctx_clear_span();
}
#else
/* The executable's copy of the TLS block: %fs + a link-time constant. */
static inline struct ctxi_tls *ctxi_inline_tls(void)
{
        extern __thread struct ctx_span_context ctx_span_context_v1
            __attribute__((tls_model("initial-exec")));
        /* the record is at offset 0 of the block; the empty asm hides from the compiler that
         * the pointer came from the 64-byte record (it would flag the block's other fields as
         * out of bounds) */
        struct ctxi_tls *t = (struct ctxi_tls *)(void *)&ctx_span_context_v1;
        __asm__("" : "+r"(t));
        return t;
}

/* ctx_set_span: same result, same status, same signal safety. When the mirrors need an
 * update, the library call writes the record again (the same ids) and then the mirrors.
 * always_inline: with its two calls, gcc 12 otherwise keeps it out of line (an ordinary call,
 * the very thing this header exists to avoid). */
static inline __attribute__((always_inline)) int ctx_inline_set_span(uint64_t span_id,
                                                                     uint64_t root_span_id)
{
        struct ctxi_tls *t = ctxi_inline_tls();
        unsigned abis = __atomic_load_n(&ctxi_abis, __ATOMIC_RELAXED);
        if (__builtin_expect(ctxi_span_needs_otel(t, abis), 0))
                return ctx_set_span(span_id, root_span_id);
        if (__builtin_expect(abis & CTX_ABI_SPAN_RECORD, CTX_ABI_SPAN_RECORD))
                ctxi_span_write(t, span_id, root_span_id, ctx_span_checksum(span_id, root_span_id));
        if (__builtin_expect(ctxi_span_needs_mirrors(t, abis), 0))
                return ctx_set_span(span_id, root_span_id);
        return 0;
}

/* ctx_clear_span: same result, same status, same signal safety. */
static inline __attribute__((always_inline)) int ctx_inline_clear_span(void)
{
        struct ctxi_tls *t = ctxi_inline_tls();
        unsigned abis = __atomic_load_n(&ctxi_abis, __ATOMIC_RELAXED);
        if (__builtin_expect(ctxi_span_needs_otel(t, abis), 0))
                return ctx_clear_span();
        if (__builtin_expect(abis & CTX_ABI_SPAN_RECORD, CTX_ABI_SPAN_RECORD))
                ctxi_span_write(t, 0, 0, 0);
        if (__builtin_expect(ctxi_span_needs_mirrors(t, abis), 0))
                return ctx_clear_span();
        return 0;
}
#endif
#endif /* !CTXI_LIBCTX_BUILD */

#ifdef __cplusplus
}
#endif

#endif /* CTX_CTX_INLINE_H */
