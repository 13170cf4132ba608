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
 * 3. OpenTelemetry Thread Context (OTEP 4947): the dynamic TLS symbol `otel_thread_ctx_v1` is
 *    an 8-byte pointer to a struct otel_thread_ctx_record (NULL = no context). libctx keeps
 *    one fixed record per thread and flips `valid` around every update (it never swaps the
 *    pointer while the thread lives). Attribute key indexes refer to the process context's
 *    `threadlocal.attribute_key_map`.
 *
 * 4. OpenTelemetry Process Context (OTEP 4719): a mapping named OTEL_CTX (`/memfd:OTEL_CTX`
 *    or `[anon:OTEL_CTX]` in /proc/PID/maps) starting with struct otel_process_ctx_header;
 *    `payload` points to a protobuf ProcessContext (proto/otel/processcontext.proto).
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

/* OpenTelemetry Thread Context record (OTEP 4947): byte-packed, host endian, 2-aligned. */
#define OTEL_THREAD_CTX_SYM        "otel_thread_ctx_v1"
#define OTEL_THREAD_CTX_HEADER     28  /* bytes up to and including attrs_data_size */
#define OTEL_THREAD_CTX_RECORD_MAX 640 /* the OTel eBPF profiler's budget for a record */
#define OTEL_THREAD_CTX_ATTRS_MAX  (OTEL_THREAD_CTX_RECORD_MAX - OTEL_THREAD_CTX_HEADER)
#define OTEL_THREAD_CTX_VALID      1   /* any other value of `valid`: ignore the record */
#define OTEL_THREAD_CTX_MAX_KEYS   256 /* key_index is a uint8 */
struct otel_thread_ctx_record {
        uint8_t trace_id[16];     /* 0  W3C bytes; all zero = no trace (span_id zero too) */
        uint8_t span_id[8];       /* 16 W3C bytes */
        uint8_t valid;            /* 24 1 = complete; 0 while being rewritten */
        uint8_t trace_flags;      /* 25 W3C trace-flags; 0 without a trace */
        uint16_t attrs_data_size; /* 26 bytes used in attrs_data */
        /* 28: packed entries {u8 key_index, u8 len, u8 val[len]}; the last duplicate wins */
        uint8_t attrs_data[OTEL_THREAD_CTX_ATTRS_MAX];
};

/* OpenTelemetry Process Context header (OTEP 4719), at the start of the OTEL_CTX mapping. */
#define OTEL_PROCESS_CTX_SIGNATURE "OTEL_CTX" /* 8 bytes, no NUL */
#define OTEL_PROCESS_CTX_NAME      "OTEL_CTX"
#define OTEL_PROCESS_CTX_VERSION   2
#define OTEL_SCHEMA_VERSION_KEY    "threadlocal.schema_version"
#define OTEL_SCHEMA_VERSION        "tlsdesc_v1_dev"
#define OTEL_KEY_MAP_KEY           "threadlocal.attribute_key_map"
struct otel_process_ctx_header {
        char signature[8];                  /* 0  "OTEL_CTX", written last at first publish */
        uint32_t version;                   /* 8  2 */
        uint32_t payload_size;              /* 12 bytes at payload */
        uint64_t monotonic_published_at_ns; /* 16 CLOCK_BOOTTIME; 0 = being updated (seqlock) */
        uint64_t payload;                   /* 24 address of the protobuf bytes in the writer */
};

/* The sizes above are the ABI (LP64): a build in which they differ must not compile. */
#ifdef __cplusplus
#define CTX_ABI_SIZE(type, n) static_assert(sizeof(type) == (n), #type " is " #n " bytes")
#define CTX_ABI_OFF(type, f, n)                                                                    \
        static_assert(__builtin_offsetof(type, f) == (n), #type "." #f " at " #n)
#else
#define CTX_ABI_OFF(type, f, n)                                                                    \
        _Static_assert(__builtin_offsetof(type, f) == (n), #type "." #f " at " #n)
#define CTX_ABI_SIZE(type, n) _Static_assert(sizeof(type) == (n), #type " is " #n " bytes")
#endif
CTX_ABI_SIZE(custom_labels_string_t, 16);
CTX_ABI_SIZE(custom_labels_label_t, 32);
CTX_ABI_SIZE(custom_labels_labelset_t, 24);
CTX_ABI_SIZE(struct ctx_span_context, 64);
CTX_ABI_SIZE(struct otel_thread_ctx_record, OTEL_THREAD_CTX_RECORD_MAX);
CTX_ABI_SIZE(struct otel_process_ctx_header, 32);
CTX_ABI_OFF(struct otel_thread_ctx_record, span_id, 16);
CTX_ABI_OFF(struct otel_thread_ctx_record, valid, 24);
CTX_ABI_OFF(struct otel_thread_ctx_record, trace_flags, 25);
CTX_ABI_OFF(struct otel_thread_ctx_record, attrs_data_size, 26);
CTX_ABI_OFF(struct otel_thread_ctx_record, attrs_data, OTEL_THREAD_CTX_HEADER);
CTX_ABI_OFF(struct otel_process_ctx_header, version, 8);
CTX_ABI_OFF(struct otel_process_ctx_header, monotonic_published_at_ns, 16);
CTX_ABI_OFF(struct otel_process_ctx_header, payload, 24);
#undef CTX_ABI_SIZE
#undef CTX_ABI_OFF

#define CTX_SPAN_CHECKSUM_K 0x9E3779B97F4A7C15ULL

/* Knuth multiplicative hash of the two ids; never 0 (0 marks "no valid span"). */
static inline uint64_t ctx_span_checksum(uint64_t span_id, uint64_t root_span_id)
{
        uint64_t swapped = (root_span_id << 32) | (root_span_id >> 32);
        uint64_t h = (span_id * CTX_SPAN_CHECKSUM_K) ^ (swapped * CTX_SPAN_CHECKSUM_K);
        return h == 0 ? 0xFFFFFFFFFFFFFFFFULL : h;
}

#endif /* CTX_ABI_H */
