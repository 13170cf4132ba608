/* SPDX-License-Identifier: MIT */
/*
 * test_modules_reap.c — the module registry's lifetime (stack/modules.h): a module lives while
 * referenced, is kept dead until modules_reap is given a time after its death, then its id is
 * retired and reused (the generation changes); a module referenced again before the reap
 * lives on under its id; a file the registry holds a descriptor of stays one module when it
 * is renamed (its inode cannot be reused while pinned).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stack/frame.h"
#include "stack/modules.h"
#include "util/clock.h"

static struct module_key key_of(const char *path, ino_t ino)
{
        return (struct module_key){.dev = 42, .ino = ino, .path = path};
}

Test(modules_reap, dead_kept_until_reaped_then_id_reused)
{
        struct modules *m = modules_new();
        cr_assert(m);
        struct module_key a = key_of("/a.so", 1), b = key_of("/b.so", 2);
        uint32_t ia, ib, again;
        struct module_info mi;
        struct modules_stats st;

        cr_assert_eq(modules_intern(m, &a, -1, &ia), 0);
        uint64_t gen = modules_generation(m), serial = modules_serial(m, ia);
        cr_expect_neq(serial, 0);
        modules_unref(m, ia);
        uint64_t died_by = mono_ns();
        cr_expect_eq(modules_reap(m, died_by - 1000000000ull), 0, "reaped before its death");
        cr_expect_eq(modules_info(m, ia, &mi), 0, "a dead module is kept until the reap");
        /* referenced again before the reap: the same module, alive */
        cr_assert_eq(modules_intern(m, &a, -1, &again), 0);
        cr_expect_eq(again, ia);
        cr_expect_eq(modules_reap(m, mono_ns() + 1), 0, "a live module was reaped");
        modules_unref(m, ia);
        cr_expect_eq(modules_reap(m, mono_ns() + 1), 1);
        cr_expect_eq(modules_info(m, ia, &mi), -ENOENT);
        cr_expect_eq(modules_open(m, ia), -ENOENT);
        cr_expect_neq(modules_generation(m), gen);
        cr_assert_eq(modules_intern(m, &b, -1, &ib), 0);
        cr_expect_eq(ib, ia, "the retired id is reused");
        cr_expect_neq(modules_serial(m, ib), serial, "a reused id keeps the old module's serial");
        cr_assert_eq(modules_info(m, ib, &mi), 0);
        cr_expect_str_eq(mi.path, "/b.so");
        modules_get_stats(m, &st);
        cr_expect_eq(st.live, 1);
        cr_expect_eq(st.dead, 0);
        cr_expect_eq(st.retired, 1);
        modules_free(m);
}

Test(modules_reap, pinned_file_renamed_stays_one_module)
{
        char path[] = "/tmp/ctxprof-mod-XXXXXX";
        int fd = mkstemp(path);
        cr_assert(fd >= 0);
        struct stat sb;
        cr_assert_eq(fstat(fd, &sb), 0);
        struct modules *m = modules_new();
        struct module_key k = {.dev = sb.st_dev, .ino = sb.st_ino, .path = path};
        struct module_key renamed = k;
        renamed.path = "/tmp/renamed";
        uint32_t i1, i2, i3;
        cr_assert_eq(modules_intern(m, &k, fd, &i1), 0);
        cr_assert_eq(modules_intern(m, &renamed, -1, &i2), 0);
        cr_expect_eq(i1, i2, "a renamed file became a new module");
        /* without a descriptor the path is part of the identity */
        struct module_key other = {.dev = 7, .ino = 9, .path = "/x"}, other2 = other;
        other2.path = "/y";
        cr_assert_eq(modules_intern(m, &other, -1, &i1), 0);
        cr_assert_eq(modules_intern(m, &other2, -1, &i3), 0);
        cr_expect_neq(i1, i3);
        modules_free(m);
        close(fd);
        unlink(path);
}
