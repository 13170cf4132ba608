/* SPDX-License-Identifier: MIT */
/*
 * util/idmap.c — the interning map and pointer array of util/idmap.h. Owns the copies of the
 * keys; never looks at what a value means.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/hash.h"
#include "util/idmap.h"

#define IDMAP_FIRST_CAP  256
#define PTRVEC_FIRST_CAP 64

void idmap_free(struct idmap *m)
{
        for (size_t i = 0; i < m->cap; i++)
                free(m->tab[i].key);
        free(m->tab);
        m->tab = NULL;
        m->cap = m->n = 0;
}

static int idmap_grow(struct idmap *m)
{
        size_t ncap = m->cap ? m->cap * 2 : IDMAP_FIRST_CAP;
        struct idmap_slot *nt = calloc(ncap, sizeof(*nt));

        if (!nt)
                return -ENOMEM;
        for (size_t i = 0; i < m->cap; i++) {
                size_t j;

                if (!m->tab[i].key)
                        continue;
                for (j = m->tab[i].hash & (ncap - 1); nt[j].key; j = (j + 1) & (ncap - 1))
                        ;
                nt[j] = m->tab[i];
        }
        free(m->tab);
        m->tab = nt;
        m->cap = ncap;
        return 0;
}

/* The slot holding key, or the empty slot where it goes (the table always has room). */
static struct idmap_slot *idmap_slot(struct idmap *m, const void *key, size_t len, uint64_t h)
{
        size_t j;

        for (j = h & (m->cap - 1); m->tab[j].key; j = (j + 1) & (m->cap - 1))
                if (m->tab[j].hash == h && m->tab[j].len == len && !memcmp(m->tab[j].key, key, len))
                        break;
        return &m->tab[j];
}

int idmap_get(struct idmap *m, const void *key, size_t len, uint64_t *val)
{
        struct idmap_slot *s;

        if (!m->cap)
                return 0;
        s = idmap_slot(m, key, len, fnv1a64(key, len));
        if (!s->key)
                return 0;
        *val = s->val;
        return 1;
}

int idmap_add(struct idmap *m, const void *key, size_t len, uint64_t val)
{
        uint64_t h = fnv1a64(key, len);
        struct idmap_slot *s;

        if ((m->n + 1) * 2 > m->cap && idmap_grow(m))
                return -ENOMEM;
        s = idmap_slot(m, key, len, h);
        s->key = malloc(len ? len : 1);
        if (!s->key)
                return -ENOMEM;
        memcpy(s->key, key, len);
        s->len = len;
        s->hash = h;
        s->val = val;
        m->n++;
        return 0;
}

int ptrvec_push(struct ptrvec *a, void *p)
{
        if (!p || grow_array((void **)&a->v, &a->cap, sizeof(*a->v), a->n + 1, PTRVEC_FIRST_CAP)) {
                free(p);
                return -ENOMEM;
        }
        a->v[a->n++] = p;
        return 0;
}
