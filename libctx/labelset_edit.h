/* SPDX-License-Identifier: MIT */
/*
 * libctx/labelset_edit.h — the label-set search and the put (replace or add) that every
 * set-label runs, inline so that the public call is one function without calls on its fast
 * path (they were three calls, about a fifth of a set's instructions). Part of labelset.c's
 * concept: the careful in-place edits of one label set; the argument for their store order
 * is at the top of labelset.c. Must never allocate, lock, or let a reader see a key whose
 * value bytes or length are being rewritten.
 */
#ifndef LIBCTX_LABELSET_EDIT_H
#define LIBCTX_LABELSET_EDIT_H

#include "internal.h"

/* Does user entry i (visible) hold key? k: its registry index or CTXI_NO_KEY. An entry whose
 * index is known and differs from a known k holds another key: no byte compare. An entry
 * matched by its bytes learns k (writer-private). */
static inline int holds(struct ctxi_slot *s, size_t i, int k, const char *key, size_t klen)
{
        int ki = s->kidx[i];
        if (k >= 0 && ki >= 0)
                return ki == k;
        if (s->labels[i].key.len != klen || !ctxi_eq_small(s->buf[i].key, key, klen))
                return 0;
        if (k >= 0)
                s->kidx[i] = (int16_t)k;
        return 1;
}

/* The user entry holding key (klen already cut), or -1 and the first hole (-1: none). The
 * entry of the previous set is tried first (a tracer sets the same few keys over and over). */
static inline int ctxi_set_find(struct ctxi_slot *s, int k, const char *key, size_t klen, int *hole)
{
        size_t count = s->set.count, h = s->hint;
        *hole = -1;
        if (h >= CTX_RESERVED_LABELS && h < count && s->labels[h].key.buf &&
            holds(s, h, k, key, klen))
                return (int)h;
        for (size_t i = CTX_RESERVED_LABELS; i < count; i++) {
                if (!s->labels[i].key.buf) {
                        if (*hole < 0)
                                *hole = (int)i;
                        continue;
                }
                if (holds(s, i, k, key, klen)) {
                        s->hint = (uint8_t)i;
                        return (int)i;
                }
        }
        return -1;
}

static inline int ctxi_set_put_at(struct ctxi_slot *s, int i, int hole, int k, const char *key,
                                  size_t klen, const char *val, size_t vlen)
{
        int truncated = 0;
        vlen = ctxi_utf8_cut(val, vlen, CTX_MAX_VALUE_LEN, &truncated);
        if (__builtin_expect(i < 0, 0)) {
                int err = ctxi_set_add(s, hole, k, key, klen, val, vlen);
                return err == 0 && truncated ? CTX_TRUNCATED : err;
        }
        /* replace: hide, rewrite, show */
        custom_labels_label_t *l = &s->labels[i];
        CTXI_ST(l->key.buf, NULL);
        CTXI_ORDER();
        ctxi_copy_small(s->buf[i].val, val, vlen);
        CTXI_ST(l->value.len, vlen);
        CTXI_ORDER();
        CTXI_ST(l->key.buf, (const unsigned char *)s->buf[i].key);
        return truncated ? CTX_TRUNCATED : 0;
}

#endif /* LIBCTX_LABELSET_EDIT_H */
