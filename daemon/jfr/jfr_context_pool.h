/* SPDX-License-Identifier: MIT */
/*
 * jfr_context_pool.h — the label sets of one chunk, each stored once: a set is a chain of
 * label nodes in the ctxprof.types.Context constant pool ({key, value, next}, keys sorted,
 * equal tails shared), and a sample refers to the head node's key (its contextId). No cap
 * on distinct keys: a set of any keys costs its nodes, never an event field. Also encodes
 * the chunk's sets as Pyroscope's LabelsSnapshot protobuf (contextId -> {key id: value id},
 * string id -> string). Pure encoding into buffers; never does I/O, never prints.
 */
#ifndef CTXPROF_JFR_CONTEXT_POOL_H
#define CTXPROF_JFR_CONTEXT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "jfr/jfr_buf.h"

/* Context keys are never below this: a contextId must not read as one of our event type
 * ids (< 128) to a positional reader that takes it for the type of the event it skips
 * (docs/jfr.md, "Event layout"). */
#define JFR_CONTEXT_KEY_MIN 128u

struct jfr_context_pool;

struct jfr_context_pool *jfr_context_pool_new(void);
void jfr_context_pool_free(struct jfr_context_pool *p);
/* Start a chunk: node keys from key_base (raised to JFR_CONTEXT_KEY_MIN), snapshot string
 * ids from str_base. Forgets the previous chunk's sets. */
void jfr_context_pool_begin(struct jfr_context_pool *p, uint32_t key_base, uint32_t str_base);
/* Intern one label set (keys and values valid UTF-8 without NUL, unique keys). *key = its
 * head node's key, 0 for an empty set. 0, -ENOMEM or -EOVERFLOW. */
struct jfr_context_label {
        const char *key, *value;
        size_t key_len, value_len;
};
int jfr_context_pool_add(struct jfr_context_pool *p, const struct jfr_context_label *l, size_t n,
                         uint32_t *key);
/* Nodes and strings used in this chunk (the next chunk's bases start after them). */
uint32_t jfr_context_pool_nodes(const struct jfr_context_pool *p);
uint32_t jfr_context_pool_strings(const struct jfr_context_pool *p);
/* The pool's entries (key, key string, value string, next key) without the pool header. */
const struct jfr_buf *jfr_context_pool_entries(const struct jfr_context_pool *p);
/* Append this chunk's sets as one LabelsSnapshot message (empty if none). 0 or -ENOMEM. */
int jfr_context_pool_snapshot(const struct jfr_context_pool *p, struct jfr_buf *out);

#endif
