/* SPDX-License-Identifier: MIT */
/*
 * jfr_context_pool.c — label sets as shared chains of ctxprof.types.Context nodes, and the
 * LabelsSnapshot protobuf of a chunk (contract in jfr_context_pool.h). Must never emit a
 * node whose `next` is not already in the pool, a key below JFR_CONTEXT_KEY_MIN, or two
 * nodes with the same (key, value, next).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jfr/jfr_context_pool.h"
#include "jfr/jfr_dict.h"

#define MAX_SET 64 /* labels in one set (callers cap lower) */

/* LabelsSnapshot (pyroscope og/convert/jfr/jfr_labels.proto): field numbers, wire types */
#define PB_LEN(field)    ((uint64_t)(field) << 3 | 2)
#define PB_VARINT(field) ((uint64_t)(field) << 3 | 0)
enum { SNAP_CONTEXTS = 1, SNAP_STRINGS = 2, CONTEXT_LABELS = 1, MAP_KEY = 1, MAP_VALUE = 2 };

struct node {
        uint32_t key_str, val_str, next; /* string indexes, next node key (0 = end) */
};

struct jfr_context_pool {
        uint32_t key_base, str_base;
        struct jfr_strtab strs;  /* label keys and values */
        struct jfr_strtab ids;   /* struct node bytes -> node index */
        struct jfr_u64map heads; /* head keys already listed */
        uint32_t *headv, nheads, head_cap;
        struct jfr_buf entries;
};

struct jfr_context_pool *jfr_context_pool_new(void)
{
        struct jfr_context_pool *p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        jfr_strtab_init(&p->strs);
        jfr_strtab_init(&p->ids);
        jfr_u64map_init(&p->heads);
        jfr_buf_init(&p->entries);
        return p;
}

void jfr_context_pool_free(struct jfr_context_pool *p)
{
        if (!p)
                return;
        jfr_strtab_free(&p->strs);
        jfr_strtab_free(&p->ids);
        jfr_u64map_free(&p->heads);
        jfr_buf_free(&p->entries);
        free(p->headv);
        free(p);
}

void jfr_context_pool_begin(struct jfr_context_pool *p, uint32_t key_base, uint32_t str_base)
{
        p->key_base = key_base < JFR_CONTEXT_KEY_MIN ? JFR_CONTEXT_KEY_MIN : key_base;
        p->str_base = str_base;
        jfr_strtab_clear(&p->strs);
        jfr_strtab_clear(&p->ids);
        jfr_u64map_clear(&p->heads);
        jfr_buf_reset(&p->entries);
        p->nheads = 0;
}

uint32_t jfr_context_pool_nodes(const struct jfr_context_pool *p)
{
        return p->key_base + p->ids.n;
}

uint32_t jfr_context_pool_strings(const struct jfr_context_pool *p)
{
        return p->str_base + p->strs.n;
}

const struct jfr_buf *jfr_context_pool_entries(const struct jfr_context_pool *p)
{
        return &p->entries;
}

