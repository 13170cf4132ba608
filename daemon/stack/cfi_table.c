/* SPDX-License-Identifier: MIT */
/*
 * cfi_table.c — .eh_frame to compact unwind rows (see cfi_table.h). Owns the table it builds.
 * Must never print, never trust the file (every offset bounds-checked, every elfutils failure
 * an error), never keep the ELF handle after cfi_table_build returns.
 */
#include "stack/cfi_table.h"
#include "util/maps_line.h"
#include "util/clock.h"
#include "util/grow.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* .eh_frame_hdr (LSB "Exception Frame Header"): version 1 and the encodings GNU ld, gold and
 * lld write. Anything else is refused. */
#define EH_HDR_VERSION     1
#define EH_PE_PCREL_SDATA4 0x1b /* eh_frame_ptr */
#define EH_PE_UDATA4       0x03 /* fde_count */
#define EH_PE_DATAREL_S4   0x3b /* table entries: (initial location, FDE address) */
#define EH_HDR_FIXED       12   /* version, 3 encodings, eh_frame_ptr, fde_count */

#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RA  16
#define RA_CFA_OFF (-8) /* x86-64: the return address is pushed just below the CFA */
#define ROWS_FIRST 1024

struct exec_seg {
        uint64_t vaddr, size, offset;
};

struct builder {
        Dwarf_CFI *cfi;
        struct exec_seg *segs;
        size_t nsegs;
        struct cfi_table *t;
        size_t cap;
        uint64_t steps; /* CFI instructions interpreted (about): bounded by CFI_TABLE_MAX_STEPS */
};

/* The standard x86-64 .plt expression (GNU ld):
 *   DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11 (or 10); DW_OP_ge;
 *   DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. cfa = rsp + 8 + ((rip & 15) >= threshold ? 8 : 0). Returns the threshold, or -1. */
static int plt_threshold(const Dwarf_Op *o, size_t n)
{
        if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number != 8 || o[1].atom != DW_OP_breg16 ||
            o[1].number != 0 || o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and ||
            o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl ||
            o[8].atom != DW_OP_plus)
                return -1;
        if (o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15)
                return -1;
        return o[4].atom - DW_OP_lit0;
}

/* "register + offset" CFA rule -> (register, offset); 0 or -1. */
static int cfa_reg_off(const Dwarf_Op *o, size_t n, int *reg, int64_t *off)
{
        if (n != 1)
                return -1;
        if (o[0].atom == DW_OP_bregx) {
                *reg = (int)o[0].number;
                *off = (int64_t)o[0].number2;
                return 0;
        }
        if (o[0].atom >= DW_OP_breg0 && o[0].atom <= DW_OP_breg31) {
                *reg = o[0].atom - DW_OP_breg0;
                *off = (int64_t)o[0].number;
                return 0;
        }
        return -1;
}

/* A register saved at CFA + off ("offset(N)" rule) -> off; else -1 (and *kind says what). */
enum reg_kind { REG_SAME, REG_UNDEF, REG_AT_CFA, REG_OTHER };
static enum reg_kind reg_rule(Dwarf_Frame *f, int regno, int64_t *off)
{
        Dwarf_Op mem[3], *ops = NULL;
        size_t n = 0;

        if (dwarf_frame_register(f, regno, mem, &ops, &n))
                return REG_OTHER;
        if (n == 0)
                return ops ? REG_UNDEF : REG_SAME; /* libdw.h: ops == ops_mem means undefined */
        if (ops[0].atom != DW_OP_call_frame_cfa)
                return REG_OTHER;
        if (n == 1) {
                *off = 0;
                return REG_AT_CFA;
        }
        if (n == 2 && (ops[1].atom == DW_OP_plus_uconst || ops[1].atom == DW_OP_consts)) {
                *off = (int64_t)ops[1].number;
                return REG_AT_CFA;
        }
        return REG_OTHER;
}

