/* SPDX-License-Identifier: MIT */
/*
 * libctx/abi_symbols.c — defines the five symbols out-of-process readers look up in .dynsym:
 * the two version constants and the three thread-local records (include/ctx/abi.h), and the
 * one TLS block (ctxi_tls) that holds those records and the writer's per-thread state.
 * Owns that storage, nothing else. Must never change a name, a size or a layout (wire
 * format), and must keep the TLS variables default-visibility and non-protected so that code
 * in the shared object reaches them through R_X86_64_TLSDESC relocations *naming the
 * symbol* — the relocation readers use to find each thread's copy.
 */
#include "internal.h"

_Static_assert(_Alignof(struct ctx_span_context) == 64, "span context is 64-byte aligned");

/* The block that holds every libctx TLS variable (internal.h): all zero in a new thread, i.e.
 * no labels (NULL set), no span (checksum 0), no OTel record (NULL). */
__thread struct ctxi_tls ctxi_tls;

/*
 * The three exported TLS variables are symbols defined inside that block (an assembler
 * `.set` to ctxi_tls + offset, in this object's .tbss): default visibility, STT_TLS, the ABI
 * sizes. Readers see exactly what a separate definition gave them: the names in .dynsym, and
 * the R_X86_64_TLSDESC relocations that *name* them (from ctxi_abi_interposed below).
 */
#define CTXI_STR_(x) #x
#define CTXI_STR(x)  CTXI_STR_(x)
#define CTXI_TLS_ALIAS(name, size, off)                                                            \
        ".globl " name "\n\t.type " name ", @tls_object\n\t.size " name                            \
        ", " CTXI_STR(size) "\n\t.set " name ", ctxi_tls + " CTXI_STR(off) "\n\t"
__asm__(CTXI_TLS_ALIAS("ctx_span_context_v1", 64, 0)
            CTXI_TLS_ALIAS("custom_labels_current_set", 8, CTXI_TLS_CURRENT_SET_OFF)
                CTXI_TLS_ALIAS("otel_thread_ctx_v1", 8, CTXI_TLS_OTEL_PTR_OFF));
extern __thread custom_labels_labelset_t *custom_labels_current_set;
extern __thread struct ctx_span_context ctx_span_context_v1;
extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

__attribute__((visibility("default"))) const uint32_t custom_labels_abi_version =
    CUSTOM_LABELS_ABI_VERSION;
__attribute__((visibility("default"))) const uint32_t ctx_span_context_abi_version =
    CTX_SPAN_CONTEXT_ABI_VERSION;

/*
 * Every write path uses ctxi_tls directly. Readers locate a thread's copy through the
 * R_X86_64_TLSDESC relocations that *name* the exported symbols; those must exist in
 * libctx.so, so ctxi_abi_interposed() below references the exported names (it runs in the
 * constructor). If some other object interposed these names, our writes (into ctxi_tls) and
 * a reader (through the named relocation) would look at different variables:
 * ctxi_abi_interposed() detects that case.
 */
int ctxi_abi_interposed(void)
{
        custom_labels_labelset_t **volatile a = &custom_labels_current_set;
        struct ctx_span_context *volatile b = &ctx_span_context_v1;
        struct otel_thread_ctx_record **volatile c = &otel_thread_ctx_v1;
        return a != &ctxi_tls.current_set || b != &ctxi_tls.span || c != &ctxi_tls.otel_ptr;
}
