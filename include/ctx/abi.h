/* SPDX-License-Identifier: MIT */
/*
 * ctx/abi.h — the memory layouts libctx publishes for out-of-process readers (profilers,
 * eBPF programs, debuggers). This is a wire format: every offset and size here is an ABI
 * promise, checked by tests/unit/test_libctx_layout.c. Readers include this header too.
 *
 * Two ABIs, both per thread, both reachable from the thread pointer:
 *
 * 1. Custom Labels ABI v1 (Polar Signals): the dynamic TLS symbol
 *    `custom_labels_current_set` points to a labelset (or is NULL = no labels), and
 *    `custom_labels_abi_version` (uint32, dynamic symbol) == 1.
 *
 * 2. Checksummed span context v1: the dynamic TLS symbol `ctx_span_context_v1` is a
 *    64-byte, 64-byte-aligned record; `ctx_span_context_abi_version` (uint32) == 1.
 *    A reader accepts {span_id, root_span_id} only when
 *    checksum == ctx_span_checksum(span_id, root_span_id) and checksum != 0.
 *
 * Never include anything but <stdint.h>/<stddef.h> here: the BPF side includes it.
 */
#ifndef CTX_ABI_H
#define CTX_ABI_H

#ifndef __bpf__
#include <stddef.h>
#include <stdint.h>
#endif

#define CUSTOM_LABELS_ABI_VERSION    1
#define CTX_SPAN_CONTEXT_ABI_VERSION 1

#define CUSTOM_LABELS_CURRENT_SET_SYM    "custom_labels_current_set"
#define CUSTOM_LABELS_ABI_VERSION_SYM    "custom_labels_abi_version"
#define CTX_SPAN_CONTEXT_SYM             "ctx_span_context_v1"
#define CTX_SPAN_CONTEXT_ABI_VERSION_SYM "ctx_span_context_abi_version"

/* Custom Labels ABI v1 (LP64, little-endian). */
typedef struct {
        size_t len;               /* bytes at buf; no terminator, no limit in the spec */
        const unsigned char *buf; /* NULL = absent; a label with key.buf == NULL is skipped */
} custom_labels_string_t;         /* 16 bytes */

typedef struct {
        custom_labels_string_t key;
        custom_labels_string_t value;
} custom_labels_label_t; /* 32 bytes */

typedef struct {
        custom_labels_label_t *storage; /* count candidate labels; first duplicate key wins */
        size_t count;
        size_t capacity;    /* writer-internal; meaningless to readers */
} custom_labels_labelset_t; /* 24 bytes */

/* Checksummed span context v1: 64 bytes, 64-byte aligned. */
#define CTX_SPAN_TAGS 10
struct ctx_span_context {
        uint64_t span_id;             /* 0x00 */
        uint64_t root_span_id;        /* 0x08 local root span id */
        uint64_t checksum;            /* 0x10 0 = being written or never set */
        uint32_t tags[CTX_SPAN_TAGS]; /* 0x18 custom u32 tag slots */
} __attribute__((aligned(64)));

/* The sizes above are the ABI (LP64): a build in which they differ must not compile. */
#ifdef __cplusplus
#define CTX_ABI_SIZE(type, n) static_assert(sizeof(type) == (n), #type " is " #n " bytes")
#else
#define CTX_ABI_SIZE(type, n) _Static_assert(sizeof(type) == (n), #type " is " #n " bytes")
#endif
CTX_ABI_SIZE(custom_labels_string_t, 16);
CTX_ABI_SIZE(custom_labels_label_t, 32);
CTX_ABI_SIZE(custom_labels_labelset_t, 24);
CTX_ABI_SIZE(struct ctx_span_context, 64);
#undef CTX_ABI_SIZE

#define CTX_SPAN_CHECKSUM_K 0x9E3779B97F4A7C15ULL

/* Knuth multiplicative hash of the two ids; never 0 (0 marks "no valid span"). */
static inline uint64_t ctx_span_checksum(uint64_t span_id, uint64_t root_span_id)
{
        uint64_t swapped = (root_span_id << 32) | (root_span_id >> 32);
        uint64_t h = (span_id * CTX_SPAN_CHECKSUM_K) ^ (swapped * CTX_SPAN_CHECKSUM_K);
        return h == 0 ? 0xFFFFFFFFFFFFFFFFULL : h;
}

#endif /* CTX_ABI_H */
