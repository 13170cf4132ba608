/* SPDX-License-Identifier: MIT */
/*
 * elf_tls_remote.c — elf_tls_scan through the parser helper (elf_tls.h, tls_wire.h), or in
 * this process when none is named. Must never parse the file here once a helper is named,
 * wait for the helper in the _nowait form (or longer than PARSER_JOB_WAIT_MS in the other),
 * blame a file for a request it never got (-EBUSY), or print.
 */
#include "tls/elf_tls.h"
#include "tls/tls_wire.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#include <errno.h>

static struct parser_client *parser;

void elf_tls_use_parser(struct parser_client *pc)
{
        __atomic_store_n(&parser, pc, __ATOMIC_RELEASE); /* jobs may be scanning already */
}

static int scan(int fd, const char *const *names, size_t n, unsigned flags,
                struct elf_tls_info *info, struct elf_tls_sym *syms, int nowait)
{
        static _Thread_local struct tls_req req;
        static _Thread_local union {
                struct tls_resp r;
                char buf[sizeof(struct tls_resp)];
        } resp;
        struct parser_client *pc = __atomic_load_n(&parser, __ATOMIC_ACQUIRE);
        uint32_t got = 0;
        int err;

        if (!pc)
                return elf_tls_scan_local(fd, names, n, flags, info, syms);
        err = tls_wire_request(names, n, flags, &req);
        if (err)
                return err;
        err = parser_client_try_call(pc, nowait ? 0 : PARSER_JOB_WAIT_MS, PARSER_TLS, &req,
                                     sizeof(req), fd, resp.buf, sizeof(resp.buf), &got);
        if (!err)
                err = tls_wire_decode(resp.buf, got, n, info, syms);
        return parser_client_file_error(err);
}

int elf_tls_scan(int fd, const char *const *names, size_t n, unsigned flags,
                 struct elf_tls_info *info, struct elf_tls_sym *syms)
{
        return scan(fd, names, n, flags, info, syms, 0);
}

int elf_tls_scan_nowait(int fd, const char *const *names, size_t n, unsigned flags,
                        struct elf_tls_info *info, struct elf_tls_sym *syms)
{
        return scan(fd, names, n, flags, info, syms, 1);
}