/* regno's rule is "saved at rsp + off" (DW_CFA_expression: DW_OP_breg7 off). */
static bool at_rsp(Dwarf_Frame *f, int regno, int64_t off)
{
        Dwarf_Op mem[3], *ops = NULL;
        size_t n = 0;

        /* libdw gives a DW_CFA_expression with the CFA pushed first, as DWARF evaluates it */
        return !dwarf_frame_register(f, regno, mem, &ops, &n) && n == 2 &&
               ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_breg7 &&
               (int64_t)ops[1].number == off;
}

/* glibc's x86-64 __restore_rt: CFA = *(rsp + 160), rip at rsp + 168, rbp at rsp + 120 (the
 * ucontext the kernel pushed). Anything else marked a signal frame stays unsupported. */
static bool is_sigframe(Dwarf_Frame *f)
{
        Dwarf_Op *ops = NULL;
        size_t n = 0;

        if (dwarf_frame_cfa(f, &ops, &n) || n != 2 || ops[0].atom != DW_OP_breg7 ||
            (int64_t)ops[0].number != CTXPROF_SIG_RSP_OFF || ops[1].atom != DW_OP_deref)
                return false;
        return at_rsp(f, DW_REG_RA, CTXPROF_SIG_RIP_OFF) &&
               at_rsp(f, DW_REG_RBP, CTXPROF_SIG_RBP_OFF);
}

/* The row for one CFI frame state (pc left for the caller). */
static void frame_row(Dwarf_Frame *f, bool signal, struct ctxprof_cfi_row *r,
                      struct cfi_table_stats *st)
{
        Dwarf_Op *ops = NULL;
        size_t n = 0;
        int64_t off = 0;
        int reg = -1, thr;

        memset(r, 0, sizeof(*r));
        r->cfa_rule = CTXPROF_CFA_UNSUP;
        if (signal) {
                st->signal++;
                if (is_sigframe(f))
                        r->cfa_rule = CTXPROF_CFA_SIGNAL;
                return;
        }
        if (dwarf_frame_cfa(f, &ops, &n))
                return;
        if (!cfa_reg_off(ops, n, &reg, &off)) {
                if ((reg != DW_REG_RSP && reg != DW_REG_RBP) || off < INT32_MIN || off > INT32_MAX)
                        return;
                r->cfa_rule = reg == DW_REG_RSP ? CTXPROF_CFA_RSP : CTXPROF_CFA_RBP;
                r->cfa_off = (int32_t)off;
        } else if ((thr = plt_threshold(ops, n)) >= 0) {
                r->cfa_rule = CTXPROF_CFA_PLT;
                r->cfa_off = thr;
                st->plt++;
        } else {
                return;
        }
        switch (reg_rule(f, DW_REG_RA, &off)) {
        case REG_UNDEF:
                r->cfa_rule = CTXPROF_CFA_END;
                r->cfa_off = 0;
                return;
        case REG_AT_CFA:
                if (off == RA_CFA_OFF)
                        break;
                /* fallthrough */
        default:
                r->cfa_rule = CTXPROF_CFA_UNSUP;
                r->cfa_off = 0;
                return;
        }
        switch (reg_rule(f, DW_REG_RBP, &off)) {
        case REG_SAME:
                break;
        case REG_UNDEF:
                r->rbp_rule = CTXPROF_RBP_UNDEF;
                break;
        case REG_AT_CFA:
                if (off >= INT16_MIN && off <= INT16_MAX) {
                        r->rbp_rule = CTXPROF_RBP_SAVED;
                        r->rbp_off = (int16_t)off;
                        break;
                }
                /* fallthrough */
        default:
                r->cfa_rule = CTXPROF_CFA_UNSUP;
                r->cfa_off = 0;
                r->rbp_rule = CTXPROF_RBP_SAME;
        }
}

/* ELF virtual address -> file offset through the executable PT_LOADs; -1 outside them. */
static int64_t vaddr_to_off(const struct builder *b, uint64_t va)
{
        for (size_t i = 0; i < b->nsegs; i++)
                if (va >= b->segs[i].vaddr && va - b->segs[i].vaddr < b->segs[i].size)
                        return (int64_t)(va - b->segs[i].vaddr + b->segs[i].offset);
        return -1;
}

