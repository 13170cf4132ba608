/* SPDX-License-Identifier: MIT */
/*
 * tls_wire.c — encoding and checking a PARSER_TLS request and answer (tls_wire.h). Must never
 * print or read past the payload it is given.
 */
#include "tls/tls_wire.h"

#include <errno.h>
#include <string.h>

int tls_wire_request(const char *const *names, size_t n, unsigned flags, struct tls_req *r)
{
        memset(r, 0, sizeof(*r));
        if (n > ELF_TLS_MAX_NAMES)
                return -EINVAL;
        if (flags & ~ELF_TLS_FLAGS)
                return -EINVAL;
        r->flags = (uint8_t)flags;
        r->n = (uint8_t)n;
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(names[i]);
                if (len >= TLS_WIRE_NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(r->names[i], names[i], len + 1);
        }
        return 0;
}

int tls_wire_names(const struct tls_req *r, const char *names[ELF_TLS_MAX_NAMES])
{
        if (r->n > ELF_TLS_MAX_NAMES || (r->flags & ~ELF_TLS_FLAGS))
                return -EINVAL;
        for (unsigned i = 0; i < r->n; i++) {
                if (!memchr(r->names[i], 0, TLS_WIRE_NAME_MAX))
                        return -EINVAL;
                names[i] = r->names[i];
        }
        return 0;
}

void tls_wire_encode(int ret, const struct elf_tls_info *info, const struct elf_tls_sym *syms,
                     size_t n, struct tls_resp *out)
{
        memset(out, 0, sizeof(*out));
        out->ret = !ret || ret == -ENOMEM ? ret : -ENOEXEC; /* the file made it fail */
        out->n = (uint8_t)(n > ELF_TLS_MAX_NAMES ? ELF_TLS_MAX_NAMES : n);
        if (ret)
                return;
        out->e_type = info->e_type;
        out->is_executable = info->is_executable != 0;
        out->has_tls = info->has_tls != 0;
        out->nloads =
            (uint8_t)(info->nloads > ELF_TLS_MAX_LOADS ? ELF_TLS_MAX_LOADS : info->nloads);
        out->tls_vaddr = info->tls_vaddr;
        out->tls_memsz = info->tls_memsz;
        out->tls_align = info->tls_align;
        out->go = info->go;
        for (unsigned i = 0; i < out->nloads; i++)
                out->loads[i] = (struct tls_wire_load){info->loads[i].vaddr, info->loads[i].offset,
                                                       info->loads[i].filesz, info->loads[i].memsz};
        for (unsigned i = 0; i < out->n; i++)
                out->syms[i] = (struct tls_wire_sym){.value = syms[i].value,
                                                     .size = syms[i].size,
                                                     .reloc_where = syms[i].reloc_where,
                                                     .dtpoff_where = syms[i].dtpoff_where,
                                                     .reloc_addend = syms[i].reloc_addend,
                                                     .type = syms[i].type,
                                                     .defined = syms[i].defined != 0,
                                                     .in_dynsym = syms[i].in_dynsym != 0,
                                                     .reloc = (uint8_t)syms[i].reloc};
}

static int sym_ok(const struct tls_wire_sym *w)
{
        return w->defined <= 1 && w->in_dynsym <= 1 && w->reloc <= ELF_TLS_RELOC_DTPMOD64 &&
               !w->pad;
}

/* A layout is only ever one the helper could have made: a known source, and offsets only
 * with a layout (they are bounded by their type). */
static int go_ok(const struct elf_go_info *g)
{
        int layout = g->source == ELF_GO_DWARF || g->source == ELF_GO_VERSION;

        return g->source <= ELF_GO_UNKNOWN && g->sets_labels <= 1 && !g->pad2 && !g->pad3 &&
               (layout || (!g->g_m && !g->m_curg && !g->g_labels));
}

int tls_wire_decode(const void *buf, uint32_t len, size_t n, struct elf_tls_info *info,
                    struct elf_tls_sym *syms)
{
        struct tls_resp r;
        if (len != sizeof(r) || n > ELF_TLS_MAX_NAMES)
                return -EPROTO;
        memcpy(&r, buf, sizeof(r));
        if (r.n != n || r.is_executable > 1 || r.has_tls > 1 || r.nloads > ELF_TLS_MAX_LOADS ||
            (r.ret && r.ret != -ENOEXEC && r.ret != -ENOMEM) || !go_ok(&r.go))
                return -EPROTO;
        for (size_t i = 0; i < n; i++)
                if (!sym_ok(&r.syms[i]))
                        return -EPROTO;
        memset(info, 0, sizeof(*info));
        memset(syms, 0, n * sizeof(*syms));
        if (r.ret)
                return r.ret;
        info->e_type = r.e_type;
        info->is_executable = r.is_executable;
        info->has_tls = r.has_tls;
        info->tls_vaddr = r.tls_vaddr;
        info->tls_memsz = r.tls_memsz;
        info->tls_align = r.tls_align;
        info->go = r.go;
        info->nloads = r.nloads;
        for (unsigned i = 0; i < r.nloads; i++)
                info->loads[i] = (struct elf_tls_load){r.loads[i].vaddr, r.loads[i].offset,
                                                       r.loads[i].filesz, r.loads[i].memsz};
        for (size_t i = 0; i < n; i++)
                syms[i] = (struct elf_tls_sym){.defined = r.syms[i].defined,
                                               .in_dynsym = r.syms[i].in_dynsym,
                                               .type = r.syms[i].type,
                                               .value = r.syms[i].value,
                                               .size = r.syms[i].size,
                                               .reloc = r.syms[i].reloc,
                                               .reloc_where = r.syms[i].reloc_where,
                                               .reloc_addend = r.syms[i].reloc_addend,
                                               .dtpoff_where = r.syms[i].dtpoff_where};
        return 0;
}
