/* SPDX-License-Identifier: MIT */
/*
 * cfi_wire.h — a PARSER_CFI request and its answer (util/parser_wire.h): the daemon asks the
 * parser helper for the unwind table (stack/cfi_table.h) of one ELF file, whose descriptor
 * rides with the request. A table can be megabytes (libLLVM: about a million rows), far past
 * one message, so the rows come back in a sealed memfd with the answer: the helper writes them
 * through a mapping, unmaps it and adds F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW, which the
 * kernel accepts only on shmem with no writable mapping left. The daemon reads the rows only
 * from a descriptor that shows those seals (so a read cannot block, as one of a FUSE file
 * could, and the rows cannot change while they are checked) and checks every row: pcs
 * strictly increasing, every rule an enum value. The counts it keeps are counted again from
 * the rows, not taken from the helper. Never prints.
 */
#ifndef CTXPROF_CFI_WIRE_H
#define CTXPROF_CFI_WIRE_H

#include <stdint.h>

#include "stack/cfi_table.h"

struct cfi_req {
        uint32_t max_rows; /* a bigger table is refused (-EFBIG) */
        uint32_t pad;
};
_Static_assert(sizeof(struct cfi_req) == 8, "cfi_req is a wire struct");

struct cfi_resp {
        int32_t status; /* cfi_table_build's: 0 or -errno (then no descriptor) */
        uint32_t n;     /* rows in the memfd: its size is n * sizeof(struct ctxprof_cfi_row) */
        uint32_t fdes;  /* as the helper counted them: reported, never used for a bound */
        uint32_t pad;
        uint64_t build_ns;
};
_Static_assert(sizeof(struct cfi_resp) == 24, "cfi_resp is a wire struct");

/* The helper's side: the answer to t (status 0) or to status, and the sealed memfd with the
 * rows in *memfd (-1 when none). 0 or -errno (the answer is then not to be sent). */
int cfi_wire_export(int status, const struct cfi_table *t, struct cfi_resp *r, int *memfd);
/* The daemon's side: the table the answer (len bytes of buf, and memfd, not taken) holds,
 * or its status. -EPROTO for an answer out of format: a wrong size, a descriptor missing or
 * not sealed, more than max_rows rows, a row out of order or with an unknown rule. */
int cfi_wire_import(const void *buf, uint32_t len, int memfd, uint32_t max_rows,
                    struct cfi_table *out);

#endif
