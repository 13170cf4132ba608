/* SPDX-License-Identifier: MIT */
/*
 * test_cfi_wire.c — a PARSER_CFI answer (stack/cfi_wire.h) is as hostile as the file the helper
 * parsed: libc's table exported the helper's way (a sealed memfd) imports equal to the table
 * built here, with its counts counted again from the rows; an error answer keeps its errno
 * and one out of range is refused. Refused with nothing kept: a payload of the wrong size, a
 * descriptor missing, one that is not sealed shmem (a regular file, a pipe, a memfd without
 * the write seal), a size that is not the row count's, more rows than asked for, a row out of
 * order or with an unknown rule.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stack/cfi_wire.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static struct cfi_table local;

static void build_local(void)
{
        int fd = open(LIBC, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_assert_eq(cfi_table_build_local(fd, &local), 0);
        close(fd);
        cr_assert_gt(local.n, 1000);
}

static void drop_local(void)
{
        cfi_table_free(&local);
}

/* A memfd with rows (not sealed unless seals), for answers the helper could forge. */
static int forged_memfd(const struct ctxprof_cfi_row *rows, size_t n, int seals)
{
        int fd = memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        cr_assert_geq(fd, 0);
        cr_assert_eq(pwrite(fd, rows, n * sizeof(*rows), 0), (ssize_t)(n * sizeof(*rows)));
        if (seals)
                cr_assert_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
        return fd;
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static int import(const struct cfi_resp *r, int fd, uint32_t max, struct cfi_table *t)
{
        return cfi_wire_import(r, sizeof(*r), fd, max, t);
}

Test(cfi_wire, libc_round_trip, .init = build_local, .fini = drop_local)
{
        struct cfi_resp r;
        struct cfi_table t;
        int fd;

        cr_assert_eq(cfi_wire_export(0, &local, &r, &fd), 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fcntl(fd, F_GET_SEALS) & ALL_SEALS, ALL_SEALS, "the export seals its memfd");
        cr_assert_eq(import(&r, fd, CFI_TABLE_MAX_ROWS, &t), 0);
        cr_assert_eq(t.n, local.n);
        cr_assert_eq(memcmp(t.rows, local.rows, t.n * sizeof(*t.rows)), 0);
        cr_assert_eq(t.st.fdes, local.st.fdes);
        cr_assert_gt(t.st.unsup + t.st.plt + t.st.signal, 0, "counted from the rows");
        cfi_table_free(&t);
        cr_assert_eq(import(&r, fd, (uint32_t)local.n - 1, &t), -EPROTO, "more rows than asked");
        cr_assert_null(t.rows);
        close(fd);
}

Test(cfi_wire, errors)
{
        struct cfi_resp r;
        struct cfi_table t;
        int fd;

        cr_assert_eq(cfi_wire_export(-ENOENT, NULL, &r, &fd), 0);
        cr_assert_eq(fd, -1);
        cr_assert_eq(import(&r, -1, 10, &t), -ENOENT);
        r.status = -100000;
        cr_assert_eq(import(&r, -1, 10, &t), -EPROTO, "not an errno");
        r.status = 5;
        cr_assert_eq(import(&r, -1, 10, &t), -EPROTO);
        r = (struct cfi_resp){.n = 0};
        cr_assert_eq(cfi_wire_import(&r, sizeof(r) - 1, -1, 10, &t), -EPROTO, "short payload");
        cr_assert_eq(import(&r, -1, 10, &t), -EPROTO, "no descriptor");
}

Test(cfi_wire, descriptors_not_sealed_shmem)
{
        const struct ctxprof_cfi_row rows[2] = {{.pc = 16, .cfa_rule = CTXPROF_CFA_RSP},
                                                {.pc = 32, .cfa_rule = CTXPROF_CFA_RBP}};
        const struct cfi_resp r = {.n = 2};
        struct cfi_table t;
        char path[] = "/tmp/test_cfi_wire.XXXXXX";
        int fd, p[2];

        fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        unlink(path);
        cr_assert_eq(write(fd, rows, sizeof(rows)), (ssize_t)sizeof(rows));
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "a regular file (FUSE could stall it)");
        close(fd);

        cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        cr_assert_eq(import(&r, p[0], 10, &t), -EPROTO, "a pipe");
        close(p[0]);
        close(p[1]);

        fd = forged_memfd(rows, 2, 0);
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "a memfd the helper can still write");
        close(fd);
        fd = forged_memfd(rows, 2, F_SEAL_SHRINK | F_SEAL_GROW);
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "no write seal");
        close(fd);

        fd = forged_memfd(rows, 2, ALL_SEALS);
        cr_assert_eq(import(&r, fd, 10, &t), 0, "the same rows, sealed");
        cr_assert_eq(t.n, 2);
        cfi_table_free(&t);
        const struct cfi_resp three = {.n = 3};
        cr_assert_eq(import(&three, fd, 10, &t), -EPROTO, "size not the row count's");
        close(fd);
}

Test(cfi_wire, rows_checked)
{
        struct ctxprof_cfi_row rows[3] = {{.pc = 16}, {.pc = 32}, {.pc = 48}};
        const struct cfi_resp r = {.n = 3};
        struct cfi_table t;
        int fd;

        rows[2].pc = 32;
        fd = forged_memfd(rows, 3, ALL_SEALS);
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "two rows at one pc");
        close(fd);
        rows[2].pc = 8;
        fd = forged_memfd(rows, 3, ALL_SEALS);
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "out of order");
        close(fd);
        rows[2].pc = 48;
        rows[1].cfa_rule = CTXPROF_CFA_SIGNAL + 1;
        fd = forged_memfd(rows, 3, ALL_SEALS);
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "unknown CFA rule");
        cr_assert_null(t.rows);
        close(fd);
        rows[1].cfa_rule = CTXPROF_CFA_UNSUP;
        rows[0].rbp_rule = CTXPROF_RBP_UNDEF + 1;
        fd = forged_memfd(rows, 3, ALL_SEALS);
        cr_assert_eq(import(&r, fd, 10, &t), -EPROTO, "unknown rbp rule");
        close(fd);
        rows[0].rbp_rule = CTXPROF_RBP_SAVED;
        fd = forged_memfd(rows, 3, ALL_SEALS);
        cr_assert_eq(import(&r, fd, 10, &t), 0);
        cr_assert_eq(t.st.unsup, 1);
        cr_assert_eq(t.st.gaps, 2, "CTXPROF_CFA_NONE rows");
        cfi_table_free(&t);
        close(fd);
}