static int by_key(const void *a, const void *b)
{
        const struct jfr_context_label *x = a, *y = b;
        size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
        int r = memcmp(x->key, y->key, n);
        return r ? r : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static struct node node_at(const struct jfr_context_pool *p, uint32_t idx)
{
        struct node nd;
        memcpy(&nd, jfr_strtab_str(&p->ids, idx), sizeof(nd));
        return nd;
}

/* Key of the node (k, v, next), appending it to the pool when new. */
static int intern_node(struct jfr_context_pool *p, const struct jfr_context_label *l, uint32_t next,
                       uint32_t *key)
{
        struct node nd = {0, 0, next};
        uint32_t idx;
        int added, err = jfr_strtab_intern(&p->strs, l->key, l->key_len, &nd.key_str, NULL);
        if (!err)
                err = jfr_strtab_intern(&p->strs, l->value, l->value_len, &nd.val_str, NULL);
        if (!err)
                err = jfr_strtab_intern(&p->ids, (const char *)&nd, sizeof(nd), &idx, &added);
        if (err)
                return err;
        if ((uint64_t)p->key_base + idx >= 0x7fffffffu)
                return -EOVERFLOW; /* keys stay < 2^31 (grafana reads them as uint32) */
        *key = p->key_base + idx;
        if (added) {
                jfr_buf_varint(&p->entries, *key);
                jfr_buf_string(&p->entries, l->key, l->key_len);
                jfr_buf_string(&p->entries, l->value, l->value_len);
                jfr_buf_varint(&p->entries, next);
        }
        return p->entries.err;
}

int jfr_context_pool_add(struct jfr_context_pool *p, const struct jfr_context_label *l, size_t n,
                         uint32_t *key)
{
        struct jfr_context_label sorted[MAX_SET];
        uint32_t next = 0, v;
        if (n > MAX_SET)
                return -E2BIG;
        memcpy(sorted, l, n * sizeof(*l));
        qsort(sorted, n, sizeof(*sorted), by_key);
        for (size_t i = n; i-- > 0;) {
                int err = intern_node(p, &sorted[i], next, &next);
                if (err)
                        return err;
        }
        *key = next;
        if (!next || jfr_u64map_get(&p->heads, next, &v))
                return 0;
        if (p->nheads == p->head_cap) {
                uint32_t nc = p->head_cap ? p->head_cap * 2 : 64;
                uint32_t *h = realloc(p->headv, nc * sizeof(*h));
                if (!h)
                        return -ENOMEM;
                p->headv = h;
                p->head_cap = nc;
        }
        p->headv[p->nheads++] = next;
        return jfr_u64map_put(&p->heads, next, 1);
}

/* field tag, length, bytes */
static void pb_bytes(struct jfr_buf *out, unsigned field, const void *data, size_t len)
{
        jfr_buf_varint(out, PB_LEN(field));
        jfr_buf_varint(out, len);
        jfr_buf_put(out, data, len);
}

/* One map entry {key: varint, value: varint} (value_len 0) or {key, value: bytes}. */
static void pb_entry(struct jfr_buf *out, struct jfr_buf *tmp, unsigned field, uint64_t k,
                     uint64_t v, const void *bytes, size_t bytes_len, int value_is_bytes)
{
        jfr_buf_reset(tmp);
        jfr_buf_varint(tmp, PB_VARINT(MAP_KEY));
        jfr_buf_varint(tmp, k);
        if (value_is_bytes) {
                pb_bytes(tmp, MAP_VALUE, bytes, bytes_len);
        } else {
                jfr_buf_varint(tmp, PB_VARINT(MAP_VALUE));
                jfr_buf_varint(tmp, v);
        }
        pb_bytes(out, field, tmp->data, tmp->len);
}

int jfr_context_pool_snapshot(const struct jfr_context_pool *p, struct jfr_buf *out)
{
        struct jfr_buf ctx, entry;
        jfr_buf_init(&ctx);
        jfr_buf_init(&entry);
        for (uint32_t h = 0; h < p->nheads; h++) {
                jfr_buf_reset(&ctx);
                for (uint32_t k = p->headv[h]; k; k = node_at(p, k - p->key_base).next) {
                        struct node nd = node_at(p, k - p->key_base);
                        pb_entry(&ctx, &entry, CONTEXT_LABELS, p->str_base + nd.key_str,
                                 p->str_base + nd.val_str, NULL, 0, 0);
                }
                /* contexts entry: {key: contextId, value: Context message} */
                struct jfr_buf *e = &entry;
                jfr_buf_reset(e);
                jfr_buf_varint(e, PB_VARINT(MAP_KEY));
                jfr_buf_varint(e, p->headv[h]);
                pb_bytes(e, MAP_VALUE, ctx.data, ctx.len);
                pb_bytes(out, SNAP_CONTEXTS, e->data, e->len);
        }
        for (uint32_t i = 0; i < p->strs.n; i++)
                pb_entry(out, &entry, SNAP_STRINGS, p->str_base + i, 0, jfr_strtab_str(&p->strs, i),
                         p->strs.len[i], 1);
        int err = ctx.err ? ctx.err : entry.err ? entry.err : out->err;
        jfr_buf_free(&ctx);
        jfr_buf_free(&entry);
        return err;
}
