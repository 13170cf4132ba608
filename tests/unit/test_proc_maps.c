/* SPDX-License-Identifier: MIT */
/*
 * test_proc_maps.c — stack/proc_maps on this test's own process: the parser hands out every
 * line with its fields (permissions, offsets, special names, paths with spaces, deleted
 * files), stops when the callback asks, refuses bad pids; resolving an address of our own code
 * gives the executable's module and the file offset the mapping implies, and an address in no
 * mapping stays unknown. One file mapped thousands of times is one module, kept across
 * re-reads; a process whose reads are expensive is re-read only within its share (the rest
 * put off and counted).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stack/proc_maps.h"
#include "util/clock.h"
#include "util/maps_line.h"

struct find {
        uint64_t addr;    /* line containing this address */
        const char *path; /* or: line with this path */
        int found, lines, deleted;
        struct maps_line line;
        char path_copy[PATH_MAX];
};

static int find_cb(const struct maps_line *l, void *arg)
{
        struct find *f = arg;

        f->lines++;
        if ((f->addr && f->addr >= l->start && f->addr < l->end) ||
            (f->path && !strcmp(f->path, l->path))) {
                f->found++;
                f->line = *l;
                f->deleted = l->deleted;
                snprintf(f->path_copy, sizeof(f->path_copy), "%s", l->path);
                f->line.path = f->path_copy;
        }
        return 0;
}

Test(proc_maps, own_code_is_an_executable_file_mapping)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        struct find f = {.addr = (uint64_t)(uintptr_t)&find_cb};
        struct stat st;

        cr_assert_gt(n, 0);
        exe[n] = 0;
        cr_assert_eq(stat(exe, &st), 0);
        cr_assert_eq(maps_foreach(getpid(), find_cb, &f, NULL), 0);
        cr_assert_eq(f.found, 1);
        cr_assert_str_eq(f.line.path, exe);
        cr_assert_eq(f.line.perms[2], 'x', "perms %s", f.line.perms);
        cr_assert_eq(f.line.ino, st.st_ino);
        cr_assert_eq(f.line.deleted, 0);
        cr_assert_gt(f.lines, 5);
}

Test(proc_maps, special_regions_keep_their_names)
{
        int x = 0;
        struct find f = {.addr = (uint64_t)(uintptr_t)&x};

        cr_assert_eq(maps_foreach(getpid(), find_cb, &f, NULL), 0);
        cr_assert_eq(f.found, 1);
        cr_assert_str_eq(f.line.path, "[stack]");
}

Test(proc_maps, path_with_spaces_and_deleted_file)
{
        char dir[] = "/tmp/ctxprof-maps-XXXXXX";
        char path[PATH_MAX];
        long pg = sysconf(_SC_PAGESIZE);

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/a file (x)", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(ftruncate(fd, 3 * pg), 0);
        char *p = mmap(NULL, pg, PROT_READ, MAP_PRIVATE, fd, 2 * pg);
        cr_assert_neq(p, MAP_FAILED);

        struct find f = {.addr = (uint64_t)(uintptr_t)p};
        cr_assert_eq(maps_foreach(getpid(), find_cb, &f, NULL), 0);
        cr_assert_eq(f.found, 1);
        cr_assert_str_eq(f.line.path, path);
        cr_assert_eq(f.line.pgoff, (uint64_t)(2 * pg));
        cr_assert_eq(f.line.deleted, 0);
        cr_assert_str_eq(f.line.perms, "r--p");

        cr_assert_eq(unlink(path), 0);
        memset(&f, 0, sizeof(f));
        f.addr = (uint64_t)(uintptr_t)p;
        cr_assert_eq(maps_foreach(getpid(), find_cb, &f, NULL), 0);
        cr_assert_eq(f.found, 1);
        cr_assert_eq(f.deleted, 1);
        cr_assert_str_eq(f.line.path, path, "\" (deleted)\" is stripped: %s", f.line.path);

        munmap(p, pg);
        close(fd);
        rmdir(dir);
}

static int stop_at_third(const struct maps_line *l, void *arg)
{
        (void)l;
        return ++*(int *)arg == 3 ? 42 : 0;
}

Test(proc_maps, callback_stops_the_walk_and_bad_pids_are_errors)
{
        int seen = 0;

        cr_assert_eq(maps_foreach(getpid(), stop_at_third, &seen, NULL), 42);
        cr_assert_eq(seen, 3);
        cr_assert_eq(maps_foreach(0, stop_at_third, &seen, NULL), -EINVAL);
        cr_assert_eq(maps_foreach(getpid(), NULL, NULL, NULL), -EINVAL);
        /* pid_max is at most 2^22: this pid cannot exist */
        cr_assert_eq(maps_foreach(INT_MAX, stop_at_third, &seen, NULL), -ESRCH);
}

