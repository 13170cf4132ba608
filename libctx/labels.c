/* SPDX-License-Identifier: MIT */
/*
 * libctx/labels.c — the public label and attribute calls: argument checks, the same-thread
 * reentrancy guards, the calling thread's set, then the careful edits: the Custom Labels
 * entry (labelset.c) and the OTel record entry (otel_record.c), each in the ABIs enabled.
 * Must never allocate, lock or make a system call for a known key; never scan an unbounded
 * string (the _str forms read at most one byte past the limit to find a UTF-8 boundary).
 *
 * Order of one set: label-set search (which also yields the OTel key index once the set has
 * seen the key; else the registry: lookup or lock + republish), OTel guard, Custom
 * Labels entry, OTel entry (between valid 0 and 1). The OTel record holds 612 bytes of
 * attributes: a label that does not fit is left out of it (and its old value removed),
 * counted in ctx_stats.otel_attrs_full. A reader interrupting in between
 * sees each ABI consistent on its own: the Custom Labels entry already new, the OTel record
 * still old (or, during its own update, no OTel record).
 */
#include <string.h>

#include "labelset_edit.h"

/* OTel part of a set (guard held): the entry, or — when the record has no room — no entry
 * for the key at all (never a stale value), counted. 0 or -ENOSPC. */
static inline int otel_put(struct ctxi_tls *t, int k, const char *val, size_t vlen)
{
        struct otel_thread_ctx_record *r = &t->self.home->otel;
        ctxi_otel_begin(r);
        int err = ctxi_otel_set(r, (unsigned)k, val, vlen);
        ctxi_otel_end(r);
        if (__builtin_expect(err == 0, 1))
                return 0;
        CTXI_COUNT(otel_attrs_full);
        return -ENOSPC;
}

/* One set in every enabled ABI, with one TLS address for all of it (t) and one key lookup:
 * the search of the thread's own label set, which the Custom Labels write needs anyway,
 * also yields the key's registry index (kidx, learned at the first set of the key), so the
 * OTel entry needs no hash probe; only a key the set has not seen goes to the registry.
 * k: the registry index if the caller knows it (ctx_set_attr), else CTXI_NO_KEY; otel: write
 * the OTel record. The status is the Custom Labels one when that ABI is on (the OTel value is
 * cut to 255 bytes and may be left out when the record is full, both without changing the
 * status), else the OTel one. Registering a new key (lock, republish) happens here with the
 * label guard held: a handler's label write meanwhile gets -EBUSY, as inside any set. */
static inline __attribute__((always_inline)) int put_all(struct ctxi_tls *t, int k, int otel,
                                                         const char *key, size_t klen,
                                                         const char *val, size_t vlen)
{
        int err = ctxi_enter(t);
        if (err)
                return err;
        struct ctxi_slot *s = ctxi_thread_slot(t, &err);
        if (!s)
                goto out;
        int ktrunc = 0, hole;
        klen = ctxi_utf8_cut(key, klen, CTX_MAX_KEY_LEN, &ktrunc);
        int i = ctxi_set_find(s, k, key, klen, &hole);
        if (otel && k < 0) {
                k = i >= 0 ? s->kidx[i] : CTXI_NO_KEY;
                if (k < 0 && (k = ctxi_key_index(key, klen)) < 0) {
                        err = k;
                        goto out;
                }
                if (i >= 0)
                        s->kidx[i] = (int16_t)k;
        }
        if (otel && (err = ctxi_otel_enter(t)) != 0)
                goto out;
        int labels = ctxi_on(CTX_ABI_CUSTOM_LABELS);
        if (labels) {
                err = ctxi_set_put_at(s, i, hole, k, key, klen, val, vlen);
                if (err == 0 && ktrunc)
                        err = CTX_TRUNCATED;
        }
        if (otel) {
                if (err >= 0) {
                        int truncated = 0;
                        size_t ovlen = ctxi_utf8_cut(val, vlen, CTXI_OTEL_VALUE_MAX, &truncated);
                        int oerr = otel_put(t, k, val, ovlen);
                        if (!labels)
                                err = oerr ? oerr : truncated ? CTX_TRUNCATED : 0;
                }
                ctxi_otel_leave(t);
        }
out:
        ctxi_leave(t);
        return err;
}

