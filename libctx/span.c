/* SPDX-License-Identifier: MIT */
/*
 * libctx/span.c — the checksummed span record (ctxi_span), its tag slots, and the
 * "span-id"/"root-span-id" decimal mirror labels (entries 0/1 of the label set).
 * Must never: let a reader accept a wrong span, allocate, lock or make a system call, or
 * write the mirrors from inside another label write on the same thread (they are deferred).
 *
 * Write order of the record: checksum = 0, ORDER, span_id, root_span_id, ORDER,
 * checksum = valid. All four are relaxed atomic 8-byte stores (plain `mov` on x86-64) and
 * ORDER is atomic_signal_fence: a compiler barrier, no CPU fence. This is the cheapest
 * correct ordering for the two kinds of reader the ABI admits:
 *  - a reader that interrupts this thread on its own CPU (perf NMI/IRQ + BPF, a signal
 *    handler): interrupts are precise, and a CPU sees its own stores in program order, so
 *    it observes a prefix of the store sequence in the order the compiler emitted it; the
 *    fences pin that order. A prefix is either "checksum 0" (no span), "checksum old with
 *    ids partly new" (mismatch: torn, counted, no span) or the complete new record.
 *  - a reader on another CPU while this thread is descheduled: the context switch orders
 *    every store before it with everything the reader does after the thread went off-CPU
 *    (scheduler locks, full barriers), so it sees the record as the thread left it — one
 *    of the prefixes above.
 * Release stores or thread fences would add nothing for these readers (and on weakly
 * ordered CPUs would cost barriers). A reader racing a *running* thread on another CPU is
 * outside the ABI; even then, on x86-64 (TSO) it sees the stores in order, and a mixed
 * {span, root} pair can only pass the 64-bit checksum by collision.
 * Reentrancy: a signal handler on this thread may call ctx_set_span/ctx_clear_span in the
 * middle of the sequence. It runs to completion first, so it leaves a consistent record of
 * its own; the interrupted call then performs only the rest of its stores. If the handler
 * came after one of the id stores, the result would mix the handler's id with this call's
 * other id and checksum — {B, Ar, h(A,Ar)}: never valid, so "no span" (and hidden mirrors)
 * until the next write. Hence ctxi_span_write() (ctx/ctx_inline.h) ends with ORDER and reloads both
 * ids: if either is not this call's, a handler wrote the record after our id store, and the whole
 * sequence is redone. At the reload the record is consistent in every case: if both ids read back
 * as ours, any id a handler left behind equals ours (so the checksum, ours or the handler's, is the
 * right one), or the handler ran after our last store and its record is complete; and a handler
 * that lands between or after the reloads leaves its own complete record behind, as if it had run
 * after this call. So when ctx_set_span/ctx_clear_span returns, the record is consistent: this
 * call's, or that of a handler that ran after it. Termination: a redo needs a handler on this
 * thread to have written the record within the same iteration (a window of a few instructions);
 * each redo consumes one such handler run, and handlers do not resume the loop they interrupted, so
 * the loop ends as soon as one iteration is not hit — like a CAS retry loop, it only spins while
 * others make progress. Ordering: the ORDER after the final checksum store keeps the compiler from
 * hoisting the reloads above it (a handler between early reloads and that store would go unnoticed)
 * and, as a signal fence, from assuming the loads return the values just stored. Within each
 * iteration the stores keep the order argued above, so a reader still sees only prefixes;
 * the window while an interrupted call repairs a mixed record reads as a mismatch (torn),
 * never as a wrong span (short of a 64-bit checksum collision).
 */
#include <string.h>

#include "internal.h"

int ctxi_mirroring = 1; /* global for ctx_inline.h (libctx.a only; libctx.map) */

void ctx_set_span_mirroring(int on)
{
        __atomic_store_n(&ctxi_mirroring, on ? 1 : 0, __ATOMIC_RELAXED);
}

int ctxi_mirroring_on(void)
{
        return __atomic_load_n(&ctxi_mirroring, __ATOMIC_RELAXED);
}

