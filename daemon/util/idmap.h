/* SPDX-License-Identifier: MIT */
/*
 * util/idmap.h — an interning map from byte strings to 64-bit values (open addressing,
 * FNV-1a, keys copied): what the profile writers (sink/pprof.c, sink/otlp.c) use to store
 * each distinct string, mapping, function, location or stack once and refer to it by index.
 * Never prints; never frees a value (the caller owns what the values name).
 */
#ifndef CTXPROF_UTIL_IDMAP_H
#define CTXPROF_UTIL_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap_slot {
        uint64_t hash;
        unsigned char *key; /* NULL = empty */
        size_t len;
        uint64_t val;
};

struct idmap {
        struct idmap_slot *tab;
        size_t cap, n;
};

/* An empty map is all zeroes. */
void idmap_free(struct idmap *m);
/* *val = the value stored for key; 1 if found, 0 if not (then idmap_add may follow). */
int idmap_get(struct idmap *m, const void *key, size_t len, uint64_t *val);
/* Store key (copied) -> val; key must not be in the map yet. 0 or -ENOMEM. */
int idmap_add(struct idmap *m, const void *key, size_t len, uint64_t val);

/* A growing array of pointers (protobuf-c's repeated message and string fields). */
struct ptrvec {
        void **v;
        size_t n, cap;
};

/* Append p (not NULL); on failure p is freed. 0 or -ENOMEM (also when p is NULL). */
int ptrvec_push(struct ptrvec *a, void *p);

#endif
