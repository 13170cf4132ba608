/* SPDX-License-Identifier: MIT */
/*
 * jfr_dict.c — string interning table and u64 map (see jfr_dict.h). Memory only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jfr/jfr_dict.h"
#include "util/hash.h"

uint64_t jfr_hash_bytes(const void *p, size_t n)
{
        uint64_t h = fnv1a64(p, n);
        return h ^ (h >> 29); /* slots take the low bits, FNV mixes the high ones better */
}

static uint64_t mix64(uint64_t x)
{
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ull;
        return x ^ (x >> 33);
}

void jfr_strtab_init(struct jfr_strtab *t)
{
        memset(t, 0, sizeof(*t));
        jfr_buf_init(&t->bytes);
}

void jfr_strtab_free(struct jfr_strtab *t)
{
        jfr_buf_free(&t->bytes);
        free(t->off);
        free(t->len);
        free(t->slots);
        memset(t, 0, sizeof(*t));
}

void jfr_strtab_clear(struct jfr_strtab *t)
{
        jfr_buf_reset(&t->bytes);
        t->n = 0;
        if (t->slots)
                memset(t->slots, 0, t->nslots * sizeof(*t->slots));
}

static int strtab_rehash(struct jfr_strtab *t, uint32_t nslots)
{
        uint32_t *s = calloc(nslots, sizeof(*s));
        if (!s)
                return -ENOMEM;
        for (uint32_t i = 0; i < t->n; i++) {
                uint64_t h = jfr_hash_bytes(jfr_strtab_str(t, i), t->len[i]);
                uint32_t j = (uint32_t)h & (nslots - 1);
                while (s[j])
                        j = (j + 1) & (nslots - 1);
                s[j] = i + 1;
        }
        free(t->slots);
        t->slots = s;
        t->nslots = nslots;
        return 0;
}

/* The slot of s in t's index: where it is, or the empty slot it would go to. */
static uint32_t strtab_slot(const struct jfr_strtab *t, const char *s, size_t len)
{
        uint32_t j = (uint32_t)jfr_hash_bytes(s, len) & (t->nslots - 1);

        while (t->slots[j]) {
                uint32_t i = t->slots[j] - 1;
                if (t->len[i] == len && !memcmp(jfr_strtab_str(t, i), s, len))
                        break;
                j = (j + 1) & (t->nslots - 1);
        }
        return j;
}

int jfr_strtab_find(const struct jfr_strtab *t, const char *s, size_t len, uint32_t *idx)
{
        if (!t->nslots)
                return 0;
        uint32_t j = strtab_slot(t, s, len);
        if (!t->slots[j])
                return 0;
        *idx = t->slots[j] - 1;
        return 1;
}

int jfr_strtab_intern(struct jfr_strtab *t, const char *s, size_t len, uint32_t *idx, int *added)
{
        if (added)
                *added = 0;
        if (len > UINT32_MAX)
                return -EINVAL;
        if ((uint64_t)(t->n + 1) * 2 > t->nslots) {
                int err = strtab_rehash(t, t->nslots ? t->nslots * 2 : 64);
                if (err)
                        return err;
        }
        uint32_t j = strtab_slot(t, s, len);
        if (t->slots[j]) {
                *idx = t->slots[j] - 1;
                return 0;
        }
        if (t->n == t->ncap) {
                uint32_t nc = t->ncap ? t->ncap * 2 : 64;
                size_t *o = realloc(t->off, nc * sizeof(*o));
                if (!o)
                        return -ENOMEM;
                t->off = o;
                uint32_t *l = realloc(t->len, nc * sizeof(*l));
                if (!l)
                        return -ENOMEM;
                t->len = l;
                t->ncap = nc;
        }
        size_t off = t->bytes.len;
        jfr_buf_put(&t->bytes, s, len);
        jfr_buf_u8(&t->bytes, 0);
        if (t->bytes.err) {
                t->bytes.err = 0;
                t->bytes.len = off;
                return -ENOMEM;
        }
        t->off[t->n] = off;
        t->len[t->n] = (uint32_t)len;
        t->slots[j] = t->n + 1;
        *idx = t->n++;
        if (added)
                *added = 1;
        return 0;
}

void jfr_u64map_init(struct jfr_u64map *m)
{
        memset(m, 0, sizeof(*m));
}

void jfr_u64map_free(struct jfr_u64map *m)
{
        free(m->keys);
        free(m->vals);
        free(m->used);
        memset(m, 0, sizeof(*m));
}

void jfr_u64map_clear(struct jfr_u64map *m)
{
        if (m->used)
                memset(m->used, 0, m->nslots);
        m->n = 0;
}

static int u64map_grow(struct jfr_u64map *m)
{
        uint32_t ns = m->nslots ? m->nslots * 2 : 64;
        uint64_t *k = calloc(ns, sizeof(*k));
        uint32_t *v = calloc(ns, sizeof(*v));
        uint8_t *u = calloc(ns, 1);
        if (!k || !v || !u) {
                free(k);
                free(v);
                free(u);
                return -ENOMEM;
        }
        for (uint32_t i = 0; i < m->nslots; i++) {
                if (!m->used[i])
                        continue;
                uint32_t j = (uint32_t)mix64(m->keys[i]) & (ns - 1);
                while (u[j])
                        j = (j + 1) & (ns - 1);
                u[j] = 1;
                k[j] = m->keys[i];
                v[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        free(m->used);
        m->keys = k;
        m->vals = v;
        m->used = u;
        m->nslots = ns;
        return 0;
}

int jfr_u64map_put(struct jfr_u64map *m, uint64_t key, uint32_t val)
{
        if ((uint64_t)(m->n + 1) * 2 > m->nslots) {
                int err = u64map_grow(m);
                if (err)
                        return err;
        }
        uint32_t j = (uint32_t)mix64(key) & (m->nslots - 1);
        while (m->used[j] && m->keys[j] != key)
                j = (j + 1) & (m->nslots - 1);
        if (!m->used[j]) {
                m->used[j] = 1;
                m->keys[j] = key;
                m->n++;
        }
        m->vals[j] = val;
        return 0;
}

int jfr_u64map_get(const struct jfr_u64map *m, uint64_t key, uint32_t *val)
{
        if (!m->nslots)
                return 0;
        uint32_t j = (uint32_t)mix64(key) & (m->nslots - 1);
        while (m->used[j]) {
                if (m->keys[j] == key) {
                        *val = m->vals[j];
                        return 1;
                }
                j = (j + 1) & (m->nslots - 1);
        }
        return 0;
}