/*
 * Decimal mirrors. A tracer's span ids are random 64-bit numbers (19-20 digits); the old
 * conversion divided by 100 in a loop, a chain of 10 dependent multiplies (~50 cycles), and
 * counted the digits with another chain. Here a number is cut into 8-digit chunks (one
 * multiply each cut) and each chunk becomes 8 ASCII digits in one 64-bit word with three
 * multiply-and-mask steps that work on all its digits at once (SWAR: 4-digit halves, then
 * 2-digit quarters, then digits), so the chunks' chains run side by side. The digit count of
 * the leading chunk is 7 independent compares, and its leading zeros are shifted out of the
 * word. Every chunk is one 8-byte store; the first may write up to 7 bytes past its digits,
 * which the next chunk overwrites or which lie past value.len in the (hidden, 256-byte)
 * buffer.
 */
#define DEC_CHUNK 100000000u /* 10^8: eight digits */
#define DEC_MAX   20u        /* digits of UINT64_MAX */
_Static_assert(CTX_MAX_VALUE_LEN >= DEC_MAX + 8, "u64_decimal stores 8 bytes at its last digits");

/* v < 10^8 as 8 ASCII digits, zero-padded, the most significant in the lowest byte. */
static inline uint64_t ascii8(uint32_t v)
{
        /* high 32 bits: v / 10^4, low: v % 10^4 (the quotient by a multiply-shift, exact
         * below 10^8) */
        uint64_t x = v + ((1ull << 32) - 10000) * (((uint64_t)v * 109951163) >> 40);
        /* each 32-bit half: its / 100 in the upper, % 100 in the lower 16 bits */
        x += ((1ull << 16) - 100) * (((x * 10486) >> 20) & 0x0000007F0000007Full);
        /* each 16-bit quarter: / 10 in the upper, % 10 in the lower byte */
        x += ((1ull << 8) - 10) * (((x * 103) >> 10) & 0x000F000F000F000Full);
        return __builtin_bswap64(x) | 0x3030303030303030ull; /* first digit first, ASCII */
}

/* v < 10^8 without leading zeros at out (one 8-byte store): its length, 1..8. */
static inline size_t lead8(unsigned char *out, uint32_t v)
{
        size_t n = 1u + (v >= 10) + (v >= 100) + (v >= 1000) + (v >= 10000) + (v >= 100000) +
                   (v >= 1000000) + (v >= 10000000);
        uint64_t w = ascii8(v) >> (8 * (8 - n));
        __builtin_memcpy(out, &w, 8);
        return n;
}

/* v in decimal at out (up to 20 digits; writes at most 20 bytes): its length. */
static inline __attribute__((always_inline)) size_t u64_decimal(unsigned char *out, uint64_t v)
{
        if (v < DEC_CHUNK)
                return lead8(out, (uint32_t)v);
        uint64_t hi = v / DEC_CHUNK;
        uint64_t lo = ascii8((uint32_t)(v % DEC_CHUNK));
        size_t n;
        if (hi < DEC_CHUNK) {
                n = lead8(out, (uint32_t)hi);
        } else {
                n = lead8(out, (uint32_t)(hi / DEC_CHUNK));
                uint64_t mid = ascii8((uint32_t)(hi % DEC_CHUNK));
                __builtin_memcpy(out + n, &mid, 8);
                n += 8;
        }
        __builtin_memcpy(out + n, &lo, 8);
        return n + 8;
}

/* Rewrite mirror entry i (0 or 1) to show v: hide, rewrite, show (see labelset.c). Inline in
 * the span paths: a set-trace went through five calls, each with its frame. */
static inline __attribute__((always_inline)) void mirror_write(struct ctxi_slot *s, unsigned i,
                                                               uint64_t v)
{
        custom_labels_label_t *l = &s->labels[i];
        CTXI_ST(l->key.buf, NULL);
        CTXI_ORDER();
        size_t n = u64_decimal(s->buf[i].val, v);
        CTXI_ST(l->value.len, n);
        CTXI_ORDER();
        CTXI_ST(l->key.buf, (const unsigned char *)s->buf[i].key);
}