Test(proc_maps, resolve_gives_module_and_file_offset)
{
        struct modules *mods = modules_new();
        struct proc_maps *pm = NULL;
        struct ctxprof_frame fr;
        uint64_t ip = (uint64_t)(uintptr_t)&find_cb;
        struct find f = {.addr = ip};

        cr_assert_not_null(mods);
        cr_assert_eq(maps_foreach(getpid(), find_cb, &f, NULL), 0);
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);

        cr_assert_eq(proc_maps_resolve(pm, ip, &fr), 0);
        cr_assert_geq(fr.module_id, CTXPROF_MODULE_FIRST);
        cr_assert_eq(fr.offset, ip - f.line.start + f.line.pgoff);
        cr_assert_eq(fr.flags, 0);

        struct module_info mi;
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        cr_assert_gt(n, 0);
        exe[n] = 0;
        cr_assert_eq(modules_info(mods, fr.module_id, &mi), 0);
        cr_assert_str_eq(mi.path, exe);
        cr_assert_neq(mi.build_id_hex[0], 0, "gcc links a build id into the test");

        /* The null page is never mapped: unknown, raw address kept. */
        cr_assert_eq(proc_maps_resolve(pm, 16, &fr), 0);
        cr_assert_eq(fr.module_id, CTXPROF_MODULE_UNKNOWN);
        cr_assert_eq(fr.offset, 16);

        struct proc_maps_stats st;
        proc_maps_stats(pm, &st);
        cr_assert_geq(st.misses, 1);

        proc_maps_free(pm);
        modules_free(mods);
}

Test(proc_maps, open_refuses_a_dead_pid)
{
        struct modules *mods = modules_new();
        struct proc_maps *pm = NULL;

        cr_assert_eq(proc_maps_open(mods, INT_MAX, &pm), -ESRCH);
        cr_assert_null(pm);
        modules_free(mods);
}

/* Our executable mapped PROT_READ|PROT_EXEC n times, one page each with a gap between (n
 * lines in our maps): the first page's address. */
static char *map_many(size_t n, int *fd)
{
        long page = sysconf(_SC_PAGESIZE);
        char *base =
            mmap(NULL, 2 * n * (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        cr_assert_neq(base, MAP_FAILED);
        *fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(*fd, 0);
        for (size_t i = 0; i < n; i++)
                cr_assert_neq(mmap(base + 2 * i * (size_t)page, (size_t)page, PROT_READ | PROT_EXEC,
                                   MAP_PRIVATE | MAP_FIXED, *fd, 0),
                              MAP_FAILED, "mapping %zu", i);
        return base;
}

Test(proc_maps, one_file_mapped_many_times_is_one_module_kept_across_reads)
{
        const size_t n = 3000;
        long page = sysconf(_SC_PAGESIZE);
        struct modules *mods = modules_new();
        struct modules_stats ms0, ms1;
        struct proc_maps *pm = NULL;
        struct ctxprof_frame fr;
        int fd;

        cr_assert_not_null(mods);
        char *base = map_many(n, &fd);
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        modules_get_stats(mods, &ms0);
        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)base + 5, &fr), 0);
        uint32_t id = fr.module_id;
        cr_assert_geq(id, CTXPROF_MODULE_FIRST);
        for (size_t i = 0; i < n; i++) {
                uint64_t ip = (uint64_t)(uintptr_t)(base + 2 * i * (size_t)page) + 7;
                cr_assert_eq(proc_maps_resolve(pm, ip, &fr), 0);
                cr_assert_eq(fr.module_id, id, "mapping %zu: module %u, not %u", i, fr.module_id,
                             id);
                cr_assert_eq(fr.offset, 7);
        }
        /* a re-read (once this process's share allows it) keeps the module of every mapping,
         * without opening one file again */
        uint64_t opened = modules_target_stats(mods)->opened;
        cr_assert_geq(opened, 1);
        uint64_t deadline = mono_ns() + 10000000000ull;
        int r;
        while ((r = proc_maps_refresh(pm)) == -EAGAIN && mono_ns() < deadline)
                usleep(10000);
        cr_assert_eq(r, 0);
        modules_get_stats(mods, &ms1);
        cr_assert_eq(ms1.live, ms0.live, "a re-read registered %lu modules more",
                     (unsigned long)(ms1.live - ms0.live));
        cr_assert_eq(modules_target_stats(mods)->opened, opened, "a re-read opened files again");
        cr_assert_eq(
            proc_maps_resolve(pm, (uint64_t)(uintptr_t)base + 2 * (n - 1) * (size_t)page, &fr), 0);
        cr_assert_eq(fr.module_id, id);
        proc_maps_free(pm);
        munmap(base, 2 * n * (size_t)page);
        close(fd);
        modules_free(mods);
}

