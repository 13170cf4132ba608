/* SPDX-License-Identifier: MIT */
/*
 * test_sigbus_guard.c — stack/sigbus_guard: a read of a file mapping past the end of a file
 * that shrank under us reads zeros and is counted instead of killing the process; a SIGBUS of
 * any other kind still takes the default action; installing twice is harmless.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stack/sigbus_guard.h"

/* A two-page file full of 0xab, mapped, then truncated to `keep` bytes. */
static volatile uint8_t *map_then_shrink(off_t keep, size_t *len)
{
        char path[] = "/tmp/ctxprof-sigbus-XXXXXX";
        long pg = sysconf(_SC_PAGESIZE);
        int fd = mkstemp(path);

        cr_assert_geq(fd, 0);
        unlink(path);
        char *buf = malloc(2 * pg);
        memset(buf, 0xab, 2 * pg);
        cr_assert_eq(write(fd, buf, 2 * pg), 2 * pg);
        free(buf);
        void *p = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, fd, 0);
        cr_assert_neq(p, MAP_FAILED);
        cr_assert_eq(ftruncate(fd, keep), 0);
        close(fd);
        *len = 2 * pg;
        return p;
}

Test(sigbus_guard, read_past_truncated_end_reads_zeros)
{
        size_t len;
        long pg = sysconf(_SC_PAGESIZE);

        cr_assert_eq(sigbus_guard_install(), 0);
        cr_assert_eq(sigbus_guard_install(), 0, "a second install is a no-op");
        uint64_t before = sigbus_guard_repaired();
        volatile uint8_t *p = map_then_shrink(pg, &len);

        cr_assert_eq(p[0], 0xab, "the page still backed by the file keeps its bytes");
        cr_assert_eq(p[pg], 0, "the page past the end reads zeros");
        cr_assert_eq(p[2 * pg - 1], 0);
        cr_assert_eq(sigbus_guard_repaired() - before, 1, "one page repaired, counted once");
        munmap((void *)p, len);
}

/* ASan catches SIGBUS itself and exits instead of dying by the signal: the control case only
 * means something without it. */
#ifdef __SANITIZE_ADDRESS__
#define UNDER_ASAN true
#else
#define UNDER_ASAN false
#endif

Test(sigbus_guard, without_the_guard_the_same_read_kills, .signal = SIGBUS, .disabled = UNDER_ASAN)
{
        size_t len;
        long pg = sysconf(_SC_PAGESIZE);
        volatile uint8_t *p = map_then_shrink(pg, &len);

        (void)p[pg]; /* proves the fault above is real: no handler, default action */
}

Test(sigbus_guard, other_sigbus_keeps_the_default_action, .signal = SIGBUS)
{
        cr_assert_eq(sigbus_guard_install(), 0);
        raise(SIGBUS); /* si_code SI_TKILL, not BUS_ADRERR: not ours to repair */
}
