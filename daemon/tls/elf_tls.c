/* SPDX-License-Identifier: MIT */
/*
 * elf_tls.c — reads one ELF file for the TLS locator: PT_TLS, PT_LOAD, DF_1_PIE/PT_INTERP,
 * the named symbols (.dynsym first, .symtab as fallback) and the dynamic relocations
 * (.rela.dyn and .rela.plt) that name them. Uses libelf in ELF_C_READ mode (pread, no mmap:
 * a hostile or truncating target cannot SIGBUS us); every libelf result is checked, so a
 * corrupt file is -ENOEXEC, never a crash. Never prints, never touches a process.
 */
#include "tls/elf_tls.h"
#include "util/page.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>

#ifndef R_X86_64_TLSDESC
#define R_X86_64_TLSDESC 36
#endif

/* A dynamic symbol table bigger than this is treated as corrupt (libc has ~3000). */
#define MAX_SYMS (1u << 22)

static int libelf_ready(void)
{
        static int ready; /* benign race: elf_version is idempotent */
        if (!ready) {
                if (elf_version(EV_CURRENT) == EV_NONE)
                        return -ENOSYS;
                ready = 1;
        }
        return 0;
}

static int read_phdrs(Elf *e, struct elf_tls_info *info)
{
        size_t n;
        if (elf_getphdrnum(e, &n) != 0)
                return -ENOEXEC;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(e, (int)i, &ph))
                        return -ENOEXEC;
                switch (ph.p_type) {
                case PT_LOAD:
                        if (info->nloads < ELF_TLS_MAX_LOADS) {
                                struct elf_tls_load *l = &info->loads[info->nloads++];
                                l->vaddr = ph.p_vaddr;
                                l->offset = ph.p_offset;
                                l->filesz = ph.p_filesz;
                                l->memsz = ph.p_memsz;
                        }
                        break;
                case PT_TLS:
                        info->has_tls = 1;
                        info->tls_vaddr = ph.p_vaddr;
                        info->tls_memsz = ph.p_memsz;
                        info->tls_align = ph.p_align ? ph.p_align : 1;
                        break;
                case PT_INTERP:
                        if (info->e_type == ET_DYN)
                                info->is_executable = 1;
                        break;
                default:
                        break;
                }
        }
        return 0;
}

static void read_dynamic_flags(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_tls_info *info)
{
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !sh->sh_entsize)
                return;
        size_t n = d->d_size / sh->sh_entsize;
        for (size_t i = 0; i < n; i++) {
                GElf_Dyn dyn;
                if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
                        break;
                if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
                        info->is_executable = 1;
        }
        (void)e;
}

/* Fill syms[] from one symbol table. symidx[i] receives the symbol index (dynsym only).
 * Only names not yet defined are looked up. */
static int scan_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *const *names,
                       size_t n, int is_dynsym, struct elf_tls_sym *syms, size_t *symidx)
{
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d)
                return -ENOEXEC;
        if (!sh->sh_entsize)
                return -ENOEXEC;
        size_t count = d->d_size / sh->sh_entsize;
        if (count > MAX_SYMS)
                return -ENOEXEC;
        for (size_t i = 1; i < count; i++) {
                GElf_Sym s;
                if (!gelf_getsym(d, (int)i, &s))
                        return -ENOEXEC;
                if (s.st_name == 0)
                        continue;
                const char *nm = elf_strptr(e, sh->sh_link, s.st_name);
                if (!nm)
                        return -ENOEXEC;
                /* first letters differ mostly: cheap reject first */
                for (size_t k = 0; k < n; k++) {
                        if (nm[0] != names[k][0] || strcmp(nm, names[k]) != 0)
                                continue;
                        if (syms[k].defined)
                                break;
                        if (s.st_shndx == SHN_UNDEF)
                                break; /* only referenced here */
                        syms[k].defined = 1;
                        syms[k].in_dynsym = is_dynsym;
                        syms[k].type = GELF_ST_TYPE(s.st_info);
                        syms[k].value = s.st_value;
                        syms[k].size = s.st_size;
                        if (is_dynsym)
                                symidx[k] = i;
                        break;
                }
        }
        return 0;
}

