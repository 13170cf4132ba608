/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ctx_read.bpf.h — the thread-context readers every BPF program of ctxprof shares: the
 * address of a thread-local variable (static TLS or the DTV walk) and bounded copies of the
 * span record, the Custom Labels v1 set and the OpenTelemetry thread context record
 * (otel_thread_ctx_v1, OTEP 4947) into a sample record.
 *
 * Included by exactly one BPF object per skeleton (static functions only, no maps). It copies
 * raw bytes and lengths and never interprets them (no checksum, no duplicate-key rule); every
 * failed read sets an error bit in the record and bumps a counter.
 */
#ifndef CTXPROF_CTX_READ_BPF_H
#define CTXPROF_CTX_READ_BPF_H

#include "ctxprof/tls_target.h"
#include "ctxprof/sample.h"

/* Raw Custom Labels v1 layouts (LP64): see include/ctx/abi.h. */
struct cl_labelset {
        __u64 storage;
        __u64 count;
        __u64 capacity;
};
struct cl_label {
        __u64 key_len;
        __u64 key_buf;
        __u64 val_len;
        __u64 val_buf;
};

static __always_inline void count(struct ctxprof_counters *c, int idx)
{
        if (c && idx >= 0 && idx < CTXPROF_CNT_MAX)
                c->c[idx]++;
}

/* Address of a thread-local variable of the sampled thread; -1 = none or unreadable. */
static __always_inline int tls_address(const struct ctxprof_tls_var *v,
                                       const struct ctxprof_dtv_layout *d, __u64 tp, __u64 *addr)
{
        __u64 dtv, len, blk;

        if (v->mode == CTXPROF_TLS_STATIC) {
                *addr = tp + v->tp_offset;
                return 0;
        }
        if (v->mode != CTXPROF_TLS_DTV || !v->module)
                return -1;
        if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(tp + (__s64)d->dtv_offset)))
                return -1;
        if (d->has_len) {
                if (bpf_probe_read_user(&len, sizeof(len),
                                        (void *)(dtv + (__s64)d->len_index * (__s64)v->dtv_stride)))
                        return -1;
                /* glibc: valid module ids are 1..dtv[-1]; musl: 1..dtv[0] */
                if (v->module > len)
                        return -1;
        }
        if (bpf_probe_read_user(&blk, sizeof(blk), (void *)(dtv + v->module * v->dtv_stride)))
                return -1;
        if (blk == 0 || blk == (__u64)-1)
                return -1;
        *addr = blk + v->offset;
        return 0;
}

static __always_inline void read_span(struct ctxprof_sample_rec *r,
                                      const struct ctxprof_tls_target *t, __u64 tp,
                                      struct ctxprof_counters *c)
{
        __u64 addr;

        if (t->span.mode == CTXPROF_TLS_NONE)
                return;
        if (tls_address(&t->span, &t->dtv, tp, &addr)) {
                r->errors |= CTXPROF_SE_SPAN_ADDR;
                count(c, CTXPROF_CNT_SPAN_FAULT);
                return;
        }
        /* One copy of the three words: the checksum covers what this copy saw. */
        if (bpf_probe_read_user(&r->span, sizeof(r->span), (void *)addr)) {
                r->errors |= CTXPROF_SE_SPAN_READ;
                count(c, CTXPROF_CNT_SPAN_FAULT);
                return;
        }
        r->flags |= CTXPROF_SF_SPAN_READ;
}

static __always_inline void read_labels(struct ctxprof_sample_rec *r,
                                        const struct ctxprof_tls_target *t, __u64 tp,
                                        struct ctxprof_counters *c)
{
        struct cl_labelset ls;
        struct cl_label l;
        __u64 addr, set, n;
        int i;

