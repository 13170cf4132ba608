/* SPDX-License-Identifier: MIT */
/*
 * libctx/otel_record.c — the calling thread's OpenTelemetry Thread Context record (OTEP 4947):
 * publishing the pointer once per thread, the trace header and the attribute entries, and the
 * same-thread reentrancy rule for record writes.
 * Must never: allocate, lock or make a system call; let a reader see valid == 1 on a record
 * whose bytes are being rewritten; swap the pointer while the thread lives.
 *
 * Write protocol (OTEP 4947 "flip valid", chosen over swapping the pointer): the pointer is
 * stored once, when the thread takes its home slot, and points to that slot's record until
 * the thread exits. Every update is: valid = 0, ORDER, rewrite fields/entries, ORDER,
 * valid = 1 (ORDER = atomic_signal_fence, a compiler barrier: the OTEP's readers, like ours,
 * only read a stopped or interrupted thread — see labelset.c for the argument). Why not the
 * pointer swap: it needs a second record per thread and a copy of up to 612 attribute bytes
 * on every span change, where the flip costs two byte stores. The price: during an update a
 * reader sees "no record" (valid 0) rather than the old one.
 *
 * Reentrancy: a record write holds ctxi_self.otel_busy. A signal handler on the same thread
 * that sets the trace while it is held must not write (it would leave the interrupted
 * writer's remaining stores on top of its own, with valid = 1: a mixed record). It stores its
 * trace in ctxi_self.pend instead; the interrupted writer applies it before it releases the
 * record (ctxi_otel_leave), so the handler's trace, the later one, is what stays. The same
 * holds for a handler that interrupts the thread's first write while it attaches the slot
 * (there is no record yet): the interrupted write applies the deferred trace when it releases
 * the label-write guard (ctxi_leave_slow). A handler
 * that interrupts another handler's write of pend (signal nesting) gets -EBUSY (counted).
 * Attribute writes from a handler that interrupted a record write get -EBUSY (labels.c) and
 * change nothing, like nested label writes.
 */
#include <string.h>

#include "internal.h"

/* Called while the slot is being attached (ctxi_self.busy held): the record is not reachable
 * yet, so plain stores; then the one pointer store that makes it visible. */
void ctxi_otel_attach(struct ctxi_slot *home)
{
        struct otel_thread_ctx_record *r = &home->otel;
        memset(r, 0, OTEL_THREAD_CTX_HEADER);
        r->valid = OTEL_THREAD_CTX_VALID;
        ctxi_self.otel_trace = 0;
        if (!ctxi_on(CTX_ABI_OTEL_THREAD))
                return;
        CTXI_ORDER();
        CTXI_ST(ctxi_otel_ptr, r);
        CTXI_ORDER();
}

/* Apply deferred traces, then release; re-take if a handler deferred one after the check. */
void ctxi_otel_leave_slow(void)
{
        struct otel_thread_ctx_record *r = &ctxi_self.home->otel;
        for (;;) {
                while (CTXI_LD(ctxi_self.otel_pending)) {
                        /* clear first, copy, re-check: a handler that lands inside the copy
                         * rewrites pend completely and raises the flag again, so a torn
                         * copy is never written (the loop copies again) */
                        struct ctxi_trace t;
                        CTXI_ST(ctxi_self.otel_pending, 0);
                        CTXI_ORDER();
                        t = ctxi_self.pend;
                        CTXI_ORDER();
                        if (CTXI_LD(ctxi_self.otel_pending))
                                continue;
                        ctxi_otel_write_trace(&ctxi_tls, r, &t);
                }
                CTXI_ORDER();
                CTXI_ST(ctxi_self.otel_busy, 0);
                CTXI_ORDER();
                if (__builtin_expect(!CTXI_LD(ctxi_self.otel_pending), 1))
                        return;
                CTXI_ST(ctxi_self.otel_busy, 1);
                CTXI_ORDER();
        }
}

static int defer(const struct ctxi_trace *t)
{
        if (CTXI_LD(ctxi_self.pend_busy)) {
                CTXI_COUNT(busy_rejected);
                return -EBUSY;
        }
        CTXI_ST(ctxi_self.pend_busy, 1);
        CTXI_ORDER();
        ctxi_self.pend = *t;
        CTXI_ORDER();
        CTXI_ST(ctxi_self.otel_pending, 1);
        CTXI_ORDER();
        CTXI_ST(ctxi_self.pend_busy, 0);
        return 0;
}

