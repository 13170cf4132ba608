/* SPDX-License-Identifier: MIT */
/*
 * debuginfo_find.c — the rule of debuginfo_find.h: debug files by build id only, and DWARF
 * that never makes libdw open a file by a name the target chose. Never prints.
 */
#include "stack/debuginfo_find.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(DEBUGINFO_ID_MIN >= 1 && DEBUGINFO_ID_MAX <= 64, "build id bounds");

#define DEBUGINFO_OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC)
/* DIR "/" XX "/" REST ".debug" */
#define DEBUGINFO_PATH_MAX (sizeof(DEBUGINFO_BUILD_ID_DIR) + 4 + 2 * DEBUGINFO_ID_MAX + 8)

/* libdebuginfod's lookup (no header is installed with libdw; the prototype is its ABI):
 * taken from the library libdw loaded for its own client, never loaded by us. */
typedef int (*debuginfod_find_fn)(debuginfod_client *client, const unsigned char *build_id,
                                  int build_id_len, char **path);
#define LIBDEBUGINFOD "libdebuginfod.so.1"
static pthread_once_t dfind_once = PTHREAD_ONCE_INIT;
static debuginfod_find_fn dfind;

static void dfind_init(void)
{
        void *so = dlopen(LIBDEBUGINFOD, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (so)
                dfind = (debuginfod_find_fn)dlsym(so, "debuginfod_find_debuginfo");
}

/* fd is the debug file asked for: a regular file whose GNU build id is id. world: it must
 * also be readable by everyone (a file of the local debug directory). */
static int check_debug_file(int fd, const unsigned char *id, size_t len, int world)
{
        struct stat st;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode))
                return -EINVAL;
        if (world && !(st.st_mode & S_IROTH))
                return -EACCES;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf)
                return -EINVAL;
        const void *got = NULL;
        ssize_t n = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &got) : -1;
        int ok = n == (ssize_t)len && !memcmp(got, id, len);
        elf_end(elf);
        return ok ? 0 : -ESTALE;
}

/* fd when it is the debug file asked for (check_debug_file), else closed and -ENOENT. */
static int keep_checked(int fd, const unsigned char *id, size_t len, int world)
{
        if (fd < 0)
                return -ENOENT;
        if (check_debug_file(fd, id, len, world)) {
                close(fd);
                return -ENOENT;
        }
        return fd;
}

static int open_local(const unsigned char *id, size_t len)
{
        char path[DEBUGINFO_PATH_MAX];
        int p = snprintf(path, sizeof(path), "%s/%02x/", DEBUGINFO_BUILD_ID_DIR, id[0]);
        for (size_t i = 1; i < len; i++)
                p += snprintf(path + p, sizeof(path) - (size_t)p, "%02x", id[i]);
        snprintf(path + p, sizeof(path) - (size_t)p, ".debug");
        return keep_checked(open(path, DEBUGINFO_OPEN_FLAGS), id, len, 1);
}

static int open_debuginfod(Dwfl *dwfl, const unsigned char *id, size_t len)
{
        /* Only when DEBUGINFOD_URLS was kept (CTXPROF_DEBUGINFOD=1, debuginfod_policy.h):
         * without it libdwfl would still load libdebuginfod for a client with no server. */
        const char *urls = getenv("DEBUGINFOD_URLS");
        debuginfod_client *c = dwfl && urls && urls[0] ? dwfl_get_debuginfod_client(dwfl) : NULL;
        if (!c)
                return -ENOENT;
        pthread_once(&dfind_once, dfind_init);
        if (!dfind)
                return -ENOENT;
        char *path = NULL;
        int fd = dfind(c, id, (int)len, &path);
        free(path);
        return keep_checked(fd, id, len, 0);
}

int debuginfo_open_build_id(Dwfl *dwfl, const unsigned char *id, size_t len)
{
        if (!id || len < DEBUGINFO_ID_MIN || len > DEBUGINFO_ID_MAX)
                return -EINVAL;
        int fd = open_local(id, len);
        if (fd >= 0)
                return fd;
        return open_debuginfod(dwfl, id, len);
}

