/* SPDX-License-Identifier: MIT */
/*
 * elf_syms.c — one offline elfutils session per module: file offset to raw names (see
 * elf_syms.h). Owns the Dwfl, the module's PT_LOAD table and its dwz alt file; a Go binary
 * without .symtab is named from its .gopclntab, and a Go binary's inlined calls come from it
 * too (go_pclntab.h). Must never print, open the module by a name, follow a debug link
 * (debuginfo_find.h), intern or demangle (the caller does, with its bounds).
 */
#include "stack/elf_syms.h"
#include "stack/debuginfo_find.h"
#include "stack/go_pclntab.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct load_seg {
        GElf_Off off;
        GElf_Xword filesz;
        GElf_Addr vaddr;
};

#define ELF_SYMS_GO_INLINE_MAX 32 /* frames of one Go pc: inlined calls and the function */

struct elf_syms {
        Dwfl *dwfl;
        Dwfl_Module *mod;
        GElf_Addr bias;
        struct load_seg *segs;
        size_t nsegs;
        int dwarf;                  /* its DWARF may be read (debuginfo_dwarf_prepare said so) */
        struct debuginfo_module dm; /* the module's userdata for the find_debuginfo hook */
        struct debuginfo_alt alt;   /* its dwz alt file, freed after dwfl_end */
        struct go_pclntab go;       /* a Go binary's function table (into the Elf's data) */
};

/* The module's ELF is the descriptor (dwfl_report_elf), never found by name; debug files by
 * build id only (debuginfo_find.h). */
static const Dwfl_Callbacks offline_cb = {
    .find_elf = debuginfo_find_elf,
    .find_debuginfo = debuginfo_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

void elf_syms_free(struct elf_syms *e)
{
        if (!e)
                return;
        if (e->dwfl)
                dwfl_end(e->dwfl);
        debuginfo_alt_free(&e->alt);
        free(e->segs);
        free(e);
}

/* The bytes of elf from address addr to the end of the SHT_PROGBITS section holding it. */
static const uint8_t *bytes_at(Elf *elf, uint64_t addr, size_t *len)
{
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                Elf_Data *d;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || addr < sh.sh_addr ||
                    addr - sh.sh_addr >= sh.sh_size)
                        continue;
                d = elf_getdata(scn, NULL);
                if (!d || !d->d_buf || addr - sh.sh_addr >= d->d_size)
                        return NULL;
                *len = d->d_size - (addr - sh.sh_addr);
                return (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
        }
        return NULL;
}

/* A Go binary's .gopclntab, for the names .symtab would give (stripped with -s -w), and its
 * go:func.* (from the runtime's moduledata in .noptrdata) for inlined frames. */
static void load_gopclntab(struct elf_syms *e, Elf *elf)
{
        GElf_Addr text = 0, pcln_addr = 0;
        Elf_Data *data = NULL, *noptr = NULL;
        Elf_Scn *scn = NULL;
        uint64_t gofunc;
        size_t shstrndx;

        if (elf_getshdrstrndx(elf, &shstrndx) != 0)
                return;
        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                const char *name;

                if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
                        continue;
                if (!strcmp(name, ".text")) {
                        text = sh.sh_addr;
                } else if (!strcmp(name, ".gopclntab") && sh.sh_type == SHT_PROGBITS) {
                        data = elf_getdata(scn, NULL);
                        pcln_addr = sh.sh_addr;
                } else if (!strcmp(name, ".noptrdata") && sh.sh_type == SHT_PROGBITS) {
                        noptr = elf_getdata(scn, NULL);
                }
        }
        if (!data || !data->d_buf || go_pclntab_init(&e->go, data->d_buf, data->d_size, text))
                return;
        if (noptr && noptr->d_buf &&
            !go_pclntab_find_gofunc(&e->go, pcln_addr, noptr->d_buf, noptr->d_size, &gofunc))
                e->go.gofunc = bytes_at(elf, gofunc, &e->go.gofunc_len);
}

