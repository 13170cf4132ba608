/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ctx_read.bpf.h — the thread-context readers every BPF program of ctxprof shares: the
 * address of a thread-local variable (static TLS or the DTV walk) and bounded copies of the
 * span record, the Custom Labels v1 set, the OpenTelemetry thread context record
 * (otel_thread_ctx_v1, OTEP 4947) and a Go goroutine's pprof labels into a sample record.
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
 * A Go program's goroutine labels (ctxprof/tls_target.h, struct ctxprof_go_layout): the
 * sampled thread's goroutine, its M's user goroutine (curg: the one running, whatever the
 * thread is doing for it now), curg's labels map. The map's buckets are gathered into the
 * raw entries the Custom Labels reader takes (struct cl_label: the same {len, ptr} pairs),
 * then read_label copies keys and values as for any label set. A map that is growing, a
 * fault, or fewer entries than its count (changed while read) gives no labels, counted.
 */
#define GO_HMAP_HEAD       32 /* count @0, B @9, buckets @16, oldbuckets @24 */
#define GO_HMAP_B          9
#define GO_HMAP_BUCKETS    16
#define GO_HMAP_OLD        24
#define GO_BUCKET_SIZE     272
#define GO_BUCKET_KEYS     8
#define GO_BUCKET_VALUES   136
#define GO_BUCKET_OVERFLOW 264
#define GO_STRING          16 /* {ptr, len} */
#define GO_SLOTS           8
#define GO_MIN_TOPHASH     5  /* tophash values below mark an empty or moved slot */
#define GO_B_MAX           3  /* 8 buckets: a map past this holds > 50 labels */
#define GO_BUCKETS_MAX     16 /* buckets visited, overflow buckets included */
_Static_assert(GO_BUCKET_SIZE <= LABELS_RAW_OFF, "a bucket is read below the raw entries");

/* The walk's state lives in the record (map memory), past the bucket being read: values the
 * verifier would track precisely on the stack would make every slot of every iteration a new
 * state (600k instructions verified instead of 10k). */
struct go_walk {
        __u64 next;     /* the bucket to read next, 0 when done */
        __u64 base;     /* the bucket array */
        __u32 nbuckets; /* 1 << B */
        __u32 idx;      /* the base bucket being read */
        __u32 n;        /* full slots seen; the first CTXPROF_MAX_LABELS gathered */
        __u32 fault;
};
#define GO_WALK_OFF GO_BUCKET_SIZE
_Static_assert(GO_WALK_OFF + sizeof(struct go_walk) <= LABELS_RAW_OFF,
               "the walk's state is below the raw entries");

struct go_ctx {
        __u8 *part; /* the labels part: a bucket at its start, then the walk's state */
};

/* bpf_loop callback: slot j of the bucket at the part's start, when full, into the raw
 * entries. */
static long go_slot(__u32 j, void *arg)
{
        __u8 *b = ((struct go_ctx *)arg)->part;
        struct go_walk *w = (struct go_walk *)(b + GO_WALK_OFF);
        struct cl_label *l;
        __u64 *k, *v;
        __u32 n;

        /* the bound as the verifier sees it: the compiler may not fold the mask into the
         * test above and then index with an unchecked copy of j */
        asm volatile("" : "+r"(j));
        j &= GO_SLOTS - 1;
        if (b[j] < GO_MIN_TOPHASH)
                return 0;
        n = w->n;
        w->n = n + 1;
        if (n >= CTXPROF_MAX_LABELS)
                return 0;
        k = (__u64 *)(b + GO_BUCKET_KEYS + j * GO_STRING);
        v = (__u64 *)(b + GO_BUCKET_VALUES + j * GO_STRING);
        l = (struct cl_label *)(b + LABELS_RAW_OFF + n * sizeof(*l));
        l->key_buf = k[0];
        l->key_len = k[1];
        l->val_buf = v[0];
        l->val_len = v[1];
        return 0;
}

/* bpf_loop callback: one bucket's full slots into the raw entries, then where to go next
 * (its overflow bucket, else the next base bucket). */