/* Record, for every defined TLS symbol, the relocation that reaches it. */
static int scan_relocs(Elf_Scn *scn, const GElf_Shdr *sh, size_t n, struct elf_tls_sym *syms,
                       const size_t *symidx)
{
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || !sh->sh_entsize)
                return -ENOEXEC;
        size_t count = d->d_size / sh->sh_entsize;
        for (size_t i = 0; i < count; i++) {
                GElf_Rela r;
                if (!gelf_getrela(d, (int)i, &r))
                        return -ENOEXEC;
                unsigned type = GELF_R_TYPE(r.r_info);
                size_t sym = GELF_R_SYM(r.r_info);
                int kind;
                switch (type) {
                case R_X86_64_TLSDESC:
                        kind = ELF_TLS_RELOC_TLSDESC;
                        break;
                case R_X86_64_TPOFF64:
                        kind = ELF_TLS_RELOC_TPOFF64;
                        break;
                case R_X86_64_DTPMOD64:
                        kind = ELF_TLS_RELOC_DTPMOD64;
                        break;
                case R_X86_64_DTPOFF64:
                        /* GD: the DTPOFF64 slot follows its DTPMOD64 slot */
                        for (size_t k = 0; k < n; k++)
                                if (syms[k].reloc == ELF_TLS_RELOC_DTPMOD64 && sym &&
                                    sym == symidx[k] && r.r_offset == syms[k].reloc_where + 8)
                                        syms[k].dtpoff_where = r.r_offset;
                        continue;
                default:
                        continue;
                }
                for (size_t k = 0; k < n; k++) {
                        /* a variable only in .symtab (hidden) has no named relocation, but a
                         * module-relative one reaches it (local-dynamic: DTPMOD64 of symbol 0,
                         * the offset is st_value) */
                        if (!syms[k].defined || syms[k].type != STT_TLS ||
                            (!syms[k].in_dynsym && sym))
                                continue;
                        /* named relocation, or a module-relative one (symbol 0) whose addend is
                         * the variable's template offset (hidden/protected variables) */
                        int match = sym ? sym == symidx[k]
                                        : (kind == ELF_TLS_RELOC_DTPMOD64 ||
                                           (uint64_t)r.r_addend == syms[k].value);
                        if (!match)
                                continue;
                        /* prefer TLSDESC > TPOFF64 > DTPMOD64, and named over module-relative */
                        if (syms[k].reloc && syms[k].reloc <= kind)
                                continue;
                        syms[k].reloc = kind;
                        syms[k].reloc_where = r.r_offset;
                        syms[k].reloc_addend = sym ? r.r_addend : 0;
                        syms[k].dtpoff_where = 0;
                }
        }
        return 0;
}

int elf_tls_scan_local(int fd, const char *const *names, size_t n, unsigned flags,
                       struct elf_tls_info *info, struct elf_tls_sym *syms)
{
        int rc = libelf_ready();
        if (rc)
                return rc;
        if (n > ELF_TLS_MAX_NAMES)
                return -EINVAL;
        memset(info, 0, sizeof(*info));
        memset(syms, 0, n * sizeof(*syms));
        size_t symidx[ELF_TLS_MAX_NAMES] = {0};

