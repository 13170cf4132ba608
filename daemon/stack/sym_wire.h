/* SPDX-License-Identifier: MIT */
/*
 * sym_wire.h — the payload of a PARSER_SYM request and its answer (util/parser_wire.h): the
 * daemon asks for the names at one file offset of a module whose descriptor rides with the
 * request; the helper answers with elf_syms.h's entries. Names are cut to SYM_WIRE_NAME_MAX
 * bytes by the encoder; the decoder checks every count and length against the payload's
 * size, because the helper's answer is as hostile as the file it parsed. Never prints.
 */
#ifndef CTXPROF_SYM_WIRE_H
#define CTXPROF_SYM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "stack/elf_syms.h"

#define SYM_WIRE_MAX_ENTRIES 16   /* = SYM_MAX_INLINE */
#define SYM_WIRE_NAME_MAX    4097 /* = SYM_NAME_MAX + 1: the daemon sees that it was cut */

struct sym_req {
        uint64_t token;  /* names the open module (the helper keeps it open by this) */
        uint64_t offset; /* file offset */
};
_Static_assert(sizeof(struct sym_req) == 16, "sym_req is a wire struct");

struct sym_wire_entry {
        int32_t line;
        uint16_t function_len; /* bytes in the string area; 0 with !has_function */
        uint16_t file_len;
        uint8_t inlined;
        uint8_t has_function;
        uint8_t has_file;
        uint8_t pad;
};
_Static_assert(sizeof(struct sym_wire_entry) == 12, "sym_wire_entry is a wire struct");

struct sym_resp_head {
        uint32_t n;             /* entries, <= SYM_WIRE_MAX_ENTRIES */
        uint32_t dwarf_refused; /* 1 when the module's DWARF needed a file by name */
};
_Static_assert(sizeof(struct sym_resp_head) == 8, "sym_resp_head is a wire struct");

/* The largest answer. */
#define SYM_RESP_MAX                                                                               \
        (sizeof(struct sym_resp_head) +                                                            \
         SYM_WIRE_MAX_ENTRIES * (sizeof(struct sym_wire_entry) + 2 * SYM_WIRE_NAME_MAX))

/* The answer for n entries into buf (cap >= SYM_RESP_MAX); its length. */
uint32_t sym_wire_encode(const struct elf_sym_entry *e, int n, int dwarf_refused, void *buf,
                         size_t cap);

/* A decoded answer: names NUL-terminated in its own storage. */
struct sym_wire_names {
        struct elf_sym_entry e[SYM_WIRE_MAX_ENTRIES];
        int n;
        int dwarf_refused;
        char strs[SYM_WIRE_MAX_ENTRIES * 2 * (SYM_WIRE_NAME_MAX + 1)];
};
/* Checks and decodes len bytes of buf into out. 0 or -EPROTO. */
int sym_wire_decode(const void *buf, uint32_t len, struct sym_wire_names *out);

#endif
