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

/*
 * Where the variable parts of a record may start (ctxprof/sample.h). Every record is built in
 * a map value of at least CTXPROF_REC_CTX_MAX bytes; these bounds, checked before each
 * write at a computed offset, are what shows the verifier that it stays inside.
 */
#define LABELS_POS_MAX (CTXPROF_REC_HEAD_MAX + CTXPROF_STACKS_BYTES_MAX)
#define OTEL_POS_MAX   (LABELS_POS_MAX + CTXPROF_LABELS_BYTES_MAX)

/* The state of the labels loop. Its running offset lives in the record (r->labels_len, map
 * memory), not here: a scalar the verifier would track precisely across bpf_loop
 * iterations would never let their states converge. */
struct labels_ctx {
        struct ctxprof_sample_rec *r;
        __u8 *part; /* where the labels part starts in the record */
        __u64 storage;
        __u64 n;
        struct ctxprof_counters *c;
        int bulk; /* the n entries were read at once, to part + LABELS_RAW_OFF */
};

/*
 * The labelset's entries are read in one copy where they can be (one bpf_probe_read_user
 * instead of one per entry), into the end of the room the labels part may take. Entry i's
 * output ends by (i + 1) * CTXPROF_LABEL_REC_MAX, and the raw entries after i start at
 * LABELS_RAW_OFF + (i + 1) * sizeof(struct cl_label): a label record of at least 32 bytes at
 * its cap keeps every raw entry intact until it is read.
 */
#define LABELS_RAW_OFF (CTXPROF_LABELS_BYTES_MAX - CTXPROF_MAX_LABELS * sizeof(struct cl_label))
_Static_assert(CTXPROF_LABEL_REC_MAX >= sizeof(struct cl_label),
               "raw entries are never overwritten before they are read");

/* bpf_loop callback: labelset entry i after the entries before it: its head, then the key and
 * value bytes that could be read. */
static long read_label(__u32 i, void *arg)
{
        struct labels_ctx *x = arg;
        struct ctxprof_label_rec *lr;
        __u32 off, kb = 0, vb = 0;
        struct cl_label l;
        __u64 len;

        off = x->r->labels_len;
        if (i >= x->n || off > CTXPROF_LABELS_BYTES_MAX - CTXPROF_LABEL_REC_MAX)
                return 1;
        if (i >= CTXPROF_MAX_LABELS)
                return 1;
        if (x->bulk)
                __builtin_memcpy(&l, x->part + LABELS_RAW_OFF + i * sizeof(l), sizeof(l));
        lr = (struct ctxprof_label_rec *)(x->part + off);
        lr->key_len = 0;
        lr->val_len = 0;
        if (!x->bulk && bpf_probe_read_user(&l, sizeof(l), (void *)(x->storage + i * sizeof(l)))) {
                lr->flags = CTXPROF_LF_ENTRY_FAULT;
                count(x->c, CTXPROF_CNT_LABEL_FAULT);
                goto out;
        }
        lr->flags = CTXPROF_LF_PRESENT;
        lr->key_len = l.key_len;
        lr->val_len = l.val_len;
        if (!l.key_buf) {
                lr->flags |= CTXPROF_LF_KEY_NULL;
                goto out;
        }
        len = l.key_len;
        if (len > CTXPROF_LABEL_KEY_MAX)
                len = CTXPROF_LABEL_KEY_MAX;
        if (bpf_probe_read_user(x->part + off + sizeof(*lr), len, (void *)l.key_buf)) {
                lr->flags |= CTXPROF_LF_KEY_FAULT;
                count(x->c, CTXPROF_CNT_LABEL_FAULT);
                goto out;
        }
        kb = len;
        if (!l.val_buf) {
                lr->flags |= CTXPROF_LF_VAL_NULL;
                goto out;
        }
        len = l.val_len;
        if (len > CTXPROF_LABEL_VAL_MAX)
                len = CTXPROF_LABEL_VAL_MAX;
        if (bpf_probe_read_user(x->part + off + sizeof(*lr) + kb, len, (void *)l.val_buf)) {
                lr->flags |= CTXPROF_LF_VAL_FAULT;
                count(x->c, CTXPROF_CNT_LABEL_FAULT);
                goto out;
        }
        vb = len;
out:
        lr->key_bytes = kb;
        lr->val_bytes = vb;
        x->r->labels_len = off + CTXPROF_LABEL_REC_SIZE(kb, vb);
        x->r->n_labels = i + 1;
        return 0;
}

/* The Custom Labels set into the labels part, which starts at buf + pos (r == buf). Returns
 * where the part ends. */
static __always_inline __u32 read_labels(struct ctxprof_sample_rec *r, __u8 *buf, __u32 pos,
                                         const struct ctxprof_tls_target *t, __u64 tp,
                                         struct ctxprof_counters *c)
{
        struct labels_ctx x = {.r = r, .c = c};
        struct cl_labelset ls;
        __u64 addr, set;
        __u32 len;

