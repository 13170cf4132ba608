/* SPDX-License-Identifier: MIT */
/*
 * test_perf_map.c — stack/perf_map and util/target_named_open against real files: a perf map
 * is parsed as it grows (a line still being written is left for the next read), read again
 * from its start when it shrank, the latest of equal starts wins; a line longer than
 * PERF_MAP_LINE_MAX (across read chunks) and lines that are not `START SIZE name` are skipped
 * and counted, the lines after them read; the entry cap is counted and ends the reading;
 * control bytes never reach a name; maps of one owner stop at its share of the perf-map budget
 * (counted), read on once another map gives its bytes back. The named open refuses a FIFO
 * (without blocking), a symlink, a path outside the root, and (as root) a file owned by
 * another user.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stack/perf_map.h"
#include "stack/perf_map_budget.h"
#include "util/target_named_open.h"

static char path[64];

static void make_file(void)
{
        snprintf(path, sizeof(path), "/tmp/ctxprof-perfmap-XXXXXX");
        int fd = mkstemp(path);
        cr_assert(fd >= 0);
        close(fd);
}

static void append(const char *text, size_t n)
{
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, text, n), (ssize_t)n);
        close(fd);
}

static void append_s(const char *text)
{
        append(text, strlen(text));
}

static struct perf_map *map_of_file(void)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert(fd >= 0);
        struct perf_map *m = perf_map_new(fd);
        cr_assert(m);
        return m;
}

static void cleanup(void)
{
        unlink(path);
}

TestSuite(perf_map, .fini = cleanup);

Test(perf_map, grows_and_shrinks)
{
        struct target_stats st = {0};
        make_file();
        append_s("1000 100 JS:*hot /tmp/app.js:3:15\n0x2000 0x10 LazyCompile:*outer\n30");
        struct perf_map *m = map_of_file();
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_str_eq(perf_map_lookup(m, 0x1000), "JS:*hot /tmp/app.js:3:15");
        cr_assert_str_eq(perf_map_lookup(m, 0x10ff), "JS:*hot /tmp/app.js:3:15");
        cr_assert_null(perf_map_lookup(m, 0x1100));
        cr_assert_str_eq(perf_map_lookup(m, 0x200f), "LazyCompile:*outer");
        cr_assert_null(perf_map_lookup(m, 0x3000), "a line still being written is not read");
        append_s("00 8 third\n1000 10 newer\n");
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_str_eq(perf_map_lookup(m, 0x3004), "third");
        cr_assert_str_eq(perf_map_lookup(m, 0x1004), "newer", "the latest of equal starts");
        cr_assert(truncate(path, 0) == 0);
        append_s("5000 10 after\n");
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_null(perf_map_lookup(m, 0x1004), "a shrunk map is read from its start");
        cr_assert_str_eq(perf_map_lookup(m, 0x5000), "after");
        cr_assert_eq(st.perf_map_bad_lines, 0);
        perf_map_free(m);
}

Test(perf_map, hostile_lines)
{
        struct target_stats st = {0};
        make_file();
        size_t big = 3 * 65536 + 17; /* across several read chunks */
        char *line = malloc(big + 1);
        cr_assert(line);
        memset(line, 'a', big);
        line[big] = '\n';
        append(line, big + 1);
        free(line);
        append_s("zz not hex\n1 0 zero size\nffffffffffffffff 10 wraps\n1 1\n"
                 "11112222333344445 1 seventeen digits\n7000 10 ok\x01\x1b[31m\n");
        struct perf_map *m = map_of_file();
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_str_eq(perf_map_lookup(m, 0x7000), "ok??[31m");
        cr_assert_eq(st.perf_map_bad_lines, 6, "got %llu",
                     (unsigned long long)st.perf_map_bad_lines);
        perf_map_free(m);
}

Test(perf_map, long_line_still_being_written)
{
        struct target_stats st = {0};
        make_file();
        char *line = malloc(PERF_MAP_LINE_MAX + 100);
        cr_assert(line);
        memset(line, 'b', PERF_MAP_LINE_MAX + 100);
        append(line, PERF_MAP_LINE_MAX + 100); /* no newline yet */
        free(line);
        struct perf_map *m = map_of_file();
        cr_assert_eq(perf_map_update(m, &st), 0);
        append_s("bbbb\n8000 10 next\n");
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_str_eq(perf_map_lookup(m, 0x8000), "next");
        cr_assert_eq(st.perf_map_bad_lines, 1);
        perf_map_free(m);
}