        if (t->labels.mode == CTXPROF_TLS_NONE)
                return;
        if (tls_address(&t->labels, &t->dtv, tp, &addr)) {
                r->errors |= CTXPROF_SE_LABELS_ADDR;
                count(c, CTXPROF_CNT_LABELSET_FAULT);
                return;
        }
        if (bpf_probe_read_user(&set, sizeof(set), (void *)addr)) {
                r->errors |= CTXPROF_SE_LABELS_READ;
                count(c, CTXPROF_CNT_LABELSET_FAULT);
                return;
        }
        if (!set)
                return; /* NULL set: no labels */
        if (bpf_probe_read_user(&ls, sizeof(ls), (void *)set)) {
                r->errors |= CTXPROF_SE_LABELS_READ;
                count(c, CTXPROF_CNT_LABELSET_FAULT);
                return;
        }
        r->flags |= CTXPROF_SF_LABELSET;
        r->label_count = ls.count;
        n = ls.count;
        if (n > CTXPROF_MAX_LABELS) {
                n = CTXPROF_MAX_LABELS;
                r->flags |= CTXPROF_SF_LABELS_CUT;
        }
        r->n_labels = n;
        for (i = 0; i < CTXPROF_MAX_LABELS; i++) {
                struct ctxprof_label_rec *lr = &r->labels[i];
                __u64 len;

                if (i >= n)
                        break;
                if (bpf_probe_read_user(&l, sizeof(l), (void *)(ls.storage + i * sizeof(l)))) {
                        lr->flags = CTXPROF_LF_ENTRY_FAULT;
                        count(c, CTXPROF_CNT_LABEL_FAULT);
                        continue;
                }
                lr->flags = CTXPROF_LF_PRESENT;
                lr->key_len = l.key_len;
                lr->val_len = l.val_len;
                if (!l.key_buf) {
                        lr->flags |= CTXPROF_LF_KEY_NULL;
                        continue;
                }
                len = l.key_len;
                if (len > CTXPROF_LABEL_KEY_MAX)
                        len = CTXPROF_LABEL_KEY_MAX;
                if (bpf_probe_read_user(lr->key, len, (void *)l.key_buf)) {
                        lr->flags |= CTXPROF_LF_KEY_FAULT;
                        count(c, CTXPROF_CNT_LABEL_FAULT);
                        continue;
                }
                if (!l.val_buf) {
                        lr->flags |= CTXPROF_LF_VAL_NULL;
                        continue;
                }
                len = l.val_len;
                if (len > CTXPROF_LABEL_VAL_MAX)
                        len = CTXPROF_LABEL_VAL_MAX;
                if (bpf_probe_read_user(lr->val, len, (void *)l.val_buf)) {
                        lr->flags |= CTXPROF_LF_VAL_FAULT;
                        count(c, CTXPROF_CNT_LABEL_FAULT);
                }
        }
}

/*
 * OTEP 4947: otel_thread_ctx_v1 is a pointer to {trace_id[16], span_id[8], valid, trace_flags,
 * u16 attrs_data_size, entries}. Two copies: the 28-byte header, then (only when valid == 1
 * and the entries fit the OTEP's 640-byte budget) exactly attrs_data_size bytes of entries.
 * A record whose size says more is copied without entries and marked CUT.
 */
#define OTEL_VALID_OFF 24
#define OTEL_SIZE_OFF  26
#define OTEL_ATTRS_MAX (CTXPROF_OTEL_REC_MAX - CTXPROF_OTEL_HDR)

static __always_inline void read_otel(struct ctxprof_sample_rec *r,
                                      const struct ctxprof_tls_target *t, __u64 tp,
                                      struct ctxprof_counters *c)
{
        struct ctxprof_otel_raw *o = &r->otel;
        __u64 addr, ptr;
        __u32 size;

        if (t->otel.mode == CTXPROF_TLS_NONE)
                return;
        if (tls_address(&t->otel, &t->dtv, tp, &addr)) {
                r->errors |= CTXPROF_SE_OTEL_ADDR;
                count(c, CTXPROF_CNT_OTEL_FAULT);
                return;
        }
        if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)addr))
                goto fault;
        if (!ptr)
                return; /* no record: no context */
        o->ptr = ptr;
        if (bpf_probe_read_user(o->rec, CTXPROF_OTEL_HDR, (void *)ptr))
                goto fault;
        o->len = CTXPROF_OTEL_HDR;
        r->flags |= CTXPROF_SF_OTEL;
        if (o->rec[OTEL_VALID_OFF] != 1)
                return; /* being updated, or not a record: user space decides */
        size = o->rec[OTEL_SIZE_OFF] | (__u32)o->rec[OTEL_SIZE_OFF + 1] << 8;
        if (size > OTEL_ATTRS_MAX) {
                r->flags |= CTXPROF_SF_OTEL_CUT;
                return;
        }
        if (!size)
                return;
        if (bpf_probe_read_user(o->rec + CTXPROF_OTEL_HDR, size, (void *)(ptr + CTXPROF_OTEL_HDR)))
                goto fault;
        o->len = CTXPROF_OTEL_HDR + size;
        return;
fault:
        r->flags &= ~CTXPROF_SF_OTEL;
        r->errors |= CTXPROF_SE_OTEL_READ;
        count(c, CTXPROF_CNT_OTEL_FAULT);
}

#endif /* CTXPROF_CTX_READ_BPF_H */