int debuginfo_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp)
{
        (void)mod;
        (void)userdata;
        (void)modname;
        (void)base;
        /* libdwfl opens a name left in *file_name by itself when we return no descriptor. */
        if (file_name) {
                free(*file_name);
                *file_name = NULL;
        }
        if (elfp)
                *elfp = NULL;
        errno = 0;
        return -1;
}

int debuginfo_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                             Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                             GElf_Word debuglink_crc, char **debuginfo_file_name)
{
        (void)modname;
        (void)base;
        (void)file_name;
        (void)debuglink_crc;
        (void)debuginfo_file_name; /* left NULL: libdwfl would open a name left there */
        const struct debuginfo_module *dm = userdata ? *userdata : NULL;
        /* libdwfl asks the same hook for the alt file, with the .gnu_debugaltlink name in
         * place of the module's .gnu_debuglink: that one is attached by build id later. */
        int alt_request = dm && debuglink_file != dm->main_debuglink;
        const unsigned char *id = NULL;
        GElf_Addr vaddr;
        int len = alt_request ? 0 : dwfl_module_build_id(mod, &id, &vaddr);
        int fd = len > 0 ? debuginfo_open_build_id(dm ? dm->dwfl : NULL, id, (size_t)len) : -1;
        errno = 0; /* nothing found is not an error: libdwfl falls back to .dynsym */
        return fd >= 0 ? fd : -1;
}

void debuginfo_alt_free(struct debuginfo_alt *a)
{
        if (!a)
                return;
        if (a->dw)
                dwarf_end(a->dw);
        if (a->elf)
                elf_end(a->elf);
        if (a->fd >= 0)
                close(a->fd);
        *a = DEBUGINFO_ALT_NONE;
}

/* The dwz alt file named (by build id) in dw's .gnu_debugaltlink, attached: 0, or 1 when dw
 * names none, or -ENOENT. libdw would otherwise look for it itself at the first reference
 * into it, by the section's path relative to the module's directory. */
static int attach_alt(Dwfl *dwfl, Dwarf *dw, struct debuginfo_alt *alt)
{
        const char *name = NULL;
        const void *id = NULL;
        ssize_t n = dwelf_dwarf_gnu_debugaltlink(dw, &name, &id);
        if (n <= 0)
                return 1; /* libdw's own lookup gives up on exactly these too */
        int fd = debuginfo_open_build_id(dwfl, id, (size_t)n);
        if (fd < 0)
                return -ENOENT;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        Dwarf *adw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
        if (!adw) {
                if (elf)
                        elf_end(elf);
                close(fd);
                return -ENOENT;
        }
        dwarf_setalt(dw, adw);
        *alt = (struct debuginfo_alt){.fd = fd, .elf = elf, .dw = adw};
        return 0;
}

/* 0 when no unit of dw is a split-DWARF skeleton (whose .dwo libdw looks up by the name in
 * the unit: DW_AT_[GNU_]dwo_name under the module's directory or DW_AT_comp_dir). Reads unit
 * headers and unit DIEs only, no attribute that could refer into the alt file. */
static int no_split_units(Dwarf *dw)
{
        Dwarf_CU *cu = NULL;
        Dwarf_Half version;
        uint8_t type;
        unsigned n = 0;
        while (dwarf_get_units(dw, cu, &cu, &version, &type, NULL, NULL) == 0) {
                if (type == DW_UT_skeleton || ++n > DEBUGINFO_MAX_UNITS)
                        return -ENOENT;
        }
        return 0;
}

int debuginfo_dwarf_prepare(Dwfl *dwfl, Dwfl_Module *mod, struct debuginfo_alt *alt)
{
        *alt = DEBUGINFO_ALT_NONE;
        Dwarf_Addr bias = 0;
        Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
        if (!dw)
                return 0;
        int r = attach_alt(dwfl, dw, alt);
        if (r < 0)
                return r;
        r = no_split_units(dw);
        return r < 0 ? r : 1;
}
