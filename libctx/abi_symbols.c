/* SPDX-License-Identifier: MIT */
/*
 * libctx/abi_symbols.c — defines the five symbols out-of-process readers look up in .dynsym:
 * the two version constants and the three thread-local records (include/ctx/abi.h). Owns their
 * storage, nothing else. Must never change a name, a size or a layout (wire format), and must
 * keep the TLS variables default-visibility and non-protected so that code in the shared
 * object reaches them through R_X86_64_TLSDESC relocations *naming the symbol* — the
 * relocation readers use to find each thread's copy.
 */
#include "internal.h"

_Static_assert(_Alignof(struct ctx_span_context) == 64, "span context is 64-byte aligned");

/* Custom Labels ABI v1: NULL = no labels (threads that never wrote one). */
__attribute__((visibility("default"))) __thread custom_labels_labelset_t *custom_labels_current_set;
__attribute__((visibility("default"))) const uint32_t custom_labels_abi_version =
    CUSTOM_LABELS_ABI_VERSION;

/* Checksummed span context v1: all zero (checksum 0 = no span) in a new thread. */
__attribute__((visibility("default"))) __thread struct ctx_span_context ctx_span_context_v1;
__attribute__((visibility("default"))) const uint32_t ctx_span_context_abi_version =
    CTX_SPAN_CONTEXT_ABI_VERSION;

/* OpenTelemetry Thread Context (OTEP 4947): NULL until the thread's first write, then the
 * thread's fixed record until it exits. */
__attribute__((visibility("default"))) __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

/* The writer's private per-thread state (hidden: reached without a symbol relocation). */
__thread struct ctxi_thread ctxi_self;

/*
 * Hidden aliases of the two TLS variables, used by every write path. Readers locate a thread's
 * copy through the R_X86_64_TLSDESC relocations that *name* the exported symbols; those must
 * exist in libctx.so, so ctxi_abi_interposed() below references the exported names (it runs
 * in the constructor). If some other object interposed these names, our writes (through the
 * aliases) and a reader (through the named relocation) would look at different variables:
 * ctxi_abi_interposed() detects that case.
 */
extern __thread custom_labels_labelset_t *ctxi_current_set
    __attribute__((alias("custom_labels_current_set"))) CTXI_TLS;
extern __thread struct ctx_span_context ctxi_span __attribute__((alias("ctx_span_context_v1")))
CTXI_TLS;
extern __thread struct otel_thread_ctx_record *ctxi_otel_ptr
    __attribute__((alias("otel_thread_ctx_v1"))) CTXI_TLS;

int ctxi_abi_interposed(void)
{
        custom_labels_labelset_t **volatile a = &custom_labels_current_set;
        struct ctx_span_context *volatile b = &ctx_span_context_v1;
        struct otel_thread_ctx_record **volatile c = &otel_thread_ctx_v1;
        return a != &ctxi_current_set || b != &ctxi_span || c != &ctxi_otel_ptr;
}
