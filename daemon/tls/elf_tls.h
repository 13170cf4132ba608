/* SPDX-License-Identifier: MIT */
/*
 * elf_tls.h — what one ELF file (on disk) says about a set of named thread-local variables:
 * whether it defines them, their PT_TLS template, the relocation through which code reaches
 * each one (TLSDESC, TPOFF64, DTPMOD64/DTPOFF64 or none), and the PT_LOAD segments needed to
 * turn a file address into a process address. Pure file reading via libelf (read, never
 * mmap, so a file truncated under us cannot SIGBUS). Never prints, never touches a process.
 * Once elf_tls_use_parser named the parser helper (util/parser_client.h), elf_tls_scan sends
 * the file there (tls/tls_wire.h: tls/elf_tls_remote.c) and this process parses nothing.
 */
#ifndef CTXPROF_ELF_TLS_H
#define CTXPROF_ELF_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "tls/elf_go.h"

struct parser_client;

enum elf_tls_reloc {
        ELF_TLS_RELOC_NONE = 0,     /* no dynamic relocation names the variable */
        ELF_TLS_RELOC_TLSDESC = 1,  /* R_X86_64_TLSDESC: 16-byte {entry, arg} descriptor */
        ELF_TLS_RELOC_TPOFF64 = 2,  /* R_X86_64_TPOFF64: GOT slot holds the tp offset (IE) */
        ELF_TLS_RELOC_DTPMOD64 = 3, /* R_X86_64_DTPMOD64 (+ DTPOFF64): GOT {module, offset} */
};

struct elf_tls_sym {
        int defined;           /* 1 = defined in this file (st_shndx != SHN_UNDEF) */
        int in_dynsym;         /* 1 = found in .dynsym, 0 = only in .symtab */
        unsigned type;         /* STT_* */
        uint64_t value;        /* st_value (TLS: offset inside the module's TLS template) */
        uint64_t size;         /* st_size */
        int reloc;             /* enum elf_tls_reloc (TLS variables only) */
        uint64_t reloc_where;  /* r_offset of that relocation (file virtual address) */
        int64_t reloc_addend;  /* its r_addend */
        uint64_t dtpoff_where; /* DTPMOD64 case: r_offset of the DTPOFF64 slot, 0 if none
                                * (local-dynamic: the offset is then value + addend) */
};

#define ELF_TLS_NEED_TLS 0x1 /* scan flags (elf_tls_scan) */
#define ELF_TLS_NO_DWARF 0x2
#define ELF_TLS_FLAGS    (ELF_TLS_NEED_TLS | ELF_TLS_NO_DWARF)

#define ELF_TLS_MAX_LOADS 16
#define ELF_TLS_MAX_NAMES 16

struct elf_tls_load {
        uint64_t vaddr, offset, filesz, memsz;
};

struct elf_tls_info {
        unsigned e_type;   /* ET_EXEC / ET_DYN */
        int is_executable; /* ET_EXEC, DF_1_PIE, or ET_DYN with PT_INTERP */
        int has_tls;       /* PT_TLS present */
        uint64_t tls_vaddr, tls_memsz, tls_align;
        size_t nloads;
        struct elf_tls_load loads[ELF_TLS_MAX_LOADS];
        struct elf_go_info go; /* an executable's Go runtime layout (elf_go.h) */
};

/*
 * Read fd (an ELF file; the caller keeps ownership) and look up names[0..n) in .dynsym,
 * falling back to .symtab for names .dynsym does not define. syms[i] describes names[i]
 * (all zero if absent). flags: ELF_TLS_NEED_TLS skips the symbol lookup when the file has
 * no PT_TLS (cheap filter when scanning every mapped file); ELF_TLS_NO_DWARF leaves a Go
 * executable's DWARF unread (info->go from its version alone: elf_go.h), for a caller that
 * must not wait for it (the sampling loop).
 * 0 = read (possibly nothing found), -ENOEXEC = not ELF / not x86-64 ELF64 / corrupt,
 * -EINVAL (n > ELF_TLS_MAX_NAMES), -EBUSY = the parser helper was not asked (another
 * thread's request held it past PARSER_JOB_WAIT_MS, or none is running now: try again
 * later, the file is not to blame), other -errno (-EPROTO: the file stalled, killed or
 * confused the helper).
 */
int elf_tls_scan(int fd, const char *const *names, size_t n, unsigned flags,
                 struct elf_tls_info *info, struct elf_tls_sym *syms);
/* The same for a caller on the sampling loop: -EBUSY at once when the parser helper is busy
 * with another thread's request (the caller tries again later), never waiting for it. */
int elf_tls_scan_nowait(int fd, const char *const *names, size_t n, unsigned flags,
                        struct elf_tls_info *info, struct elf_tls_sym *syms);
/* The scan in this process (the parser helper's server; the others when no helper is named). */
int elf_tls_scan_local(int fd, const char *const *names, size_t n, unsigned flags,
                       struct elf_tls_info *info, struct elf_tls_sym *syms);
/* Scans go to the parser helper pc from now on (NULL: this process again). Set before any
 * scan runs on another thread and cleared after the last; pc outlives its use here. A scan
 * the helper times out, dies on or answers out of form for fails (-EPROTO): the file is
 * treated as not ELF. */
void elf_tls_use_parser(struct parser_client *pc);

/* The static TLS offset from the thread pointer of the main executable's block (x86-64,
 * variant II, glibc's _dl_determine_tlsoffset for the first module):
 * tp_offset(var) = st_value - elf_tls_exec_block_offset(info). */
uint64_t elf_tls_exec_block_offset(const struct elf_tls_info *info);

/* Load bias of a file mapped at `start` with file offset `pgoff` (one line of
 * /proc/PID/maps): process address = bias + file virtual address. -ENOENT when no PT_LOAD
 * covers pgoff. */
int elf_tls_load_bias(const struct elf_tls_info *info, uint64_t start, uint64_t pgoff,
                      uint64_t *bias);

#endif
