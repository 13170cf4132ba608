/* SPDX-License-Identifier: MIT */
/*
 * record_view.c — splitting a sample ring record into its parts (see record_view.h). Owns the
 * checks of every count and length against the caps and the record's size; must never
 * point past the record, never trust a length it has not checked, never print.
 */
#include <errno.h>
#include <string.h>

#include "engine/record_view.h"

/* The head's size for a record type, 0 for a type that is not a sample record. */
static size_t head_size(uint32_t type)
{
        switch (type) {
        case CTXPROF_REC_SAMPLE:
                return sizeof(struct ctxprof_sample_rec);
        case CTXPROF_REC_SAMPLE_COPY:
                return sizeof(struct ctxprof_sample_copy_rec);
        case CTXPROF_REC_OFFCPU:
                return sizeof(struct ctxprof_offcpu_rec);
        default:
                return 0;
        }
}

/* The labels part (len bytes at p, n entries) into v->labels. 0, or -1 when the entries do
 * not tile it exactly within the caps. */
static int split_labels(const uint8_t *p, size_t len, unsigned n, struct record_view *v)
{
        size_t off = 0;
        unsigned i;

        for (i = 0; i < n; i++) {
                const struct ctxprof_label_rec *h;
                size_t sz;

                if (len - off < sizeof(*h))
                        return -1;
                h = (const struct ctxprof_label_rec *)(p + off);
                if (h->key_bytes > CTXPROF_LABEL_KEY_MAX || h->val_bytes > CTXPROF_LABEL_VAL_MAX)
                        return -1;
                sz = CTXPROF_LABEL_REC_SIZE((size_t)h->key_bytes, (size_t)h->val_bytes);
                if (len - off < sz)
                        return -1;
                v->labels[i].h = h;
                v->labels[i].key = p + off + sizeof(*h);
                v->labels[i].val = v->labels[i].key + h->key_bytes;
                off += sz;
        }
        return off == len ? 0 : -1;
}

int record_view_parse(const void *data, size_t size, struct record_view *v)
{
        const struct ctxprof_sample_rec *r = data;
        const uint8_t *p = data;
        size_t head, pos, otel_part;

        if (size < sizeof(*r) || ((uintptr_t)data & (CTXPROF_REC_ALIGN - 1)))
                return -EBADMSG;
        head = head_size(r->type);
        if (!head || size < head || r->len != size || r->n_ustack > CTXPROF_MAX_USTACK ||
            r->n_kstack > CTXPROF_MAX_KSTACK || r->n_labels > CTXPROF_MAX_LABELS ||
            r->labels_len > CTXPROF_LABELS_BYTES_MAX || r->otel_len > CTXPROF_OTEL_REC_MAX)
                return -EBADMSG;
        memset(v, 0, sizeof(*v));
        v->r = r;
        if (r->type == CTXPROF_REC_SAMPLE_COPY)
                v->copy = data;
        if (r->type == CTXPROF_REC_OFFCPU)
                v->off = data;
        /* every part is capped above: no sum below can overflow */
        pos = head;
        v->n_ustack = r->n_ustack;
        v->n_kstack = r->n_kstack;
        v->ustack = (const uint64_t *)(p + pos);
        pos += sizeof(uint64_t) * v->n_ustack;
        v->kstack = (const uint64_t *)(p + pos);
        pos += sizeof(uint64_t) * v->n_kstack;
        if (size - head < pos - head + r->labels_len)
                return -EBADMSG;
        if (split_labels(p + pos, r->labels_len, r->n_labels, v))
                return -EBADMSG;
        v->n_labels = r->n_labels;
        pos += r->labels_len;
        otel_part = CTXPROF_REC_ROUND((size_t)r->otel_len);
        if (size - pos < otel_part)
                return -EBADMSG;
        v->otel = p + pos;
        v->otel_len = r->otel_len;
        pos += otel_part;
        if (v->copy) {
                if (v->copy->stack_len > CTXPROF_STACK_COPY || size - pos != v->copy->stack_len)
                        return -EBADMSG;
                v->stack = p + pos;
                v->stack_len = (size_t)v->copy->stack_len;
                pos += v->stack_len;
        }
        return pos == size ? 0 : -EBADMSG;
}
