/*
 * sampler_tls.c — FALLBACK TLS locator used by the sampler while the real locator (branch
 * tlsloc, daemon/tls_locate.c) is not merged: finds custom_labels_current_set and
 * ctx_span_context_v1 only in the main executable (.dynsym, then .symtab) and computes the
 * static offset from PT_TLS (x86-64 variant II: tp - roundup(memsz, align) + st_value).
 * Libraries (TLSDESC, DTV) are left NONE. Reads the file via /proc/PID/exe. Never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctx/abi.h"
#include "sampler_tls.h"

static int find_sym(Elf *e, const char *name, GElf_Sym *out)
{
        Elf_Scn *scn = NULL;
        int pass;

        for (pass = 0; pass < 2; pass++) {
                Elf32_Word want = pass == 0 ? SHT_DYNSYM : SHT_SYMTAB;

                scn = NULL;
                while ((scn = elf_nextscn(e, scn))) {
                        GElf_Shdr sh;
                        Elf_Data *d;
                        size_t i, n;

                        if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize)
                                continue;
                        d = elf_getdata(scn, NULL);
                        if (!d)
                                continue;
                        n = sh.sh_size / sh.sh_entsize;
                        for (i = 0; i < n; i++) {
                                GElf_Sym s;
                                const char *nm;

                                if (!gelf_getsym(d, (int)i, &s) ||
                                    GELF_ST_TYPE(s.st_info) != STT_TLS || s.st_shndx == SHN_UNDEF)
                                        continue;
                                nm = elf_strptr(e, sh.sh_link, s.st_name);
                                if (nm && !strcmp(nm, name)) {
                                        *out = s;
                                        return 0;
                                }
                        }
                }
        }
        return -ENOENT;
}

int sampler_tls_locate(pid_t pid, struct ctxprof_tls_target *out)
{
        char path[64];
        GElf_Phdr ph, tls = {0};
        GElf_Sym sym;
        size_t i, nph;
        Elf *e;
        int fd, found = 0;

        memset(out, 0, sizeof(*out));
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        if (elf_version(EV_CURRENT) == EV_NONE) {
                close(fd);
                return -ENOSYS;
        }
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e || elf_getphdrnum(e, &nph)) {
                if (e)
                        elf_end(e);
                close(fd);
                return -ENOEXEC;
        }
        for (i = 0; i < nph; i++) {
                if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_TLS) {
                        tls = ph;
                        found = 1;
                }
        }
        if (found) {
                uint64_t align = tls.p_align ? tls.p_align : 1;
                int64_t block = (int64_t)((tls.p_memsz + align - 1) / align * align);

                if (!find_sym(e, CUSTOM_LABELS_CURRENT_SET_SYM, &sym)) {
                        out->labels.mode = CTXPROF_TLS_STATIC;
                        out->labels.tp_offset = (int64_t)sym.st_value - block;
                }
                if (!find_sym(e, CTX_SPAN_CONTEXT_SYM, &sym)) {
                        out->span.mode = CTXPROF_TLS_STATIC;
                        out->span.tp_offset = (int64_t)sym.st_value - block;
                }
        }
        elf_end(e);
        close(fd);
        return 0;
}
