/* SPDX-License-Identifier: MIT */
/*
 * ctx/ctx.h — libctx, the in-process context library: the API an application calls to
 * publish, per thread, the current span and labels for out-of-process readers (ctxprof's
 * eBPF program, parca/OTel profilers, debuggers). The memory it publishes is described in
 * <ctx/abi.h>; this header never exposes anything a reader needs.
 *
 * Link: `pkg-config --cflags --libs libctx` (shared), or libctx.a plus
 * `-Wl,--dynamic-list=libctx.dynlist` for executables (see docs/libctx.md).
 *
 * Status codes (every int-returning call):
 *   0               ok
 *   CTX_TRUNCATED   (> 0) ok, but a key or value was cut to CTX_MAX_KEY_LEN /
 *                   CTX_MAX_VALUE_LEN bytes (at a UTF-8 character boundary)
 *   -EINVAL         bad argument (NULL pointer with a length, empty key, tag slot >= 10)
 *   -ENOSPC         the label set is full (CTX_MAX_USER_LABELS user labels)
 *   -ENOMEM         no per-thread storage slot could be taken from the pool (the pool is
 *                   exhausted and may only grow outside signal context: see
 *                   ctx_thread_init / ctx_reserve); counted in ctx_stats.pool_exhausted
 *   -EBUSY          the call runs in a signal handler that interrupted another libctx label
 *                   write on the same thread; nothing was changed (counted)
 *
 * Thread safety: every call acts on the calling thread's own context only; calls from
 * different threads never interfere. ctx_set_span_mirroring is process-wide.
 *
 * Signal safety: ctx_set_span, ctx_clear_span, ctx_set_tag, ctx_set_label*, ctx_remove_label*,
 * ctx_clear_labels and ctx_with_labels are async-signal-safe: no allocation, lock or system
 * call, even on a thread's first write (the storage slot is taken from a pre-allocated pool
 * with a lock-free stack). ctx_thread_init and ctx_reserve are NOT async-signal-safe (they
 * may grow the pool with mmap under a mutex); call them from ordinary thread context.
 *
 * Limits: CTX_MAX_LABELS (10) label slots per thread, of which 2 are reserved for the
 * "span-id" and "root-span-id" mirrors, leaving CTX_MAX_USER_LABELS (8) for the caller;
 * keys up to CTX_MAX_KEY_LEN (128) bytes, values up to CTX_MAX_VALUE_LEN (256) bytes.
 * Keys are compared byte-wise after truncation. An empty value is allowed, an empty key not.
 *
 * Consistency: a reader that interrupts the thread at any instruction sees, for each key, the
 * old value or the new one (or, only during that key's own update, no value), and a span
 * record whose checksum either validates or does not (never a wrong span). The span context
 * and the labels are two separate records: they are not updated atomically together.
 */
#ifndef CTX_CTX_H
#define CTX_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "ctx/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTX_API __attribute__((visibility("default")))

#define CTX_TRUNCATED        1  /* positive status: a key or value was truncated */
#define CTX_MAX_LABELS       10 /* label slots in the published set (capacity) */
#define CTX_RESERVED_LABELS  2  /* slots 0/1: "span-id", "root-span-id" mirrors */
#define CTX_MAX_USER_LABELS  (CTX_MAX_LABELS - CTX_RESERVED_LABELS)
#define CTX_MAX_KEY_LEN      128 /* bytes, longer keys are truncated */
#define CTX_MAX_VALUE_LEN    256 /* bytes, longer values are truncated */
#define CTX_SPAN_ID_KEY      "span-id"
#define CTX_ROOT_SPAN_ID_KEY "root-span-id"

/* Take this thread's storage slot now (and register its release at thread exit), growing
 * the pool if it runs low. Optional: the first write does it lazily (without growing).
 * Not async-signal-safe. 0 or -ENOMEM. */
CTX_API int ctx_thread_init(void);

/* Make sure the pool holds at least `slots` storage slots in total (one per live thread that
 * writes labels, plus one per active ctx_with_labels nesting level). Grows in whole blocks.
 * Not async-signal-safe. 0 or -ENOMEM. */
CTX_API int ctx_reserve(unsigned slots);

/* Publish {span_id, root_span_id} in ctx_span_context_v1 (checksum = 0, ids, checksum = valid)
 * and, if mirroring is on, as decimal "span-id"/"root-span-id" labels. The span record needs
 * no storage slot; -ENOMEM means the record was written but the mirror labels could not be. */
CTX_API int ctx_set_span(uint64_t span_id, uint64_t root_span_id);
/* No span: checksum = 0, ids = 0, mirror labels hidden. */
CTX_API int ctx_clear_span(void);
/* tags[slot] = value (one aligned 32-bit store; not covered by the checksum). slot < 10. */
CTX_API int ctx_set_tag(unsigned slot, uint32_t value);

/* Set key = value (replace or add). key_len >= 1. val may be NULL only when val_len == 0. */
CTX_API int ctx_set_label(const char *key, size_t key_len, const char *val, size_t val_len);
CTX_API int ctx_set_label_str(const char *key, const char *val);
/* Remove key; 0 also when it was not set. */
CTX_API int ctx_remove_label(const char *key, size_t key_len);
CTX_API int ctx_remove_label_str(const char *key);
/* Remove every user label at once (one store); the span mirrors stay. */
CTX_API int ctx_clear_labels(void);

/* Process-wide switch for the "span-id"/"root-span-id" mirror labels (default on). A thread
 * notices the change at its next ctx_set_span/ctx_clear_span. */
