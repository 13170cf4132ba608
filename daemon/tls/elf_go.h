/* SPDX-License-Identifier: MIT */
/*
 * elf_go.h — what a Go executable says about where its goroutine labels are: its Go version
 * (.go.buildinfo) and the runtime's layout (runtime.g, runtime.m, the labels map) from its
 * DWARF, or from a table of versions checked here when the DWARF was stripped. Reads the
 * file only (libelf/libdw on an Elf the caller opened with ELF_C_READ), in the parser helper
 * like every other ELF a target maps; bounded; never prints, never touches a process.
 */
#ifndef CTXPROF_ELF_GO_H
#define CTXPROF_ELF_GO_H

#include <libelf.h>
#include <stdint.h>

enum elf_go_source {
        ELF_GO_NONE = 0,    /* not a Go program (no .go.buildinfo) */
        ELF_GO_DWARF = 1,   /* the layout from the binary's DWARF */
        ELF_GO_VERSION = 2, /* the layout from the table, by the binary's version */
        ELF_GO_UNKNOWN = 3, /* a Go program whose layout is not known: no labels, counted */
};

struct elf_go_info {
        uint8_t source;       /* enum elf_go_source */
        uint8_t major, minor; /* go1.19.8: 1, 19 (0, 0 when the version is unreadable) */
        uint8_t sets_labels;  /* 1 = its function table has runtime/pprof.SetGoroutineLabels
                               * (the linker keeps it only when something calls it) */
        uint16_t g_m;         /* offsetof(runtime.g, m) */
        uint16_t m_curg;      /* offsetof(runtime.m, curg) */
        uint16_t g_labels;    /* offsetof(runtime.g, labels) */
        uint16_t pad2;
        uint32_t pad3;
};
_Static_assert(sizeof(struct elf_go_info) == 16, "part of the parser helper's wire answer");

/* Fill *go from e (an executable; the caller owns e); its DWARF only when use_dwarf (else
 * the table by version decides). What could not be read leaves go->source ELF_GO_NONE (no
 * .go.buildinfo) or ELF_GO_UNKNOWN. */
void elf_go_read(Elf *e, struct elf_go_info *go, int use_dwarf);

/* The table's layout for Go 1.minor: 0 and g_m, m_curg, g_labels set, or -ENOENT. */
int elf_go_table(unsigned major, unsigned minor, struct elf_go_info *go);

#endif