/* The PT_LOAD segments of elf, to turn file offsets into addresses. */
static int load_segs(struct elf_syms *e, Elf *elf)
{
        size_t nph = 0;
        if (elf_getphdrnum(elf, &nph) != 0)
                return -EINVAL;
        e->segs = calloc(nph ? nph : 1, sizeof(*e->segs));
        if (!e->segs)
                return -ENOMEM;
        for (size_t i = 0; i < nph; i++) {
                GElf_Phdr ph;
                if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
                        e->segs[e->nsegs].off = ph.p_offset;
                        e->segs[e->nsegs].filesz = ph.p_filesz;
                        e->segs[e->nsegs].vaddr = ph.p_vaddr;
                        e->nsegs++;
                }
        }
        return 0;
}

struct elf_syms *elf_syms_open(int fd, const char *name, int *dwarf_refused, int *err)
{
        *dwarf_refused = 0;
        struct elf_syms *e = calloc(1, sizeof(*e));
        Dwfl *dwfl = e ? dwfl_begin(&offline_cb) : NULL;
        if (!dwfl) {
                close(fd);
                free(e);
                *err = -ENOMEM;
                return NULL;
        }
        e->alt = DEBUGINFO_ALT_NONE;
        e->dwfl = dwfl;
        dwfl_report_begin(dwfl);
        /* libdwfl owns fd once the module is reported (closed by dwfl_end). */
        Dwfl_Module *mod = dwfl_report_elf(dwfl, name, name, fd, 0, false);
        if (!mod || dwfl_report_end(dwfl, NULL, NULL) != 0) {
                if (!mod)
                        close(fd);
                elf_syms_free(e);
                *err = -EINVAL;
                return NULL;
        }
        Elf *elf = dwfl_module_getelf(mod, &e->bias);
        *err = elf ? load_segs(e, elf) : -EINVAL;
        if (*err) {
                elf_syms_free(e);
                return NULL;
        }
        load_gopclntab(e, elf);
        /* Before any lookup that may ask find_debuginfo or read DWARF. */
        GElf_Word crc;
        e->dm = (struct debuginfo_module){.dwfl = dwfl,
                                          .main_debuglink = dwelf_elf_gnu_debuglink(elf, &crc)};
        void **ud = NULL;
        dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
        if (ud)
                *ud = &e->dm;
        int dr = debuginfo_dwarf_prepare(dwfl, mod, &e->alt);
        *dwarf_refused = dr < 0;
        e->dwarf = dr > 0;
        e->mod = mod;
        return e;
}

static const char *die_linkage_or_name(Dwarf_Die *die)
{
        Dwarf_Attribute a;
        const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
        if (!n)
                n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
        if (!n)
                n = dwarf_diename(die);
        return n;
}

static int is_func(Dwarf_Die *d)
{
        int t = dwarf_tag(d);
        return t == DW_TAG_subprogram || t == DW_TAG_inlined_subroutine;
}

/* The inline chain at addr from DWARF (eu-addr2line -i logic). Returns entries written. */
static int dwarf_chain(struct elf_syms *e, GElf_Addr addr, struct elf_sym_entry *out, int max)
{
        Dwarf_Addr bias = 0;
        Dwarf_Die *cudie = dwfl_module_addrdie(e->mod, addr, &bias);
        if (!cudie)
                return 0;
        Dwarf_Die *scopes = NULL;
        int ns = dwarf_getscopes(cudie, addr - bias, &scopes);
        int i = 0;
        while (i < ns && !is_func(&scopes[i]))
                i++;
        if (ns <= 0 || i >= ns) {
                free(scopes);
                return 0;
        }
        Dwarf_Files *files = NULL;
        size_t nfiles = 0;
        if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
                files = NULL;

        const char *file = NULL;
        int line = -1;
        Dwfl_Line *ln = dwfl_module_getsrc(e->mod, addr);
        if (ln) {
                int l = 0;
                file = dwfl_lineinfo(ln, NULL, &l, NULL, NULL, NULL);
                line = file ? l : -1;
        }

        Dwarf_Die die = scopes[i];
        free(scopes);
        int n = 0;
        for (;;) {
                int tag = dwarf_tag(&die);
                out[n].function = die_linkage_or_name(&die);
                out[n].file = file;
                out[n].line = line;
                out[n].inlined = tag == DW_TAG_inlined_subroutine;
                n++;
                if (tag != DW_TAG_inlined_subroutine || n >= max)
                        break;
                /* The caller's location is this inlined instance's call site. */
                Dwarf_Attribute a;
                Dwarf_Word cf = 0, cl = 0;
                file = NULL;
                line = -1;
                if (files && dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &a), &cf) == 0 &&
                    cf < nfiles)
                        file = dwarf_filesrc(files, cf, NULL, NULL);
                if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &a), &cl) == 0)
                        line = (int)cl;
                Dwarf_Die *sc2 = NULL;
                int n2 = dwarf_getscopes_die(&die, &sc2);
                int j = 1;
                while (j < n2 && !is_func(&sc2[j]))
                        j++;
                if (n2 <= 0 || j >= n2) {
                        free(sc2);
                        break;
                }
                die = sc2[j];
                free(sc2);
        }
        /* The outermost entry must be a real function; mark it so whatever stopped us. */
        out[n - 1].inlined = 0;
        return n;
}

