/* SPDX-License-Identifier: MIT */
/*
 * test_cfi_table.c — compact unwind rows from real files (Debian's libc, python3, the
 * fixtures): row counts, the PLT and outermost-frame patterns, and every lookup at thousands
 * of pcs checked against elfutils' own dwarf_cfi_addrframe at the same address. Corrupt and
 * non-ELF files are refused without a crash.
 */
#include <criterion/criterion.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stack/cfi_table.h"

#define LIBC    "/lib/x86_64-linux-gnu/libc.so.6"
#define NPROBES 20000

static const char *fixture(const char *name)
{
        static char buf[512];
        const char *b = getenv("TEST_BUILD");

        snprintf(buf, sizeof(buf), "%s/tests/fixtures/%s", b && *b ? b : "build", name);
        return buf;
}

static int build(const char *path, struct cfi_table *t)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC), err;

        cr_assert_geq(fd, 0, "open %s", path);
        err = cfi_table_build(fd, t);
        close(fd);
        return err;
}

static unsigned count_rule(const struct cfi_table *t, int rule)
{
        unsigned n = 0;

        for (size_t i = 0; i < t->n; i++)
                n += t->rows[i].cfa_rule == rule;
        return n;
}

Test(cfi_table, libc_rows)
{
        struct cfi_table t;

        cr_assert_eq(build(LIBC, &t), 0);
        /* Debian 12 libc: ~3.7k FDEs, ~28k rows; nearly all rsp/rbp + offset */
        cr_assert_gt(t.st.fdes, 1000);
        cr_assert_gt(t.n, 10000);
        cr_assert_lt(t.n, CFI_TABLE_MAX_ROWS);
        cr_assert_lt(t.st.unsup * 100, t.n, "%u of %zu rows unsupported", t.st.unsup, t.n);
        cr_assert_geq(t.st.signal, 1, "__restore_rt is a signal frame");
        cr_assert_eq(count_rule(&t, CTXPROF_CFA_SIGNAL), 1, "... with the standard layout");
        cr_assert_eq(count_rule(&t, CTXPROF_CFA_PLT), 1, "one .plt");
        cr_assert_geq(count_rule(&t, CTXPROF_CFA_END), 1, "clone/thread start: RA undefined");
        for (size_t i = 1; i < t.n; i++) {
                cr_assert_lt(t.rows[i - 1].pc, t.rows[i].pc, "sorted, unique");
                cr_assert(memcmp(&t.rows[i - 1].cfa_off, &t.rows[i].cfa_off, 8),
                          "equal neighbours merged");
        }
        cfi_table_free(&t);
}

Test(cfi_table, fixture_patterns)
{
        struct cfi_table t;

        cr_assert_eq(build(fixture("fx_qsort"), &t), 0);
        cr_assert_gt(t.n, 5);
        cr_assert_eq(count_rule(&t, CTXPROF_CFA_PLT), 1);
        cr_assert_eq(count_rule(&t, CTXPROF_CFA_END), 1, "_start: .cfi_undefined rip");
        cr_assert_eq(t.st.unsup, 0);
        cr_assert_null(cfi_table_lookup(&t, 0), "before the first FDE");
        cfi_table_free(&t);
}

Test(cfi_table, vdso_from_memory)
{
        struct cfi_table t;

        cr_assert_eq(cfi_table_build_vdso(&t), 0);
        cr_assert_gt(t.n, 5, "clock_gettime & co have CFI");
        cr_assert_eq(t.st.unsup, 0);
        cfi_table_free(&t);
}

/* What elfutils says at vaddr, in the table's terms: cfa rule/offset and rbp rule/offset. */
static void oracle(Dwarf_CFI *cfi, uint64_t va, struct ctxprof_cfi_row *o, int *has)
{
        Dwarf_Frame *f = NULL;
        Dwarf_Op *ops, mem[3];
        size_t n;
        bool sig = false;

        memset(o, 0, sizeof(*o));
        *has = 0;
        if (dwarf_cfi_addrframe(cfi, va, &f) || !f)
                return;
        *has = 1;
        dwarf_frame_info(f, NULL, NULL, &sig);
        if (!sig && !dwarf_frame_cfa(f, &ops, &n) && n == 1 && ops[0].atom == DW_OP_bregx &&
            (ops[0].number == 6 || ops[0].number == 7)) {
                o->cfa_rule = ops[0].number == 7 ? CTXPROF_CFA_RSP : CTXPROF_CFA_RBP;
                o->cfa_off = (int32_t)ops[0].number2;
                if (!dwarf_frame_register(f, 6, mem, &ops, &n) && n == 2 &&
                    ops[0].atom == DW_OP_call_frame_cfa) {
                        o->rbp_rule = CTXPROF_RBP_SAVED;
                        o->rbp_off = (int16_t)ops[1].number;
                }
        } else {
                o->cfa_rule = CTXPROF_CFA_UNSUP;
        }
        free(f);
}