static long go_bucket(__u32 i, void *arg)
{
        __u8 *b = ((struct go_ctx *)arg)->part;
        struct go_walk *w = (struct go_walk *)(b + GO_WALK_OFF);
        __u64 ovf;

        if (!w->next)
                return 1;
        if (bpf_probe_read_user(b, GO_BUCKET_SIZE, (void *)w->next)) {
                w->fault = 1;
                return 1;
        }
        bpf_loop(GO_SLOTS, go_slot, arg, 0);
        ovf = *(__u64 *)(b + GO_BUCKET_OVERFLOW);
        if (ovf)
                w->next = ovf;
        else if (++w->idx < w->nbuckets)
                w->next = w->base + (__u64)w->idx * GO_BUCKET_SIZE;
        else
                w->next = 0;
        return 0;
}

/* One pointer of the target: 0 when it is NULL or unreadable (*fault set). */
static __always_inline __u64 go_ptr(__u64 addr, int *fault)
{
        __u64 v = 0;

        if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
                *fault = 1;
        return v;
}

/* The goroutine's labels into the labels part at buf + pos (only when no Custom Labels set
 * was read). Returns where the part ends. */
static __always_inline __u32 read_go_labels(struct ctxprof_sample_rec *r, __u8 *buf, __u32 pos,
                                            const struct ctxprof_tls_target *t, __u64 tp,
                                            struct ctxprof_counters *c)
{
        const struct ctxprof_go_layout *go = &t->go;
        struct labels_ctx x = {.r = r, .c = c, .bulk = 1};
        struct go_ctx gc;
        struct go_walk *w;
        __u64 p, nlabels, n;
        int fault = 0;
        __u32 len;
        __u8 b;

        if (go->kind != CTXPROF_GO_LABELS_HMAP || (r->flags & CTXPROF_SF_LABELSET) ||
            pos > LABELS_POS_MAX)
                return pos;
        gc.part = buf + pos;
        w = (struct go_walk *)(gc.part + GO_WALK_OFF);
        p = go_ptr(tp + (__s64)go->g_tp_offset, &fault); /* the thread's g */
        if (p)
                p = go_ptr(p + go->g_m, &fault); /* its m */
        if (p)
                p = go_ptr(p + go->m_curg, &fault); /* the user goroutine on it */
        if (p)
                p = go_ptr(p + go->g_labels, &fault); /* *labelMap */
        if (p)
                p = go_ptr(p, &fault); /* the map: *hmap */
        if (fault)
                goto torn;
        if (!p)
                return pos; /* in the scheduler, or a goroutine without labels */
        if (bpf_probe_read_user(gc.part, GO_HMAP_HEAD, (void *)p))
                goto torn;
        nlabels = *(__u64 *)gc.part;
        b = gc.part[GO_HMAP_B];
        w->base = *(__u64 *)(gc.part + GO_HMAP_BUCKETS);
        if (!nlabels)
                return pos;
        if (*(__u64 *)(gc.part + GO_HMAP_OLD) || b > GO_B_MAX || !w->base)
                goto torn; /* growing, or larger than any label set we keep */
        w->next = w->base;
        w->nbuckets = 1u << b;
        w->idx = 0;
        w->n = 0;
        w->fault = 0;
        bpf_loop(GO_BUCKETS_MAX, go_bucket, &gc, 0);
        n = w->n;
        if (w->fault || w->next || n != nlabels)
                goto torn;
        r->flags |= CTXPROF_SF_LABELSET | CTXPROF_SF_GO_LABELS;
        r->label_count = nlabels;
        x.n = n;
        if (x.n > CTXPROF_MAX_LABELS) {
                x.n = CTXPROF_MAX_LABELS;
                r->flags |= CTXPROF_SF_LABELS_CUT;
        }
        x.part = gc.part;
        bpf_loop(CTXPROF_MAX_LABELS, read_label, &x, 0);
        count(c, CTXPROF_CNT_GO_LABELS);
        len = r->labels_len;
        if (len > CTXPROF_LABELS_BYTES_MAX)
                len = CTXPROF_LABELS_BYTES_MAX; /* never: the loop stops before */
        return pos + len;
torn:
        count(c, CTXPROF_CNT_GO_TORN);
        return pos;
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
