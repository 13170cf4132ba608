/* SPDX-License-Identifier: MIT */
/*
 * tls_wire.h — a PARSER_TLS request and its answer (util/parser_wire.h): the daemon asks what
 * one ELF file (its descriptor rides with the request) says about up to ELF_TLS_MAX_NAMES
 * thread-local variable names (tls/elf_tls.h); the parser helper answers with elf_tls_scan's
 * result in fixed wire structs. The decoder checks every count, flag and enum, because the
 * helper's answer is as hostile as the file it parsed; the numbers themselves (addresses,
 * sizes) are the file's, and their users bound them as they always did. Never prints.
 */
#ifndef CTXPROF_TLS_WIRE_H
#define CTXPROF_TLS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "tls/elf_tls.h"

#define TLS_WIRE_NAME_MAX 64 /* bytes of a name, NUL included */

struct tls_req {
        uint8_t flags; /* ELF_TLS_NEED_TLS, ELF_TLS_NO_DWARF */
        uint8_t n;     /* names, <= ELF_TLS_MAX_NAMES */
        uint16_t pad;
        char names[ELF_TLS_MAX_NAMES][TLS_WIRE_NAME_MAX]; /* NUL-terminated */
};
_Static_assert(sizeof(struct tls_req) == 4 + ELF_TLS_MAX_NAMES * TLS_WIRE_NAME_MAX,
               "tls_req is a wire struct");

struct tls_wire_sym {
        uint64_t value, size, reloc_where, dtpoff_where;
        int64_t reloc_addend;
        uint32_t type;
        uint8_t defined, in_dynsym, reloc, pad;
};
_Static_assert(sizeof(struct tls_wire_sym) == 48, "tls_wire_sym is a wire struct");

struct tls_wire_load {
        uint64_t vaddr, offset, filesz, memsz;
};
_Static_assert(sizeof(struct tls_wire_load) == 32, "tls_wire_load is a wire struct");

struct tls_resp {
        int32_t ret; /* elf_tls_scan's: 0, -ENOMEM, or -ENOEXEC for any other failure */
        uint8_t n;   /* syms that follow: the request's count */
        uint8_t is_executable, has_tls, nloads;
        uint32_t e_type, pad;
        uint64_t tls_vaddr, tls_memsz, tls_align;
        struct elf_go_info go;
        struct tls_wire_load loads[ELF_TLS_MAX_LOADS];
        struct tls_wire_sym syms[ELF_TLS_MAX_NAMES];
};
_Static_assert(sizeof(struct tls_resp) == 40 + sizeof(struct elf_go_info) +
                                              ELF_TLS_MAX_LOADS * sizeof(struct tls_wire_load) +
                                              ELF_TLS_MAX_NAMES * sizeof(struct tls_wire_sym),
               "tls_resp is a wire struct");

/* The request for names[0..n) into *r: 0, or -ENAMETOOLONG / -EINVAL (n too big). */
int tls_wire_request(const char *const *names, size_t n, unsigned flags, struct tls_req *r);
/* The request's names checked (counts, NUL-terminated): 0 or -EINVAL; names[i] point into r. */
int tls_wire_names(const struct tls_req *r, const char *names[ELF_TLS_MAX_NAMES]);
/* The answer for a scan of n names that returned ret. */
void tls_wire_encode(int ret, const struct elf_tls_info *info, const struct elf_tls_sym *syms,
                     size_t n, struct tls_resp *out);
/* Checks len bytes of buf (an answer to a request of n names) into info and syms[0..n): the
 * scan's result (0, -ENOEXEC, -ENOMEM), or -EPROTO for a malformed answer. */
int tls_wire_decode(const void *buf, uint32_t len, size_t n, struct elf_tls_info *info,
                    struct elf_tls_sym *syms);

#endif
