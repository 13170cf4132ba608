/* SPDX-License-Identifier: MIT */
/*
 * test_target_open.c — util/proc_lines, util/maps_line and util/target_open against real
 * files and this test's own mappings: a line longer than its cap is consumed whole, counted
 * and never handed out (its tail is not a line); a mapped file opens readable and is the
 * mapped inode; a forged range (the maps line names no mapping) is refused without opening
 * anything, even when its path is a FIFO; a real range with another inode is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/maps_line.h"
#include "util/proc_lines.h"
#include "util/target_open.h"

#define CAP 64

static char *tmpfile_with(const char *text)
{
        static char path[64];
        snprintf(path, sizeof(path), "/tmp/ctxprof-lines-XXXXXX");
        int fd = mkstemp(path);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        return path;
}

Test(proc_lines, long_line_is_refused_whole_never_resynchronised)
{
        char text[1024] = "first\n";
        size_t n = strlen(text);
        memset(text + n, 'a', 3 * CAP); /* a path three caps long, then a forged tail */
        n += 3 * CAP;
        snprintf(text + n, sizeof(text) - n,
                 "7f0000000000-7f0000001000 r-xp 00000000 00:00 4242 /tmp/fifo\nlast\n");
        char *path = tmpfile_with(text);
        struct target_stats st = {0};
        struct proc_lines r;
        cr_assert_eq(proc_lines_open(&r, path, CAP, &st), 0);
        char *line;
        size_t len;
        cr_assert_eq(proc_lines_next(&r, &line, &len), 1);
        cr_expect_str_eq(line, "first");
        cr_assert_eq(proc_lines_next(&r, &line, &len), 1);
        cr_expect_str_eq(line, "last", "the tail of the long line came out as a line: %s", line);
        cr_expect_eq(proc_lines_next(&r, &line, &len), 0);
        cr_expect_eq(st.lines_too_long, 1);
        proc_lines_close(&r);
        unlink(path);
}

Test(proc_lines, line_of_exactly_cap_and_last_without_newline)
{
        char text[256];
        memset(text, 'b', CAP);
        snprintf(text + CAP, sizeof(text) - CAP, "\nend");
        char *path = tmpfile_with(text);
        struct target_stats st = {0};
        struct proc_lines r;
        cr_assert_eq(proc_lines_open(&r, path, CAP, &st), 0);
        char *line;
        size_t len;
        cr_assert_eq(proc_lines_next(&r, &line, &len), 1);
        cr_expect_eq(len, CAP);
        cr_assert_eq(proc_lines_next(&r, &line, &len), 1);
        cr_expect_str_eq(line, "end");
        cr_expect_eq(proc_lines_next(&r, &line, &len), 0);
        cr_expect_eq(st.lines_too_long, 0);
        proc_lines_close(&r);
        unlink(path);
        cr_expect_eq(proc_lines_open(&r, "/proc/2147483647/maps", CAP, NULL), -ESRCH);
}

struct find {
        const char *path;
        struct target_file tf;
        int found;
};

static int find_cb(const struct maps_line *l, void *arg)
{
        struct find *f = arg;
        if (strcmp(l->path, f->path))
                return 0;
        f->tf = (struct target_file){
            .start = l->start, .end = l->end, .dev = l->dev, .ino = l->ino, .path = f->path};
        f->found = 1;
        return 1;
}

Test(target_open, mapped_file_forged_range_and_other_inode)
{
        char *path = tmpfile_with("mapped bytes\n");
        int fd = open(path, O_RDONLY);
        cr_assert(fd >= 0);
        void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
        cr_assert(p != MAP_FAILED);
        close(fd);
        struct find f = {.path = path};
        cr_assert_eq(maps_foreach(getpid(), find_cb, &f, NULL), 1);

        struct target_stats st = {0};
        fd = target_open(getpid(), &f.tf, &st);
        cr_assert(fd >= 0, "target_open: %s", strerror(-fd));
        struct stat sb;
        cr_assert_eq(fstat(fd, &sb), 0);
        cr_expect_eq(sb.st_ino, f.tf.ino);
        cr_expect_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
        close(fd);
        cr_expect_eq(st.opened, 1);

        /* the same inode claimed for another range: no such mapping, no open by path */
        char fifo[64];
        snprintf(fifo, sizeof(fifo), "%s.fifo", path);
        cr_assert_eq(mkfifo(fifo, 0600), 0);
        struct target_file forged = {.start = 0x7f0000000000ull,
                                     .end = 0x7f0000001000ull,
                                     .dev = f.tf.dev,
                                     .ino = 4242,
                                     .path = fifo};
        cr_expect_eq(target_open(getpid(), &forged, &st), -ENOENT);
        cr_expect_eq(st.no_mapping, 1);

        /* the real range with another inode than the line says: refused */
        struct target_file other = f.tf;
        other.ino = f.tf.ino + 1;
        cr_expect_eq(target_open(getpid(), &other, &st), -ESTALE);
        cr_expect_eq(st.mismatch, 1);
        cr_expect_eq(st.opened, 1);
        munmap(p, 4096);
        unlink(fifo);
        unlink(path);
}