        if (t->labels.mode == CTXPROF_TLS_NONE || pos > LABELS_POS_MAX)
                return pos;
        if (tls_address(&t->labels, &t->dtv, tp, &addr)) {
                r->errors |= CTXPROF_SE_LABELS_ADDR;
                count(c, CTXPROF_CNT_LABELSET_FAULT);
                return pos;
        }
        if (bpf_probe_read_user(&set, sizeof(set), (void *)addr)) {
                r->errors |= CTXPROF_SE_LABELS_READ;
                count(c, CTXPROF_CNT_LABELSET_FAULT);
                return pos;
        }
        if (!set)
                return pos; /* NULL set: no labels */
        if (bpf_probe_read_user(&ls, sizeof(ls), (void *)set)) {
                r->errors |= CTXPROF_SE_LABELS_READ;
                count(c, CTXPROF_CNT_LABELSET_FAULT);
                return pos;
        }
        r->flags |= CTXPROF_SF_LABELSET;
        r->label_count = ls.count;
        x.n = ls.count;
        if (x.n > CTXPROF_MAX_LABELS) {
                x.n = CTXPROF_MAX_LABELS;
                r->flags |= CTXPROF_SF_LABELS_CUT;
        }
        x.part = buf + pos;
        x.storage = ls.storage;
        /* one copy of every entry; entry by entry (each fault its own) when that fails */
        x.bulk = x.n && !bpf_probe_read_user(x.part + LABELS_RAW_OFF, x.n * sizeof(struct cl_label),
                                             (void *)ls.storage);
        bpf_loop(CTXPROF_MAX_LABELS, read_label, &x, 0);
        len = r->labels_len;
        if (len > CTXPROF_LABELS_BYTES_MAX)
                len = CTXPROF_LABELS_BYTES_MAX; /* never: the loop stops before */
        return pos + len;
}

/*
 * OTEP 4947: otel_thread_ctx_v1 is a pointer to {trace_id[16], span_id[8], valid, trace_flags,
 * u16 attrs_data_size, entries}. Two copies into the otel part at buf + pos: the 28-byte
 * header, then (only when valid == 1) exactly attrs_data_size bytes of entries when they
 * fit the OTEP's 640-byte budget. A record whose size says more is marked CUT and copied up
 * to the budget (user space keeps the complete entries in it). Returns where the part ends
 * (padded to 8).
 */
#define OTEL_VALID_OFF 24
#define OTEL_SIZE_OFF  26
#define OTEL_ATTRS_MAX (CTXPROF_OTEL_REC_MAX - CTXPROF_OTEL_HDR)

static __always_inline __u32 read_otel(struct ctxprof_sample_rec *r, __u8 *buf, __u32 pos,
                                       const struct ctxprof_tls_target *t, __u64 tp,
                                       struct ctxprof_counters *c)
{
        __u32 size, olen = CTXPROF_OTEL_HDR;
        __u64 addr, ptr;
        __u8 *o;

        if (t->otel.mode == CTXPROF_TLS_NONE || pos > OTEL_POS_MAX)
                return pos;
        o = buf + pos;
        if (tls_address(&t->otel, &t->dtv, tp, &addr)) {
                r->errors |= CTXPROF_SE_OTEL_ADDR;
                count(c, CTXPROF_CNT_OTEL_FAULT);
                return pos;
        }
        if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)addr))
                goto fault;
        if (!ptr)
                return pos; /* no record: no context */
        r->otel_ptr = ptr;
        if (bpf_probe_read_user(o, CTXPROF_OTEL_HDR, (void *)ptr))
                goto fault;
        r->otel_len = olen;
        r->flags |= CTXPROF_SF_OTEL;
        if (o[OTEL_VALID_OFF] != 1)
                goto out; /* being updated, or not a record: user space decides */
        size = o[OTEL_SIZE_OFF] | (__u32)o[OTEL_SIZE_OFF + 1] << 8;
        if (size > OTEL_ATTRS_MAX) {
                /* over budget: the budget's worth, whose complete entries user space keeps */
                r->flags |= CTXPROF_SF_OTEL_CUT;
                size = OTEL_ATTRS_MAX;
        }
        if (!size)
                goto out;
        if (bpf_probe_read_user(o + CTXPROF_OTEL_HDR, size, (void *)(ptr + CTXPROF_OTEL_HDR)))
                goto fault;
        olen = CTXPROF_OTEL_HDR + size;
        r->otel_len = olen;
out:
        return pos + CTXPROF_REC_ROUND(olen);
fault:
        r->otel_len = 0;
        r->flags &= ~CTXPROF_SF_OTEL;
        r->errors |= CTXPROF_SE_OTEL_READ;
        count(c, CTXPROF_CNT_OTEL_FAULT);
        return pos;
}

#endif /* CTXPROF_CTX_READ_BPF_H */