static __attribute__((noinline)) void mirror_write_root(struct ctxi_slot *s, uint64_t v)
{
        mirror_write(s, 1, v);
}

/* Called with ctxi_self.busy held. mirror_shown is raised before the record is read: a
 * ctx_set_span/ctx_clear_span from a handler that interrupts us takes its "no mirrors
 * shown, nothing to do" shortcut only when mirror_shown is 0, and otherwise tells us to
 * re-sync as we leave (mirror_update -> mirror_pending). Were the flag raised only after the
 * writes, a handler's clear landing between our record read and the flag would be skipped,
 * and we would go on to show the span it had just cleared. */
static inline __attribute__((always_inline)) void mirror_sync(struct ctxi_tls *t,
                                                              struct ctxi_slot *s)
{
        const struct ctx_span_context *r = &t->span;
        uint32_t was_shown = s->mirror_shown;
        CTXI_ST(s->mirror_shown, 1);
        CTXI_ORDER();
        uint64_t ck = CTXI_LD(r->checksum);
        uint64_t sp = CTXI_LD(r->span_id);
        uint64_t rt = CTXI_LD(r->root_span_id);
        /* a record half-written by code this handler interrupted counts as "no span": the
         * interrupted writer re-syncs when it gets to its own mirror step */
        int show = ck != 0 && ck == ctx_span_checksum(sp, rt) && ctxi_mirroring_on();
        if (!show) {
                if (was_shown) {
                        CTXI_ST(s->labels[0].key.buf, NULL);
                        CTXI_ST(s->labels[1].key.buf, NULL);
                }
                CTXI_ORDER();
                CTXI_ST(s->mirror_shown, 0);
                return;
        }
        if (!was_shown || s->mirror_span != sp)
                mirror_write(s, 0, sp);
        if (!was_shown || s->mirror_root != rt) /* the root changes once per trace */
                mirror_write_root(s, rt);
        s->mirror_span = sp;
        s->mirror_root = rt;
}

void ctxi_mirror_sync(struct ctxi_tls *t, struct ctxi_slot *s)
{
        mirror_sync(t, s);
}

static inline __attribute__((always_inline)) int mirror_update_inline(struct ctxi_tls *t)
{
        if (CTXI_LD(t->self.busy)) {
                /* we interrupted a label write on this thread: it re-syncs when it leaves */
                CTXI_ST(t->self.mirror_pending, 1);
                return 0;
        }
        int err = ctxi_enter(t);
        if (err)
                return err;
        struct ctxi_slot *s;
        if (ctxi_mirroring_on()) {
                s = ctxi_thread_slot(t, &err);
        } else {
                s = t->self.cur;
        }
        if (s)
                mirror_sync(t, s);
        ctxi_leave(t);
        return err;
}

/* Out of line for the paths that reach the mirrors through a tail call (ctx_set_span keeps
 * its common path a leaf) or rarely (clear-span); set-trace inlines it. */
static __attribute__((noinline)) int mirror_update(struct ctxi_tls *t)
{
        return mirror_update_inline(t);
}

/* The span record and its mirrors (the part of ctx_set_trace that existed before OTel). */
static inline __attribute__((always_inline)) int span_and_mirrors(struct ctxi_tls *t, unsigned abis,
                                                                  uint64_t span_id,
                                                                  uint64_t root_span_id,
                                                                  int inline_mirrors)
{
        if (abis & CTX_ABI_SPAN_RECORD)
                ctxi_span_write(t, span_id, root_span_id, ctx_span_checksum(span_id, root_span_id));
        /* mirroring off: nothing to do unless this thread's set still shows mirrors from
         * before, or a mirror sync this call interrupted is in progress (ctxi_mirror_sync) */
        if (!ctxi_mirrors_needed(t, abis))
                return 0;
        return inline_mirrors ? mirror_update_inline(t) : mirror_update(t);
}

static int is_zero16(const uint8_t *p)
{
        uint64_t a, b;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        return (a | b) == 0;
}

/* ctx_set_trace, inlined into both entry points (ctx_set_span: trace_id NULL, a constant
 * that removes the trace branch). inline_mirrors: the mirror update inline (ctx_set_trace,
 * where it is the common case) or called (set-span's slow path). */