Test(proc_maps, an_expensive_process_is_reread_only_within_its_share)
{
        const size_t n = 20000; /* about 40,000 lines: far more than a cheap read */
        long page = sysconf(_SC_PAGESIZE);
        struct modules *mods = modules_new();
        struct proc_maps *pm = NULL;
        struct ctxprof_frame fr;
        struct proc_maps_stats st;
        int fd;

        cr_assert_not_null(mods);
        char *base = map_many(n, &fd);
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        uint64_t before = modules_target_stats(mods)->maps_deferred;
        cr_assert_eq(proc_maps_refresh(pm), -EAGAIN, "an expensive read again at once");
        cr_assert_eq(modules_target_stats(mods)->maps_deferred, before + 1);
        /* a miss neither: the old table answers, the address stays unknown */
        cr_assert_eq(proc_maps_resolve(pm, 16, &fr), 0);
        cr_assert_eq(fr.module_id, CTXPROF_MODULE_UNKNOWN);
        proc_maps_stats(pm, &st);
        cr_assert_eq(st.refreshes, 0);
        proc_maps_free(pm);
        munmap(base, 2 * n * (size_t)page);
        close(fd);
        modules_free(mods);
}

/* An executable mapping of a new two-page file in dir (not ELF: no build id shares its
 * module with another file): its address; *path, *fd. */
static char *map_new_file(const char *dir, char *path, size_t len, int *fd)
{
        long page = sysconf(_SC_PAGESIZE);
        char buf[8192];

        memset(buf, 0xcc, sizeof(buf));
        snprintf(path, len, "%s/code", dir);
        *fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
        cr_assert_geq(*fd, 0);
        cr_assert_eq(write(*fd, buf, (size_t)(2 * page)), 2 * page);
        char *m = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, *fd, 0);
        cr_assert_neq(m, MAP_FAILED);
        return m;
}

Test(proc_maps, a_file_the_registry_keeps_is_not_opened_again_unless_rewritten)
{
        struct modules *mods = modules_new();
        struct modules_stats ms0, ms1;
        struct proc_maps *a = NULL, *b = NULL, *c = NULL;
        struct ctxprof_frame fa, fb, fc;
        char dir[] = "/tmp/ctxprof-pm-XXXXXX", path[PATH_MAX];
        int fd;

        cr_assert_not_null(mods);
        cr_assert_not_null(mkdtemp(dir));
        char *m = map_new_file(dir, path, sizeof(path), &fd);
        uint64_t ip = (uint64_t)(uintptr_t)m + 9;

        /* two tables over the same mappings: two processes sharing their files */
        cr_assert_eq(proc_maps_open(mods, getpid(), &a), 0);
        uint64_t opened = modules_target_stats(mods)->opened;
        modules_get_stats(mods, &ms0);
        cr_assert_eq(proc_maps_open(mods, getpid(), &b), 0);
        modules_get_stats(mods, &ms1);
        cr_assert_eq(modules_target_stats(mods)->opened, opened,
                     "the second table opened %lu files the registry keeps open",
                     (unsigned long)(modules_target_stats(mods)->opened - opened));
        cr_assert_gt(ms1.reused, ms0.reused);
        cr_assert_eq(proc_maps_resolve(a, ip, &fa), 0);
        cr_assert_eq(proc_maps_resolve(b, ip, &fb), 0);
        cr_assert_geq(fa.module_id, CTXPROF_MODULE_FIRST);
        cr_assert_eq(fb.module_id, fa.module_id);

        /* the same inode rewritten in place (new contents, new times): read again */
        struct timespec later[2] = {{.tv_sec = 1}, {.tv_sec = 1}};
        cr_assert_eq(pwrite(fd, "x", 1, 4096), 1);
        cr_assert_eq(futimens(fd, later), 0);
        cr_assert_eq(proc_maps_open(mods, getpid(), &c), 0);
        cr_assert_gt(modules_target_stats(mods)->opened, opened, "a rewritten file was trusted");
        cr_assert_eq(proc_maps_resolve(c, ip, &fc), 0);
        cr_assert_geq(fc.module_id, CTXPROF_MODULE_FIRST);

        proc_maps_free(a);
        proc_maps_free(b);
        proc_maps_free(c);
        munmap(m, (size_t)sysconf(_SC_PAGESIZE));
        close(fd);
        unlink(path);
        rmdir(dir);
        modules_free(mods);
}