static int add_row(struct builder *b, uint64_t va, const struct ctxprof_cfi_row *r)
{
        int64_t off = vaddr_to_off(b, va);
        struct cfi_table *t = b->t;
        int err;

        if (off < 0 || off > UINT32_MAX)
                return 0; /* code outside the executable segments: never sampled */
        if (t->n >= CFI_TABLE_MAX_ROWS)
                return -EFBIG;
        err = grow_array((void **)&t->rows, &b->cap, sizeof(*t->rows), t->n + 1, ROWS_FIRST);
        if (err)
                return err;
        t->rows[t->n] = *r;
        t->rows[t->n].pc = (uint32_t)off;
        if (r->cfa_rule == CTXPROF_CFA_UNSUP)
                t->st.unsup++;
        if (r->cfa_rule == CTXPROF_CFA_NONE)
                t->st.gaps++;
        t->n++;
        return 0;
}

/* Every row of the FDE starting at start, up to limit (the next FDE's start); then a gap row
 * where its coverage ends, unless the next FDE starts there. */
static int fde_rows(struct builder *b, uint64_t start, uint64_t limit)
{
        static const struct ctxprof_cfi_row gap = {.cfa_rule = CTXPROF_CFA_NONE};
        uint64_t pc = start, rows = 0;
        int err;

        while (pc < limit) {
                /* the row-th row of an FDE re-runs the row instructions before it */
                b->steps += ++rows;
                if (b->steps > CFI_TABLE_MAX_STEPS)
                        return -EFBIG;
                Dwarf_Frame *f = NULL;
                Dwarf_Addr s, e;
                bool signal = false;
                struct ctxprof_cfi_row r;

                if (dwarf_cfi_addrframe(b->cfi, pc, &f) || !f)
                        return pc == start ? -EINVAL : add_row(b, pc, &gap);
                if (dwarf_frame_info(f, &s, &e, &signal) < 0 || e <= pc) {
                        free(f);
                        return -EINVAL;
                }
                frame_row(f, signal, &r, &b->t->st);
                free(f);
                err = add_row(b, pc, &r);
                if (err)
                        return err;
                pc = e;
        }
        return 0;
}

static int32_t rd_s32(const unsigned char *p)
{
        int32_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

/* The FDE table of .eh_frame_hdr (PT_GNU_EH_FRAME): rows for each FDE in address order. */
static int walk_hdr(struct builder *b, Elf *elf, const GElf_Phdr *ph)
{
        Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_BYTE);
        const unsigned char *p;
        uint32_t count;

        if (!d || d->d_size < EH_HDR_FIXED)
                return -EINVAL;
        p = d->d_buf;
        if (p[0] != EH_HDR_VERSION || p[1] != EH_PE_PCREL_SDATA4 || p[2] != EH_PE_UDATA4 ||
            p[3] != EH_PE_DATAREL_S4)
                return -ENOTSUP;
        memcpy(&count, p + 8, sizeof(count));
        if ((d->d_size - EH_HDR_FIXED) / 8 < count)
                return -EINVAL;
        b->t->st.fdes = count;
        for (uint32_t i = 0; i < count; i++) {
                uint64_t start = ph->p_vaddr + (int64_t)rd_s32(p + EH_HDR_FIXED + 8 * i);
                uint64_t limit = UINT64_MAX;
                int err;

                if (i + 1 < count)
                        limit = ph->p_vaddr + (int64_t)rd_s32(p + EH_HDR_FIXED + 8 * (i + 1));
                if (limit < start)
                        return -EINVAL; /* the table must be sorted */
                err = fde_rows(b, start, limit);
                if (err)
                        return err;
        }
        return 0;
}