static inline __attribute__((always_inline)) int set_trace(const uint8_t *trace_id,
                                                           uint64_t span_id, uint64_t root_span_id,
                                                           uint8_t trace_flags, int inline_mirrors)
{
        struct ctxi_tls *t = ctxi_tls_addr(); /* the one TLS address of the whole call */
        unsigned abis = __atomic_load_n(&ctxi_abis, __ATOMIC_RELAXED);
        int err = 0;
        if (abis & CTX_ABI_OTEL_THREAD) {
                struct ctxi_trace tr = {{0}, {0}, 0};
                if (trace_id && span_id && !is_zero16(trace_id)) {
                        memcpy(tr.trace_id, trace_id, sizeof(tr.trace_id));
                        uint64_t be = __builtin_bswap64(span_id);
                        memcpy(tr.span_id, &be, sizeof(tr.span_id));
                        tr.flags = trace_flags;
                        err = ctxi_otel_set_trace(t, &tr);
                } else if (!ctxi_otel_shows_no_trace(t)) {
                        err = ctxi_otel_set_trace(t, &tr);
                }
        }
        int e2 = span_and_mirrors(t, abis, span_id, root_span_id, inline_mirrors);
        return err ? err : e2;
}

int ctx_set_trace(const uint8_t trace_id[16], uint64_t span_id, uint64_t root_span_id,
                  uint8_t trace_flags)
{
        return set_trace(trace_id, span_id, root_span_id, trace_flags, 1);
}

static __attribute__((noinline)) int set_span_slow(uint64_t span_id, uint64_t root_span_id)
{
        return set_trace(NULL, span_id, root_span_id, 0, 0);
}

/* set_trace(NULL, ...) shaped as a leaf: every case that needs more than the span record's
 * four stores leaves through a tail call (the OTel record shows a trace to clear: the whole
 * call again, out of line; the mirrors: mirror_update), so the common path pushes nothing.
 * The tests are ctx_inline.h's, one hinted branch each: the common case is one straight run
 * down to the `ret`. */
int ctx_set_span(uint64_t span_id, uint64_t root_span_id)
{
        struct ctxi_tls *t = ctxi_tls_addr();
        unsigned abis = __atomic_load_n(&ctxi_abis, __ATOMIC_RELAXED);
        if (__builtin_expect(ctxi_span_needs_otel(t, abis), 0))
                return set_span_slow(span_id, root_span_id);
        if (__builtin_expect(abis & CTX_ABI_SPAN_RECORD, CTX_ABI_SPAN_RECORD))
                ctxi_span_write(t, span_id, root_span_id, ctx_span_checksum(span_id, root_span_id));
        if (__builtin_expect(ctxi_span_needs_mirrors(t, abis), 0))
                return mirror_update(t);
        return 0;
}

int ctx_clear_span(void)
{
        struct ctxi_tls *t = ctxi_tls_addr();
        int err = 0;
        if (ctxi_on(CTX_ABI_OTEL_THREAD) && CTXI_LD(t->otel_ptr) && !ctxi_otel_shows_no_trace(t)) {
                static const struct ctxi_trace none;
                err = ctxi_otel_set_trace(t, &none);
        }
        /* the final checksum store (0 again) matters when a handler set a span after the
         * first one: the ids read back as 0, yet without it the record would end as
         * {0, 0, h(B,Br)} (torn to a reader) instead of "no span" */
        if (ctxi_on(CTX_ABI_SPAN_RECORD))
                ctxi_span_write(t, 0, 0, 0);
        /* no mirrors shown and no mirror sync in progress (ctxi_mirror_sync): nothing to hide */
        if (!ctxi_mirrors_shown(t))
                return err;
        int e2 = mirror_update(t);
        return err ? err : e2;
}

int ctx_clear_trace(void)
{
        return ctx_clear_span();
}

int ctx_set_tag(unsigned slot, uint32_t value)
{
        if (slot >= CTX_SPAN_TAGS)
                return -EINVAL;
        CTXI_ST(ctxi_span.tags[slot], value);
        return 0;
}
