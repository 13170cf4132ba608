/* SPDX-License-Identifier: MIT */
/*
 * debuginfo_find.h — where a module's separate debug information comes from, and the only
 * places: a file found by build id under DEBUGINFO_BUILD_ID_DIR (DIR/XX/REST.debug), or a
 * debuginfod server when the user opted in (debuginfod_policy.h). Never a name the target's
 * bytes give: not .gnu_debuglink (a FIFO there blocked the writer thread, a CRC-0 link pulled
 * names from a file its user cannot read), not .gnu_debugaltlink (dwz), not a split-DWARF
 * DW_AT_[GNU_]dwo_name, not a path relative to the module. Never prints.
 *
 * A debug file is opened O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC and used
 * only if it is a regular file that everyone may read (a file there that only root reads
 * must not put its names in a profile a user reads) whose own GNU build id is the one asked
 * for. A dwz alt file is found the same way, by the alt file's build id, and attached with
 * dwarf_setalt; DWARF that would still need a file by name (an alt file not found by build
 * id, split-DWARF skeleton units) is refused: the module keeps its symbol-table names.
 *
 * Thread safety: no state of its own; each Dwfl is used by one thread at a time.
 */
#ifndef CTXPROF_DEBUGINFO_FIND_H
#define CTXPROF_DEBUGINFO_FIND_H

#include <elfutils/libdwfl.h>
#include <stddef.h>

#define DEBUGINFO_BUILD_ID_DIR "/usr/lib/debug/.build-id"
#define DEBUGINFO_ID_MIN       3          /* bytes; libdw's own lower bound for a build id */
#define DEBUGINFO_ID_MAX       64         /* bytes; = MODULES_BUILD_ID_MAX */
#define DEBUGINFO_MAX_UNITS    (1u << 18) /* DWARF units scanned per module, then refused */

/* What the callbacks know about one reported module: put a pointer to it in the module's
 * userdata (dwfl_module_info) right after reporting it. Without it, find_debuginfo treats
 * every request as one for the module's own debug file. */
struct debuginfo_module {
        Dwfl *dwfl;                 /* for its debuginfod client (NULL: none) */
        const char *main_debuglink; /* dwelf_elf_gnu_debuglink of the module's own ELF */
};

/* Dwfl_Callbacks.find_elf for modules reported from a descriptor (dwfl_report_elf with
 * fd >= 0): opens nothing, and leaves no file name behind for libdwfl to open either. */
int debuginfo_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp);
/* Dwfl_Callbacks.find_debuginfo: the module's debug file by its build id (see above); -1 with
 * errno 0 when there is none (libdwfl then uses .dynsym). The debuglink name, its CRC and
 * libdwfl's alt-file request are ignored: the alt file is attached by debuginfo_dwarf_prepare. */
int debuginfo_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                             Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                             GElf_Word debuglink_crc, char **debuginfo_file_name);

/* A new descriptor of the debug file with this build id, or -errno (-ENOENT none, -EINVAL a
 * length outside DEBUGINFO_ID_MIN..DEBUGINFO_ID_MAX). dwfl may be NULL (no debuginfod). */
int debuginfo_open_build_id(Dwfl *dwfl, const unsigned char *id, size_t len);

/* A dwz alt file attached to a module's DWARF; free it after dwfl_end of the module's Dwfl. */
struct debuginfo_alt {
        int fd;
        Elf *elf;
        Dwarf *dw;
};
#define DEBUGINFO_ALT_NONE ((struct debuginfo_alt){.fd = -1})
void debuginfo_alt_free(struct debuginfo_alt *);

/* Load the module's DWARF (its own or its debug file's) and make it safe to read: attach the
 * alt file it names by build id (*alt receives it), and refuse what would make libdw open a
 * file by name. Returns 1 when the DWARF may be read, 0 when the module has none, -ENOENT
 * when it is refused (alt file not found by build id, split-DWARF units, more than
 * DEBUGINFO_MAX_UNITS units), -ENOMEM. Call before any other DWARF lookup of the module. */
int debuginfo_dwarf_prepare(Dwfl *dwfl, Dwfl_Module *mod, struct debuginfo_alt *alt);

#endif