        Elf *e = elf_begin(fd, ELF_C_READ, NULL);
        if (!e)
                return -ENOEXEC;
        rc = -ENOEXEC;
        GElf_Ehdr eh;
        if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || gelf_getclass(e) != ELFCLASS64 ||
            eh.e_machine != EM_X86_64)
                goto out;
        /* a section header table beyond the end of the file: truncated (libelf would quietly
         * report no sections) */
        struct stat st;
        if (fstat(fd, &st) != 0 || eh.e_shoff > (uint64_t)st.st_size ||
            (uint64_t)eh.e_shnum * eh.e_shentsize > (uint64_t)st.st_size - eh.e_shoff)
                goto out;
        info->e_type = eh.e_type;
        if (eh.e_type == ET_EXEC)
                info->is_executable = 1;
        else if (eh.e_type != ET_DYN)
                goto out;
        rc = read_phdrs(e, info);
        if (rc)
                goto out;
        rc = 0;
        if (info->is_executable)
                elf_go_read(e, &info->go, !(flags & ELF_TLS_NO_DWARF));
        if ((flags & ELF_TLS_NEED_TLS) && !info->has_tls)
                goto out;

        size_t shstrndx;
        if (elf_getshdrstrndx(e, &shstrndx) != 0) {
                rc = -ENOEXEC;
                goto out;
        }
        /* pass 1: symbol tables (dynsym before symtab) and DT_FLAGS_1 */
        Elf_Scn *dynsym = NULL, *symtab = NULL;
        GElf_Shdr dynsym_sh, symtab_sh;
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
                GElf_Shdr sh;
                if (!gelf_getshdr(scn, &sh)) {
                        rc = -ENOEXEC;
                        goto out;
                }
                if (sh.sh_type == SHT_DYNSYM) {
                        dynsym = scn;
                        dynsym_sh = sh;
                } else if (sh.sh_type == SHT_SYMTAB) {
                        symtab = scn;
                        symtab_sh = sh;
                } else if (sh.sh_type == SHT_DYNAMIC) {
                        read_dynamic_flags(e, scn, &sh, info);
                }
        }
        if (dynsym) {
                rc = scan_symtab(e, dynsym, &dynsym_sh, names, n, 1, syms, symidx);
                if (rc)
                        goto out;
        }
        int missing = 0;
        for (size_t k = 0; k < n; k++)
                missing |= !syms[k].defined;
        if (missing && symtab) {
                rc = scan_symtab(e, symtab, &symtab_sh, names, n, 0, syms, symidx);
                if (rc)
                        goto out;
        }
        int any_tls = 0;
        for (size_t k = 0; k < n; k++)
                any_tls |= syms[k].defined && syms[k].type == STT_TLS;
        if (!any_tls || !dynsym)
                goto out;
        /* pass 2: relocation sections that refer to .dynsym (.rela.dyn, .rela.plt) */
        size_t dynsym_idx = elf_ndxscn(dynsym);
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
                GElf_Shdr sh;
                if (!gelf_getshdr(scn, &sh)) {
                        rc = -ENOEXEC;
                        goto out;
                }
                if (sh.sh_type != SHT_RELA || sh.sh_link != dynsym_idx)
                        continue;
                rc = scan_relocs(scn, &sh, n, syms, symidx);
                if (rc)
                        goto out;
        }
out:
        elf_end(e);
        return rc;
}

uint64_t elf_tls_exec_block_offset(const struct elf_tls_info *info)
{
        /* glibc: off = roundup(memsz - firstbyte, align) + firstbyte, where firstbyte =
         * -p_vaddr & (align - 1) (0 for every linker output seen in practice).
         * musl (not handled here): offset = memsz + ((-memsz - image) & (align - 1)) with the
         * run-time image address and align >= 8; equal to glibc's when p_vaddr is aligned. */
        uint64_t align = info->tls_align ? info->tls_align : 1;
        uint64_t fb = (0 - info->tls_vaddr) & (align - 1);
        uint64_t sz = info->tls_memsz - fb;
        return ((sz + align - 1) / align) * align + fb;
}

int elf_tls_load_bias(const struct elf_tls_info *info, uint64_t start, uint64_t pgoff,
                      uint64_t *bias)
{
        for (size_t i = 0; i < info->nloads; i++) {
                const struct elf_tls_load *l = &info->loads[i];
                uint64_t page_off = l->offset & ~(page_size() - 1); /* where its mapping starts */
                if (pgoff < page_off || pgoff >= l->offset + (l->filesz ? l->filesz : 1))
                        continue;
                /* the byte at file offset pgoff has file address l->vaddr + (pgoff - l->offset) */
                *bias = start - (l->vaddr + pgoff - l->offset);
                return 0;
        }
        return -ENOENT;
}
