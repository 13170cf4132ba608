/* SPDX-License-Identifier: MIT */
/*
 * cfi_table_remote.c — cfi_table_build through the parser helper (cfi_table.h, cfi_wire.h),
 * or in this process when none is named. Must never parse the file here once a helper is
 * named, wait for another thread's request longer than CFI_PARSER_WAIT_MS, blame a file for a
 * request it never got (-EBUSY), or print.
 */
#include "stack/cfi_table.h"
#include "stack/cfi_wire.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#include <errno.h>
#include <unistd.h>

static struct parser_client *parser;

void cfi_table_use_parser(struct parser_client *pc)
{
        __atomic_store_n(&parser, pc, __ATOMIC_RELEASE);
}

int cfi_table_build(int fd, struct cfi_table *out)
{
        struct parser_client *pc = __atomic_load_n(&parser, __ATOMIC_ACQUIRE);
        const struct cfi_req req = {.max_rows = CFI_TABLE_MAX_ROWS};
        union {
                struct cfi_resp r;
                char buf[sizeof(struct cfi_resp)];
        } resp;
        uint32_t got = 0;
        int err, memfd = -1;

        if (!pc)
                return cfi_table_build_local(fd, out);
        err = parser_client_try_call_fd(pc, CFI_PARSER_WAIT_MS, PARSER_CFI, &req, sizeof(req), fd,
                                        resp.buf, sizeof(resp.buf), &got, &memfd);
        if (!err)
                err = cfi_wire_import(resp.buf, got, memfd, req.max_rows, out);
        if (memfd >= 0)
                close(memfd);
        return parser_client_file_error(err);
}
