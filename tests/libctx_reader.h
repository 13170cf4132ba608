/* SPDX-License-Identifier: MIT */
/*
 * tests/libctx_reader.h — a Custom Labels v1 / span-context reader for libctx's tests, doing
 * exactly what an out-of-process reader does with the raw ABI memory: follow the set pointer,
 * respect count and len, skip NULL keys, first duplicate wins, validate the checksum.
 * Async-signal-safe (no libc calls): the stress test runs it inside a signal handler.
 * Never writes to the memory it reads.
 */
#ifndef TESTS_LIBCTX_READER_H
#define TESTS_LIBCTX_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ctx/abi.h"

extern __thread custom_labels_labelset_t *custom_labels_current_set;
extern __thread struct ctx_span_context ctx_span_context_v1;

#define RD_MAX_LABELS 16 /* a reader's own cap, above libctx's 10 */

struct rd_label {
        const unsigned char *key, *val;
        size_t klen, vlen;
};

struct rd_set {
        int n;          /* distinct visible labels in out[] */
        int hidden;     /* NULL-key entries seen within count */
        int duplicates; /* later duplicates skipped */
        int structural; /* count > cap, NULL value.buf, NULL storage with count */
        struct rd_label l[RD_MAX_LABELS];
};

static inline int rd_bytes_eq(const unsigned char *a, const unsigned char *b, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (a[i] != b[i])
                        return 0;
        return 1;
}

static inline void rd_read_set(const custom_labels_labelset_t *set, struct rd_set *out)
{
        out->n = out->hidden = out->duplicates = out->structural = 0;
        if (!set)
                return;
        const volatile custom_labels_labelset_t *vs = set;
        size_t count = vs->count;
        const custom_labels_label_t *st = vs->storage;
        if (count > RD_MAX_LABELS || (count && !st)) {
                out->structural++;
                return;
        }
        for (size_t i = 0; i < count; i++) {
                const volatile custom_labels_label_t *l = &st[i];
                struct rd_label c = {l->key.buf, l->value.buf, l->key.len, l->value.len};
                if (!c.key) {
                        out->hidden++;
                        continue;
                }
                if (!c.val) {
                        out->structural++;
                        continue;
                }
                int dup = 0;
                for (int j = 0; j < out->n; j++)
                        if (out->l[j].klen == c.klen && rd_bytes_eq(out->l[j].key, c.key, c.klen))
                                dup = 1;
                if (dup) {
                        out->duplicates++;
                        continue;
                }
                out->l[out->n++] = c;
        }
}

static inline const struct rd_label *rd_find(const struct rd_set *s, const char *key)
{
        size_t n = 0;
        while (key[n])
                n++;
        for (int i = 0; i < s->n; i++)
                if (s->l[i].klen == n && rd_bytes_eq(s->l[i].key, (const unsigned char *)key, n))
                        return &s->l[i];
        return NULL;
}

/* 1 = valid span in span/root, 0 = no span (checksum 0), -1 = torn (mismatch) */
static inline int rd_read_span(const struct ctx_span_context *rec, uint64_t *span, uint64_t *root)
{
        const volatile struct ctx_span_context *r = rec;
        struct ctx_span_context c;
        c.span_id = r->span_id;
        c.root_span_id = r->root_span_id;
        c.checksum = r->checksum;
        if (c.checksum == 0)
                return 0;
        if (c.checksum != ctx_span_checksum(c.span_id, c.root_span_id))
                return -1;
        *span = c.span_id;
        *root = c.root_span_id;
        return 1;
}

#endif /* TESTS_LIBCTX_READER_H */