static int cmp_row(const void *a, const void *b)
{
        const struct ctxprof_cfi_row *x = a, *y = b;

        return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static bool same_rule(const struct ctxprof_cfi_row *a, const struct ctxprof_cfi_row *b)
{
        return a->cfa_rule == b->cfa_rule && a->cfa_off == b->cfa_off &&
               a->rbp_rule == b->rbp_rule && a->rbp_off == b->rbp_off;
}

/* Sort (segments may be out of order in the file) and merge equal neighbours; of two rows at
 * one pc the later (a gap row followed by the next FDE's first row) wins. */
static void finish(struct cfi_table *t)
{
        size_t w = 0;

        qsort(t->rows, t->n, sizeof(*t->rows), cmp_row);
        for (size_t i = 0; i < t->n; i++) {
                if (w && t->rows[w - 1].pc == t->rows[i].pc)
                        w--;
                if (w && same_rule(&t->rows[w - 1], &t->rows[i]))
                        continue;
                t->rows[w++] = t->rows[i];
        }
        t->n = w;
}

/* Executable PT_LOADs and the PT_GNU_EH_FRAME header. */
static int read_phdrs(struct builder *b, Elf *elf, GElf_Phdr *eh, size_t *segcap)
{
        size_t n;
        int found = 0;

        if (elf_getphdrnum(elf, &n))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;
                int err;

                if (!gelf_getphdr(elf, (int)i, &ph))
                        return -EINVAL;
                if (ph.p_type == PT_GNU_EH_FRAME) {
                        *eh = ph;
                        found = 1;
                }
                if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
                        continue;
                err = grow_array((void **)&b->segs, segcap, sizeof(*b->segs), b->nsegs + 1, 4);
                if (err)
                        return err;
                b->segs[b->nsegs++] = (struct exec_seg){ph.p_vaddr, ph.p_filesz, ph.p_offset};
        }
        return found ? 0 : -ENOENT;
}

/* The table of an opened ELF handle (not ended here). */
static int build_elf(Elf *elf, struct cfi_table *out)
{
        struct builder b = {.t = out};
        uint64_t t0 = mono_ns();
        size_t segcap = 0;
        GElf_Phdr eh = {0};
        int err;

        memset(out, 0, sizeof(*out));
        err = elf_kind(elf) == ELF_K_ELF ? read_phdrs(&b, elf, &eh, &segcap) : -EINVAL;
        if (!err) {
                b.cfi = dwarf_getcfi_elf(elf);
                err = b.cfi ? walk_hdr(&b, elf, &eh) : -ENOENT;
        }
        if (b.cfi)
                dwarf_cfi_end(b.cfi);
        free(b.segs);
        if (err) {
                cfi_table_free(out);
                return err;
        }
        finish(out);
        out->st.build_ns = mono_ns() - t0;
        return 0;
}

int cfi_table_build_local(int fd, struct cfi_table *out)
{
        Elf *elf;
        int err;

        if (!out || fd < 0)
                return -EINVAL;
        elf_version(EV_CURRENT);
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf)
                return -EINVAL;
        err = build_elf(elf, out);
        elf_end(elf);
        return err;
}

struct vdso_range {
        uint64_t start, end;
};

static int vdso_cb(const struct maps_line *l, void *arg)
{
        struct vdso_range *r = arg;

        if (strcmp(l->path, "[vdso]"))
                return 0;
        r->start = l->start;
        r->end = l->end;
        return 1;
}

int cfi_table_build_vdso(struct cfi_table *out)
{
        struct vdso_range r = {0};
        const void *img = (const void *)getauxval(AT_SYSINFO_EHDR);
        char *copy;
        Elf *elf;
        int err;

        if (!out)
                return -EINVAL;
        if (!img || maps_foreach(getpid(), vdso_cb, &r, NULL) != 1 || r.start != (uintptr_t)img)
                return -ENOENT;
        copy = malloc(r.end - r.start);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, img, r.end - r.start);
        elf_version(EV_CURRENT);
        elf = elf_memory(copy, r.end - r.start);
        err = elf ? build_elf(elf, out) : -EINVAL;
        elf_end(elf);
        free(copy);
        return err;
}

const struct ctxprof_cfi_row *cfi_table_lookup(const struct cfi_table *t, uint64_t off)
{
        size_t lo = 0, hi;

        if (!t || !t->n)
                return NULL;
        hi = t->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->rows[mid].pc <= off)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo ? &t->rows[lo - 1] : NULL;
}

void cfi_table_free(struct cfi_table *t)
{
        if (!t)
                return;
        free(t->rows);
        memset(t, 0, sizeof(*t));
}
