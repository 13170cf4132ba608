/* SPDX-License-Identifier: MIT */
/*
 * jfr_dict.h — the two dictionaries the JFR writer and reader need: a string interning
 * table (byte strings -> dense index, copies owned by the table) and a u64 -> u32 map.
 * Open addressing, grows by doubling. Owns only memory; never prints. Not thread-safe.
 */
#ifndef CTXPROF_JFR_DICT_H
#define CTXPROF_JFR_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "jfr/jfr_buf.h"

struct jfr_strtab {
        struct jfr_buf bytes; /* NUL-terminated copies, back to back */
        size_t *off;          /* off[i] = start of string i in bytes */
        uint32_t *len;        /* len[i] */
        uint32_t n, ncap;
        uint32_t *slots; /* index + 1, 0 = empty */
        uint32_t nslots; /* power of two */
};

void jfr_strtab_init(struct jfr_strtab *t);
void jfr_strtab_free(struct jfr_strtab *t);
void jfr_strtab_clear(struct jfr_strtab *t); /* keeps the memory */
/* 1 and *idx = index of s when it is in t, else 0. */
int jfr_strtab_find(const struct jfr_strtab *t, const char *s, size_t len, uint32_t *idx);
/* *idx = index of s (added if new). 0 or -ENOMEM. *added (may be NULL) = 1 if new. */
int jfr_strtab_intern(struct jfr_strtab *t, const char *s, size_t len, uint32_t *idx, int *added);
static inline const char *jfr_strtab_str(const struct jfr_strtab *t, uint32_t i)
{
        return (const char *)t->bytes.data + t->off[i];
}

struct jfr_u64map {
        uint64_t *keys;
        uint32_t *vals;
        uint8_t *used;
        uint32_t n, nslots;
};

void jfr_u64map_init(struct jfr_u64map *m);
void jfr_u64map_free(struct jfr_u64map *m);
void jfr_u64map_clear(struct jfr_u64map *m);
int jfr_u64map_put(struct jfr_u64map *m, uint64_t key, uint32_t val);        /* 0 or -ENOMEM */
int jfr_u64map_get(const struct jfr_u64map *m, uint64_t key, uint32_t *val); /* 1 found, 0 */

uint64_t jfr_hash_bytes(const void *p, size_t n);

#endif