CTX_API void ctx_set_span_mirroring(int on);

/*
 * ABIs (bits). Every write updates each enabled ABI (docs/otel-context.md says which call
 * writes what). Default: all. The environment variable CTX_ABIS, read when libctx loads,
 * sets the mask: a comma list of "custom-labels", "span", "otel-thread", "otel-process",
 * "otel" (both OTel ABIs), "all", "none". ctx_set_abis changes it at run time: a thread
 * notices at its next write; what a thread published in an ABI switched off stays as it was
 * (until the thread exits), and an ABI switched on later shows only what is written after.
 */
#define CTX_ABI_CUSTOM_LABELS 0x1u /* custom_labels_current_set (+ span-id mirror labels) */
#define CTX_ABI_SPAN_RECORD   0x2u /* ctx_span_context_v1 */
#define CTX_ABI_OTEL_THREAD   0x4u /* otel_thread_ctx_v1 (OTEP 4947) */
#define CTX_ABI_OTEL_PROCESS  0x8u /* the OTEL_CTX process context mapping (OTEP 4719) */
#define CTX_ABI_ALL           0xFu
CTX_API void ctx_set_abis(unsigned mask);
CTX_API unsigned ctx_get_abis(void);

/*
 * Set the thread's trace context in every enabled ABI: the OTel record's trace_id, span_id
 * (the 8 bytes of span_id, most significant first, i.e. W3C order) and trace_flags; the span
 * record {span_id, root_span_id}; the span-id/root-span-id mirror labels.
 * trace_id NULL or all zero: no trace known — the OTel record shows no trace (zero ids, as
 * OTEP 4947 requires when either is missing) while the span record still gets the ids.
 * ctx_set_span(s, r) is ctx_set_trace(NULL, s, r, 0). Async-signal-safe. A call from a
 * signal handler that interrupted an OTel record write on the same thread is applied by the
 * interrupted call before it returns (deferred, not lost). Status as ctx_set_span, plus
 * -EBUSY when even the deferral slot was busy (a handler inside a handler; counted).
 */
CTX_API int ctx_set_trace(const uint8_t trace_id[16], uint64_t span_id, uint64_t root_span_id,
                          uint8_t trace_flags);
CTX_API int ctx_clear_trace(void); /* = ctx_clear_span */

/*
 * OTel attribute keys: the process-wide, append-only threadlocal.attribute_key_map. Returns
 * the key's index (0..255; the same key always gets the same index) or -EINVAL, -ENOSPC (256
 * keys), -EBUSY (a handler interrupted a registration on the same thread). A new key takes a
 * lock and republishes the process context (not async-signal-safe); a known key is a
 * lock-free lookup. ctx_set_label registers its key the same way, so register keys up front
 * if labels are set from signal handlers.
 */
CTX_API int ctx_register_key(const char *key, size_t key_len);
/* ctx_set_label with a registered key index (the fast path: no key lookup). */
CTX_API int ctx_set_attr(int key_index, const char *val, size_t val_len);

/*
 * Resource attributes of the process context. NULL leaves a field as it is. Defaults:
 * service.name from OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES, else
 * "unknown_service"; service.instance.id a random UUID; the others from
 * OTEL_RESOURCE_ATTRIBUTES (which may also add other string attributes). Republishes the
 * mapping. Not async-signal-safe. 0, -EINVAL (a value over 255 bytes) or -ENOMEM.
 */
CTX_API int ctx_set_resource(const char *service_name, const char *service_version,
                             const char *service_instance_id, const char *deployment_environment);

typedef struct {
        const char *key;   /* NUL-terminated */
        const char *value; /* NUL-terminated */
} ctx_label_kv;

/* Run fn(arg) with the current labels plus `labels` (later entries win), then restore the
 * previous set exactly (labels changed inside fn are discarded; span mirrors are refreshed).
 * The scoped set is built off to the side in a spare pool slot and published with one pointer
 * store, so a reader sees all of the extra labels or none. fn runs exactly once whenever it is
 * non-NULL, even if labels could not be applied; the return value says how that went:
 * 0, CTX_TRUNCATED, or the first negative status (-EINVAL, -ENOSPC, -ENOMEM, -EBUSY).
 * fn == NULL: -EINVAL. fn must not leave the scope with longjmp. */
CTX_API int ctx_with_labels(const ctx_label_kv *labels, size_t n, void (*fn)(void *), void *arg);

/* Pool and error counters (process-wide, relaxed snapshots). */
struct ctx_stats {
        uint64_t slots_total;         /* slots allocated in the pool */
        uint64_t slots_free;          /* on the free stack or never claimed */
        uint64_t blocks;              /* pool blocks (mmap'ed, never unmapped) */
        uint64_t claims;              /* slots taken (thread storage + scoped sets) */
        uint64_t releases;            /* slots given back (thread exit, end of scope) */
        uint64_t pool_exhausted;      /* -ENOMEM returned because no slot was free */
        uint64_t busy_rejected;       /* -EBUSY returned (nested write from a signal handler) */
        uint64_t exit_hook_missing;   /* slots that will not be recycled at thread exit */
        uint64_t abi_interposed;      /* 1: another object defines the ABI symbols too; readers
                                       * following the symbols would not see libctx's writes */
        uint64_t otel_attrs_full;     /* -ENOSPC: the OTel record had no room for an attribute */
        uint64_t otel_publish_failed; /* process context could not be (re)published */
};
CTX_API void ctx_get_stats(struct ctx_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* CTX_CTX_H */