/* The thread's home slot, taking it if needed (needs the label-write guard to attach). */
static struct ctxi_slot *home_slot(struct ctxi_tls *t, int *err)
{
        struct ctxi_slot *h = t->self.home;
        if (__builtin_expect(h != NULL, 1))
                return h;
        *err = ctxi_enter(t);
        if (*err)
                return NULL;
        ctxi_thread_slot(t, err);
        ctxi_leave(t);
        return t->self.home;
}

/* ctxi_otel_set_trace's every case: the thread's first write, the ABI switched on late, a
 * handler that interrupted a record write. */
int ctxi_otel_set_trace_slow(struct ctxi_tls *t, const struct ctxi_trace *tr)
{
        int err = 0;
        /* a handler that interrupted the thread's first write while it takes the slot (busy
         * held, no record yet): -EBUSY would lose a trace write, so it is deferred like one
         * that lands in a record write; the interrupted code applies it as it leaves
         * (ctxi_leave_slow), or overrides it with its own, later, trace */
        if (!t->self.home && CTXI_LD(t->self.busy))
                return defer(tr);
        struct ctxi_slot *h = home_slot(t, &err);
        if (!h)
                return err;
        if (__builtin_expect(!CTXI_LD(t->otel_ptr), 0)) /* the ABI was switched on later */
                ctxi_otel_attach(h);
        if (CTXI_LD(t->self.otel_busy))
                return defer(tr);
        ctxi_otel_trace_guarded(t, h, tr);
        return 0;
}

int ctxi_otel_fits(const struct otel_thread_ctx_record *r, unsigned k, size_t vlen)
{
        int off = ctxi_otel_find(r, k);
        size_t old = off >= 0 ? 2u + r->attrs_data[off + 1] : 0;
        return r->attrs_data_size - old + 2 + vlen <= OTEL_THREAD_CTX_ATTRS_MAX;
}

/* ctxi_otel_set when the entry is new or changes length: drop it, append it. */
int ctxi_otel_set_moved(struct otel_thread_ctx_record *r, unsigned k, const char *v, size_t vlen,
                        int off)
{
        if (off >= 0)
                ctxi_otel_del(r, k);
        unsigned size = r->attrs_data_size;
        if (size + 2 + vlen > OTEL_THREAD_CTX_ATTRS_MAX)
                return -ENOSPC; /* no room: no entry for k rather than its old value */
        r->attrs_data[size] = (uint8_t)k;
        r->attrs_data[size + 1] = (uint8_t)vlen;
        ctxi_copy_small(&r->attrs_data[size + 2], v, vlen);
        CTXI_ST(r->attrs_data_size, (uint16_t)(size + 2 + vlen));
        return 0;
}

/* Between ctxi_otel_begin and ctxi_otel_end; the entry fits (ctxi_otel_fits). */
void ctxi_otel_put(struct otel_thread_ctx_record *r, unsigned k, const char *v, size_t vlen)
{
        int off = ctxi_otel_find(r, k);
        if (off >= 0 && r->attrs_data[off + 1] == vlen) {
                ctxi_copy_small(&r->attrs_data[off + 2], v, vlen);
                return;
        }
        if (off >= 0)
                ctxi_otel_del(r, k);
        unsigned size = r->attrs_data_size;
        r->attrs_data[size] = (uint8_t)k;
        r->attrs_data[size + 1] = (uint8_t)vlen;
        ctxi_copy_small(&r->attrs_data[size + 2], v, vlen);
        CTXI_ST(r->attrs_data_size, (uint16_t)(size + 2 + vlen));
}

/* Between ctxi_otel_begin and ctxi_otel_end. */
void ctxi_otel_del(struct otel_thread_ctx_record *r, unsigned k)
{
        int off = ctxi_otel_find(r, k);
        if (off < 0)
                return;
        unsigned size = r->attrs_data_size, len = 2u + r->attrs_data[off + 1];
        memmove(&r->attrs_data[off], &r->attrs_data[off + len], size - off - len);
        CTXI_ST(r->attrs_data_size, (uint16_t)(size - len));
}