/* Random pcs of the executable segment: the table's row agrees with dwarf_cfi_addrframe. */
static void check_against_elfutils(const char *path, unsigned min_covered)
{
        struct cfi_table t;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        unsigned agree = 0, covered = 0;
        GElf_Phdr seg = {0};
        size_t nph;
        Elf *elf;

        cr_assert_geq(fd, 0);
        cr_assert_eq(cfi_table_build(fd, &t), 0);
        elf_version(EV_CURRENT);
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        cr_assert(elf && !elf_getphdrnum(elf, &nph));
        for (size_t i = 0; i < nph; i++) {
                GElf_Phdr ph;

                if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
                        seg = ph;
        }
        cr_assert_gt(seg.p_filesz, 0);
        Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
        cr_assert_not_null(cfi);
        srand(42);
        for (int i = 0; i < NPROBES; i++) {
                uint64_t off = seg.p_offset + (uint64_t)rand() % seg.p_filesz;
                const struct ctxprof_cfi_row *r = cfi_table_lookup(&t, off);
                struct ctxprof_cfi_row o;
                int has;

                oracle(cfi, off - seg.p_offset + seg.p_vaddr, &o, &has);
                if (!has) {
                        cr_assert(!r || r->cfa_rule == CTXPROF_CFA_NONE,
                                  "%s+%#lx: no FDE, but rule %d", path, (unsigned long)off,
                                  r ? r->cfa_rule : -1);
                        continue;
                }
                covered++;
                cr_assert_not_null(r, "%s+%#lx: FDE but no row", path, (unsigned long)off);
                if (o.cfa_rule == CTXPROF_CFA_UNSUP) {
                        agree += r->cfa_rule != CTXPROF_CFA_RSP && r->cfa_rule != CTXPROF_CFA_RBP;
                        continue;
                }
                if (r->cfa_rule == CTXPROF_CFA_END) {
                        agree++;
                        continue;
                }
                cr_assert_eq(r->cfa_rule, o.cfa_rule, "%s+%#lx", path, (unsigned long)off);
                cr_assert_eq(r->cfa_off, o.cfa_off, "%s+%#lx", path, (unsigned long)off);
                cr_assert_eq(r->rbp_rule, o.rbp_rule, "%s+%#lx", path, (unsigned long)off);
                cr_assert_eq(r->rbp_off, o.rbp_off, "%s+%#lx", path, (unsigned long)off);
                agree++;
        }
        cr_assert_geq(covered, min_covered, "%u probes with CFI", covered);
        cr_assert_eq(agree, covered);
        dwarf_cfi_end(cfi);
        elf_end(elf);
        close(fd);
        cfi_table_free(&t);
}

Test(cfi_table, libc_lookups_match_elfutils, .timeout = 120)
{
        check_against_elfutils(LIBC, NPROBES / 2);
}

Test(cfi_table, python3_lookups_match_elfutils, .timeout = 120)
{
        if (access("/usr/bin/python3", R_OK))
                cr_skip_test("no /usr/bin/python3");
        check_against_elfutils("/usr/bin/python3", NPROBES / 2);
}

Test(cfi_table, cxx_fixture_lookups_match_elfutils)
{
        check_against_elfutils(fixture("fx_cxx"), NPROBES / 10); /* small text: padding */
}

/* A copy of fx_qsort with byte `at` of its .eh_frame_hdr (or, with eh_frame=1, 64 bytes in
 * its .eh_frame) overwritten: the build fails or succeeds, never crashes. */
static int build_corrupt(size_t hdr_byte, int eh_frame)
{
        char tmp[] = "/tmp/cfi-corrupt.XXXXXX";
        int in = open(fixture("fx_qsort"), O_RDONLY), out = mkstemp(tmp), err;
        struct cfi_table t;
        char buf[65536];
        ssize_t k;
        size_t n, shstr;
        Elf *elf;

        cr_assert(in >= 0 && out >= 0);
        while ((k = read(in, buf, sizeof(buf))) > 0)
                cr_assert_eq(write(out, buf, (size_t)k), k);
        close(in);
        elf_version(EV_CURRENT);
        elf = elf_begin(out, ELF_C_READ, NULL);
        cr_assert(elf && !elf_getshdrnum(elf, &n) && !elf_getshdrstrndx(elf, &shstr));
        for (Elf_Scn *s = NULL; (s = elf_nextscn(elf, s));) {
                GElf_Shdr sh;
                const char *name;

                gelf_getshdr(s, &sh);
                name = elf_strptr(elf, shstr, sh.sh_name);
                if (!name || strcmp(name, eh_frame ? ".eh_frame" : ".eh_frame_hdr"))
                        continue;
                if (eh_frame) {
                        memset(buf, 0xff, 64);
                        cr_assert_eq(pwrite(out, buf, 64, (off_t)sh.sh_offset + 24), 64);
                } else {
                        cr_assert_eq(pwrite(out, "\x7f", 1, (off_t)(sh.sh_offset + hdr_byte)), 1);
                }
        }
        elf_end(elf);
        err = cfi_table_build(out, &t);
        cfi_table_free(&t);
        close(out);
        unlink(tmp);
        return err;
}

Test(cfi_table, corrupt_files_are_refused)
{
        struct cfi_table t;
        int fd = open("/etc/passwd", O_RDONLY);

        cr_assert_eq(cfi_table_build(fd, &t), -EINVAL, "not ELF");
        close(fd);
        int e = build_corrupt(0, 0);
        cr_assert_lt(e, 0, "header version: %d", e); /* elfutils refuses it first */
        e = build_corrupt(3, 0);
        cr_assert_lt(e, 0, "table encoding: %d", e);
        cr_assert_neq(build_corrupt(8, 0), 0, "FDE count beyond the section");
        cr_assert_neq(build_corrupt(0, 1), 0, "garbage CIE/FDE bytes");
}
