/* SPDX-License-Identifier: MIT */
/*
 * frame.h — one stack frame as the daemon stores it from ingestion on: a (module, offset)
 * pair that stays meaningful after the process exits or unmaps the file. Shared by the
 * sampler (producer), the trace table (key), the symbolizer and the JFR writer (consumers).
 * Pure data; no functions.
 */
#ifndef CTXPROF_FRAME_H
#define CTXPROF_FRAME_H

#include <stdint.h>

/* Reserved module ids; real files get ids >= CTXPROF_MODULE_FIRST from stack/modules.c. */
#define CTXPROF_MODULE_KERNEL  0u /* offset = kernel virtual address */
#define CTXPROF_MODULE_UNKNOWN 1u /* offset = raw user address (no mapping known) */
#define CTXPROF_MODULE_FIRST   2u

struct ctxprof_frame {
        uint64_t offset;    /* file offset in the module (kernel/unknown: the address) */
        uint32_t module_id; /* CTXPROF_MODULE_* or a registry id */
        uint32_t flags;     /* CTXPROF_FRAME_* */
};

#define CTXPROF_FRAME_KERNEL 0x1u /* a kernel frame */
/* the address is a return address (caller frames): symbolize offset - 1 */
#define CTXPROF_FRAME_RETADDR 0x2u

/* Stacks are stored leaf first. Bound on frames per stack everywhere in the daemon. */
#define CTXPROF_MAX_FRAMES 128

#endif