Test(perf_map, entry_cap)
{
        struct target_stats st = {0};
        make_file();
        FILE *f = fopen(path, "we");
        cr_assert(f);
        for (unsigned i = 0; i < PERF_MAP_MAX_ENTRIES; i++)
                fprintf(f, "%x 1 f\n", 0x10000 + i);
        fprintf(f, "9000 10 past the cap\n");
        fclose(f);
        struct perf_map *m = map_of_file();
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_str_eq(perf_map_lookup(m, 0x10000), "f");
        cr_assert_null(perf_map_lookup(m, 0x9000));
        cr_assert_eq(st.perf_map_full, 1);
        cr_assert_eq(perf_map_update(m, &st), 0);
        cr_assert_eq(st.perf_map_full, 1, "counted once");
        perf_map_free(m);
}

/* A map at PERF_MAP_MAX_BYTES (and PERF_MAP_MAX_ENTRIES lines: 64 bytes each) in file fn. */
static void write_full_map(const char *fn, unsigned base)
{
        FILE *f = fopen(fn, "we");
        cr_assert(f);
        for (unsigned i = 0; i < PERF_MAP_MAX_ENTRIES; i++)
                fprintf(f, "%08x 1 %052u\n", base + i, i);
        fclose(f);
}

static struct perf_map *map_of(const char *fn)
{
        int fd = open(fn, O_RDONLY | O_CLOEXEC);
        cr_assert(fd >= 0);
        struct perf_map *m = perf_map_new(fd);
        cr_assert(m);
        return m;
}

Test(perf_map, maps_of_one_owner_stop_at_its_share)
{
        struct target_stats st = {0};
        struct perf_map_budget_stats bs;
        char a[64], b[64];
        snprintf(a, sizeof(a), "/tmp/ctxprof-pmbudget-a-%d", (int)getpid());
        snprintf(b, sizeof(b), "/tmp/ctxprof-pmbudget-b-%d", (int)getpid());
        write_full_map(a, 0x10000000);
        write_full_map(b, 0x20000000);
        struct perf_map *ma = map_of(a), *mb = map_of(b);
        cr_assert_eq(perf_map_update(ma, &st), 0);
        cr_assert_eq(st.perf_map_budget, 0, "one full map fits a share");
        perf_map_budget_get(&bs);
        cr_assert_gt(bs.bytes, PERF_MAP_USER_SHARE / 2, "entries and names charged: %llu",
                     (unsigned long long)bs.bytes);
        cr_assert_leq(bs.bytes, PERF_MAP_USER_SHARE);
        cr_assert_eq(perf_map_update(mb, &st), 0);
        cr_assert_eq(st.perf_map_budget, 1, "the second map is cut at the share, counted once");
        perf_map_budget_get(&bs);
        cr_assert_leq(bs.bytes, PERF_MAP_USER_SHARE, "%llu", (unsigned long long)bs.bytes);
        cr_assert_str_eq(perf_map_lookup(mb, 0x20000000), "00000000000000000000000000000000000"
                                                          "00000000000000000");
        cr_assert_null(perf_map_lookup(mb, 0x20000000 + PERF_MAP_MAX_ENTRIES - 1),
                       "its last lines are not read");
        cr_assert_eq(perf_map_update(mb, &st), 0);
        cr_assert_eq(st.perf_map_budget, 1, "still refused: not counted again");
        perf_map_free(ma);
        cr_assert_eq(perf_map_update(mb, &st), 0);
        cr_assert_not_null(perf_map_lookup(mb, 0x20000000 + PERF_MAP_MAX_ENTRIES - 1),
                           "read on once the first map gave its bytes back");
        perf_map_free(mb);
        perf_map_budget_get(&bs);
        cr_assert_eq(bs.bytes, 0, "every byte given back");
        unlink(a);
        unlink(b);
}

Test(target_named_open, refuses_what_is_not_the_targets_regular_file)
{
        struct target_stats st = {0};
        make_file();
        int fd = target_open_named(getpid(), path, &st);
        cr_assert(fd >= 0, "own regular file: %d", fd);
        close(fd);
        cr_assert_eq(st.opened, 1);

        char fifo[80], link[80];
        snprintf(fifo, sizeof(fifo), "%s.fifo", path);
        snprintf(link, sizeof(link), "%s.link", path);
        cr_assert(mkfifo(fifo, 0600) == 0);
        cr_assert(symlink(path, link) == 0);
        cr_assert_eq(target_open_named(getpid(), fifo, &st), -EINVAL, "no wait for a writer");
        cr_assert_eq(target_open_named(getpid(), link, &st), -EINVAL);
        cr_assert_eq(st.not_regular, 2);
        cr_assert_eq(target_open_named(getpid(), "/tmp/../../etc/../tmp/nonexistent-x", &st),
                     -ENOENT);
        unlink(fifo);
        unlink(link);
        if (geteuid() == 0) {
                cr_assert(chown(path, 65534, 65534) == 0);
                cr_assert_eq(target_open_named(getpid(), path, &st), -EPERM);
                cr_assert_eq(st.not_owner, 1);
        }
}