/* A Go binary's frames at addr (a link-time address) from its .gopclntab: the calls inlined
 * there, innermost first, then the function. */
static int go_frames(const struct elf_syms *e, uint64_t addr, struct elf_sym_entry *out, int max)
{
        const char *names[ELF_SYMS_GO_INLINE_MAX];
        int n = go_pclntab_frames(&e->go, addr, names,
                                  max < ELF_SYMS_GO_INLINE_MAX ? max : ELF_SYMS_GO_INLINE_MAX);

        for (int i = 0; i < n; i++)
                out[i] = (struct elf_sym_entry){
                    .function = names[i], .file = NULL, .line = -1, .inlined = i < n - 1};
        return n;
}

static int is_mangled(const char *n)
{
        return n && n[0] == '_' && n[1] == 'Z';
}

int elf_syms_resolve(struct elf_syms *e, uint64_t off, struct elf_sym_entry *out, int max)
{
        if (!e || max < 1)
                return 0;
        const struct load_seg *seg = NULL;
        for (size_t i = 0; i < e->nsegs; i++)
                if (off >= e->segs[i].off && off - e->segs[i].off < e->segs[i].filesz) {
                        seg = &e->segs[i];
                        break;
                }
        if (!seg)
                return 0;
        GElf_Addr addr = off - seg->off + seg->vaddr + e->bias;

        int n = e->dwarf ? dwarf_chain(e, addr, out, max) : 0;
        if (e->go.p && n <= 1) {
                /* Go: its own table knows the calls inlined at addr (the DWARF Go writes
                 * names none to libdw); DWARF's line at addr is the innermost one's */
                struct elf_sym_entry first = n ? out[0] : (struct elf_sym_entry){.line = -1};
                int k = go_frames(e, addr - e->bias, out, max);

                if (k > n) {
                        out[0].file = first.file;
                        out[0].line = first.line;
                        return k;
                }
                if (n)
                        out[0] = first; /* go_frames wrote over it */
        }
        /* Symbol table name for the real function: the exact (mangled) C++ symbol when DWARF has
         * no linkage name, and the only name without DWARF. */
        GElf_Sym sym;
        GElf_Off soff = 0;
        const char *sname = dwfl_module_addrinfo(e->mod, addr, &soff, &sym, NULL, NULL, NULL);
        if (n > 0) {
                const char *dn = out[n - 1].function;
                if (sname && (!dn || (is_mangled(sname) && !is_mangled(dn) && !strstr(dn, "::") &&
                                      !strchr(dn, '('))))
                        out[n - 1].function = sname;
                return n;
        }
        if (!sname)
                return 0;
        out[0] = (struct elf_sym_entry){.function = sname, .file = NULL, .line = -1};
        Dwfl_Line *ln = e->dwarf ? dwfl_module_getsrc(e->mod, addr) : NULL;
        if (ln) {
                int l = 0;
                const char *f = dwfl_lineinfo(ln, NULL, &l, NULL, NULL, NULL);
                if (f) {
                        out[0].file = f;
                        out[0].line = l;
                }
        }
        return 1;
}
