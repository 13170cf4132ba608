/* SPDX-License-Identifier: MIT */
/*
 * libctx/scoped.c — ctx_with_labels: run a callback with extra labels, then restore the
 * previous set. The scoped set is a copy of the current one in a spare pool slot, extended
 * off to the side and published with one pointer store (a reader sees all extra labels or
 * none); restoring is one pointer store back, then the spare slot returns to the pool.
 * Must never: allocate, lock or make a system call; skip the callback; hand a slot back
 * while it is published; unmap it (pool memory lives forever, so a late reader following
 * the old pointer still reads valid memory).
 */
#include <string.h>

#include "internal.h"

static int merge(int st, int r)
{
        if (r < 0)
                return st < 0 ? st : r;
        if (r > 0 && st == 0)
                return r;
        return st;
}

/* OTel record: save the thread's attributes in the scoped slot's (unpublished) record, then
 * add the scope's labels in one valid 0 -> 1 window (a reader sees all or none of them). */
static int otel_scope_enter(struct ctxi_slot *sc, const ctx_label_kv *labels, size_t n)
{
        struct otel_thread_ctx_record *r = &ctxi_self.home->otel;
        int st = ctxi_otel_enter(&ctxi_tls);
        if (st)
                return st;
        sc->otel.attrs_data_size = r->attrs_data_size;
        memcpy(sc->otel.attrs_data, r->attrs_data, r->attrs_data_size);
        ctxi_otel_begin(r);
        for (size_t i = 0; i < n; i++) {
                const char *k = labels[i].key, *v = labels[i].value;
                if (!k || !v || !*k)
                        continue;
                int idx = ctxi_key_index(k, strnlen(k, CTX_MAX_KEY_LEN + 1));
                int truncated = 0;
                size_t vlen = ctxi_utf8_cut(v, strnlen(v, CTX_MAX_VALUE_LEN + 1),
                                            CTXI_OTEL_VALUE_MAX, &truncated);
                if (idx >= 0 && ctxi_otel_fits(r, (unsigned)idx, vlen)) {
                        ctxi_otel_put(r, (unsigned)idx, v, vlen);
                        continue;
                }
                if (idx >= 0) { /* no room: no entry for the key rather than the old value */
                        ctxi_otel_del(r, (unsigned)idx);
                        CTXI_COUNT(otel_attrs_full);
                }
                st = merge(st, idx < 0 ? idx : -ENOSPC);
        }
        ctxi_otel_end(r);
        ctxi_otel_leave(&ctxi_tls);
        /* with Custom Labels on, their status is the call's (as in labels.c) */
        return ctxi_on(CTX_ABI_CUSTOM_LABELS) ? 0 : st;
}

/* Put the saved attributes back (a nested handler write cannot be in progress: busy). */
static void otel_scope_leave(const struct ctxi_slot *sc)
{
        struct otel_thread_ctx_record *r = &ctxi_self.home->otel;
        if (ctxi_otel_enter(&ctxi_tls))
                return;
        ctxi_otel_begin(r);
        memcpy(r->attrs_data, sc->otel.attrs_data, sc->otel.attrs_data_size);
        CTXI_ST(r->attrs_data_size, sc->otel.attrs_data_size);
        ctxi_otel_end(r);
        ctxi_otel_leave(&ctxi_tls);
}

int ctx_with_labels(const ctx_label_kv *labels, size_t n, void (*fn)(void *), void *arg)
{
        if (!fn)
                return -EINVAL;
        if (!labels && n) {
                fn(arg);
                return -EINVAL;
        }
        int err = ctxi_enter(&ctxi_tls);
        if (err) {
                fn(arg);
                return err;
        }
        struct ctxi_slot *cur = ctxi_thread_slot(&ctxi_tls, &err);
        struct ctxi_slot *sc = cur ? ctxi_pool_get() : NULL;
        if (!sc) {
                if (cur) {
                        CTXI_COUNT(pool_exhausted);
                        err = -ENOMEM;
                }
                ctxi_leave(&ctxi_tls);
                fn(arg);
                return err;
        }
        ctxi_set_copy(sc, cur);
        sc->prev = cur;
        int st = 0;
        for (size_t i = 0; i < n; i++) {
                const char *k = labels[i].key, *v = labels[i].value;
                if (!k || !v || !*k) {
                        st = merge(st, -EINVAL);
                        continue;
                }
                st = merge(st, ctxi_set_put(sc, CTXI_NO_KEY, k, strnlen(k, CTX_MAX_KEY_LEN + 1), v,
                                            strnlen(v, CTX_MAX_VALUE_LEN + 1)));
        }
        int otel = ctxi_on(CTX_ABI_OTEL_THREAD);
        if (otel)
                st = merge(st, otel_scope_enter(sc, labels, n));
        ctxi_publish_set(&ctxi_tls, sc);
        ctxi_leave(&ctxi_tls);

        fn(arg);

        /* fn's own label writes went into sc and are dropped; nested scopes restored theirs */
        CTXI_ST(ctxi_self.busy, 1);
        CTXI_ORDER();
        /* sc is still published: raise its mirror_shown so that a handler's span write during
         * the sync of cur defers to us (see ctxi_mirror_sync); sc is discarded below */
        CTXI_ST(sc->mirror_shown, 1);
        CTXI_ORDER();
        ctxi_mirror_sync(&ctxi_tls,
                         cur); /* cur is unpublished: bring its mirrors up to date first */
        if (otel)
                otel_scope_leave(sc);
        ctxi_publish_set(&ctxi_tls, cur);
        ctxi_pool_put(sc);
        ctxi_leave(&ctxi_tls);
        return st;
}