int ctx_set_label(const char *key, size_t key_len, const char *val, size_t val_len)
{
        if (!key || key_len == 0 || (!val && val_len))
                return -EINVAL;
        return put_all(ctxi_tls_addr(), CTXI_NO_KEY, ctxi_on(CTX_ABI_OTEL_THREAD), key, key_len,
                       val ? val : "", val_len);
}

int ctx_set_attr(int key_index, const char *val, size_t val_len)
{
        if (key_index < 0 || (unsigned)key_index >= ctxi_key_count() || (!val && val_len))
                return -EINVAL;
        size_t klen;
        const char *key = ctxi_key_name((unsigned)key_index, &klen);
        /* without the OTel ABI the index still names the key: the label search uses it */
        return put_all(ctxi_tls_addr(), key_index, ctxi_on(CTX_ABI_OTEL_THREAD), key, klen,
                       val ? val : "", val_len);
}

int ctx_set_label_str(const char *key, const char *val)
{
        if (!key || !val)
                return -EINVAL;
        return ctx_set_label(key, strnlen(key, CTX_MAX_KEY_LEN + 1), val,
                             strnlen(val, CTX_MAX_VALUE_LEN + 1));
}

/* Remove key k's attribute (OTEL_ALL_KEYS: every attribute) from the thread's OTel record,
 * as one record write. Called inside ctxi_enter. 0 or the -errno of ctxi_otel_enter. */
#define OTEL_ALL_KEYS (-1)
static int otel_remove(struct ctxi_tls *t, int k)
{
        int err = ctxi_otel_enter(t);
        if (err)
                return err;
        struct otel_thread_ctx_record *r = &t->self.home->otel;
        ctxi_otel_begin(r);
        if (k == OTEL_ALL_KEYS)
                CTXI_ST(r->attrs_data_size, 0);
        else
                ctxi_otel_del(r, (unsigned)k);
        ctxi_otel_end(r);
        ctxi_otel_leave(t);
        return 0;
}

int ctx_remove_label(const char *key, size_t key_len)
{
        if (!key || key_len == 0)
                return -EINVAL;
        struct ctxi_tls *t = ctxi_tls_addr();
        int err = ctxi_enter(t);
        if (err)
                return err;
        struct ctxi_slot *cur = t->self.cur;
        int truncated = 0;
        int k = ctxi_key_find(key, ctxi_utf8_cut(key, key_len, CTX_MAX_KEY_LEN, &truncated));
        if (cur && k >= 0 && ctxi_on(CTX_ABI_OTEL_THREAD) && (err = otel_remove(t, k))) {
                ctxi_leave(t);
                return err;
        }
        if (cur) /* no set yet: nothing to remove, and no need to take a slot */
                err = ctxi_set_remove(cur, key, key_len);
        ctxi_leave(t);
        return err;
}

int ctx_remove_label_str(const char *key)
{
        if (!key)
                return -EINVAL;
        return ctx_remove_label(key, strnlen(key, CTX_MAX_KEY_LEN + 1));
}

int ctx_clear_labels(void)
{
        struct ctxi_tls *t = ctxi_tls_addr();
        int err = ctxi_enter(t);
        if (err)
                return err;
        struct ctxi_slot *cur = t->self.cur;
        if (cur && ctxi_on(CTX_ABI_OTEL_THREAD) && (err = otel_remove(t, OTEL_ALL_KEYS))) {
                ctxi_leave(t);
                return err;
        }
        if (cur)
                ctxi_set_clear(cur);
        ctxi_leave(t);
        return 0;
}
