/* SPDX-License-Identifier: MIT */
/*
 * test_jfr_file.c — the chunk-level file (daemon/jfr/jfr_file.c): complete-prefix scan,
 * an in-place append whose error path cannot cut its bytes off (ftruncate fails), and
 * JFR_FILE_REPLACE: a reader polling the path, and a SIGKILL at any instant, never see a
 * partial chunk; mode and symlinks survive the renames; no temporary file is left (a writer
 * SIGKILLed between the link of its next state and the rename leaves its one hidden name,
 * which the file's next writer removes).
 * Chunks here are synthetic (a valid header, a patterned body): what is inside a chunk is
 * the writer's business (test_jfr_writer.c checks it against the JDK).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jfr/jfr_file.h"

#define BIG_CHUNK   (4u << 20) /* big enough that a write spans many pages */
#define KILL_ROUNDS 20

/* ---- ftruncate / fdatasync that fail on demand (this definition wins at link time over
 * libc's for the code in libctxprof.a) ---- */
static int fail_ftruncate, fail_fdatasync;

int ftruncate(int fd, off_t len)
{
        if (fail_ftruncate) {
                errno = EIO;
                return -1;
        }
        return (int)syscall(SYS_ftruncate, fd, len);
}

int fdatasync(int fd)
{
        if (fail_fdatasync) {
                errno = EIO;
                return -1;
        }
        return (int)syscall(SYS_fdatasync, fd);
}

static void put_be64(uint8_t *p, uint64_t v)
{
        for (int i = 7; i >= 0; i--, v >>= 8)
                p[i] = (uint8_t)v;
}

/* A chunk the prefix scan accepts: magic, version 2.1, size, metadata offset 68, state 0. */
static uint8_t *fake_chunk(size_t len, uint8_t fill)
{
        uint8_t *c = malloc(len);
        cr_assert(c && len > JFR_CHUNK_HEADER_SIZE);
        memset(c, fill, len);
        memset(c, 0, JFR_CHUNK_HEADER_SIZE);
        memcpy(c, "FLR\0", 4);
        c[5] = 2;
        c[7] = 1;
        put_be64(c + 8, len);
        put_be64(c + 24, JFR_CHUNK_HEADER_SIZE);
        c[67] = 1; /* flags: compressed integers */
        return c;
}

static void tmp_dir(char *buf, size_t n)
{
        snprintf(buf, n, "/tmp/ctxprof-jfrfile-XXXXXX");
        cr_assert(mkdtemp(buf));
}

static uint64_t prefix_of(const char *path, uint64_t *size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        uint64_t good = 0;
        cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert_eq(jfr_file_complete_prefix(fd, &good), 0);
        close(fd);
        *size = (uint64_t)st.st_size;
        return good;
}

static int dir_entries(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        int n = 0;
        cr_assert(d);
        while ((e = readdir(d)))
                n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
        closedir(d);
        return n;
}

static void rm_dir(const char *dir)
{
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        cr_assert_eq(system(cmd), 0);
}

Test(jfr_file, complete_prefix_stops_at_a_torn_tail)
{
        char dir[64], path[128];
        tmp_dir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/t.jfr", dir);
        uint8_t *a = fake_chunk(1000, 0xaa), *b = fake_chunk(5000, 0xbb);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, a, 1000), 1000);
        cr_assert_eq(write(fd, b, 5000), 5000);
        cr_assert_eq(write(fd, a, 700), 700); /* a chunk cut short */
        close(fd);
        uint64_t size;
        cr_assert_eq(prefix_of(path, &size), 6000);
        cr_assert_eq(size, 6700);

        /* recovery: the tail is cut, the complete chunks stay */
        struct jfr_file *f;
        cr_assert_eq(jfr_file_open(&f, path, JFR_FILE_APPEND | JFR_FILE_NO_FSYNC, NULL), 0);
        struct jfr_file_counters c;
        jfr_file_counters(f, &c);
        cr_assert_eq(c.trimmed_bytes, 700);
        cr_assert_eq(jfr_file_size(f), 6000);
        cr_assert_eq(jfr_file_close(f), 0);
        cr_assert_eq(prefix_of(path, &size), 6000);
        cr_assert_eq(size, 6000);
        free(a);
        free(b);
        rm_dir(dir);
}

/* The append fails after its bytes were written (fdatasync: EIO) and cutting them off fails
 * too. The error must not be silent: it is counted, and the next append (a shorter chunk)
 * must still leave exactly the complete chunks, not the failed chunk's leftover bytes. */
Test(jfr_file, failed_trim_is_counted_and_cut_before_the_next_append)
{
        char dir[64], path[128];
        tmp_dir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/t.jfr", dir);
        uint8_t *a = fake_chunk(1000, 0xaa), *big = fake_chunk(20000, 0xbb),
                *small = fake_chunk(300, 0xcc);
        struct jfr_file *f;
        struct jfr_file_counters c;
        uint64_t size;

        cr_assert_eq(jfr_file_open(&f, path, 0, NULL), 0);
        cr_assert_eq(jfr_file_append(f, a, 1000), 0);
        fail_fdatasync = fail_ftruncate = 1;
        cr_assert_eq(jfr_file_append(f, big, 20000), -EIO);
        fail_fdatasync = fail_ftruncate = 0;
        jfr_file_counters(f, &c);
        cr_assert_eq(c.append_errors, 1);
        cr_assert_eq(c.trim_errors, 1, "a failed ftruncate went unnoticed");
        cr_assert_eq(jfr_file_size(f), 1000);
        cr_assert_eq(jfr_file_append(f, small, 300), 0);
        cr_assert_eq(prefix_of(path, &size), 1300);
        cr_assert_eq(size, 1300, "the failed chunk's bytes are still after the last chunk");

        /* the same failure, then close: close cuts the tail */
        fail_fdatasync = fail_ftruncate = 1;
        cr_assert_eq(jfr_file_append(f, big, 20000), -EIO);
        fail_fdatasync = fail_ftruncate = 0;
        cr_assert_eq(jfr_file_close(f), 0);
        cr_assert_eq(prefix_of(path, &size), 1300);
        cr_assert_eq(size, 1300);
        free(a);
        free(big);
        free(small);
        rm_dir(dir);
}

Test(jfr_file, replace_keeps_mode_symlink_and_leaves_no_temporary)
{
        char dir[64], path[128], link[128];
        tmp_dir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/real.jfr", dir);
        snprintf(link, sizeof(link), "%s/link.jfr", dir);
        cr_assert_eq(symlink("real.jfr", link), 0);
        int fd = open(path, O_CREAT | O_WRONLY, 0600);
        cr_assert(fd >= 0);
        cr_assert_eq(fchmod(fd, 0640), 0);
        close(fd);

        struct jfr_file *f;
        cr_assert_eq(jfr_file_open(&f, link, JFR_FILE_REPLACE, NULL), 0);
        for (int i = 0; i < 3; i++) {
                uint8_t *c = fake_chunk(3000 + (size_t)i, (uint8_t)i);
                cr_assert_eq(jfr_file_append(f, c, 3000 + (size_t)i), 0);
                free(c);
        }
        struct jfr_file_counters c;
        jfr_file_counters(f, &c);
        cr_assert_eq(c.replaces, 3);
        cr_assert_eq(jfr_file_close(f), 0);

        struct stat st;
        uint64_t size;
        cr_assert_eq(lstat(link, &st), 0);
        cr_assert(S_ISLNK(st.st_mode), "the symlink was replaced by a file");
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0640);
        cr_assert_eq(prefix_of(path, &size), 9003);
        cr_assert_eq(size, 9003);
        cr_assert_eq(dir_entries(dir), 2, "a temporary file was left behind");
        rm_dir(dir);
}

/* A child appends 4 MiB chunks; the parent polls the path and checks every state it sees,
 * then kills the child at once when the file changes. Returns the number of torn states
 * seen. */
static int kill_rounds(const char *dir, int flags, int rounds)
{
        char path[128];
        int torn = 0;
        snprintf(path, sizeof(path), "%s/k.jfr", dir);
        for (int r = 0; r < rounds; r++) {
                unlink(path);
                pid_t pid = fork();
                cr_assert(pid >= 0);
                if (pid == 0) {
                        struct jfr_file *f;
                        uint8_t *c = fake_chunk(BIG_CHUNK, 0x5a);
                        if (jfr_file_open(&f, path, flags | JFR_FILE_NO_FSYNC, NULL))
                                _exit(1);
                        for (;;)
                                if (jfr_file_append(f, c, BIG_CHUNK))
                                        _exit(2);
                }
                struct stat st, last = {0};
                int changes = 0, want = 1 + r % 3;
                struct timespec t0, now;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                for (;;) {
                        if (!stat(path, &st) && st.st_size &&
                            (st.st_ino != last.st_ino || st.st_size != last.st_size)) {
                                last = st;
                                if (++changes >= want)
                                        break;
                        }
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        cr_assert(now.tv_sec - t0.tv_sec < 30, "the file never changed");
                }
                kill(pid, SIGKILL);
                int status;
                waitpid(pid, &status, 0);
                uint64_t size, good = prefix_of(path, &size);
                torn += good != size;
                if (flags != JFR_FILE_REPLACE)
                        continue;
                /* killed between the link of the next state and its rename (SIGKILL: no
                 * cleanup runs): that one hidden name only, removed by the file's next writer */
                char tmp[160];
                struct stat tst;
                snprintf(tmp, sizeof(tmp), "%s/.k.jfr.ctxprof.tmp", dir);
                int linked = !lstat(tmp, &tst);
                cr_assert_eq(dir_entries(dir), 1 + linked, "a temporary file was left behind");
                if (linked) {
                        struct jfr_file *next;
                        cr_assert_eq(jfr_file_open(&next, path, flags | JFR_FILE_NO_FSYNC, NULL),
                                     0);
                        cr_assert_eq(jfr_file_close(next), 0);
                        cr_assert_eq(dir_entries(dir), 1,
                                     "the next writer left a killed writer's temporary");
                        fprintf(stderr,
                                "round %d: killed between link and rename; the next "
                                "writer removed its temporary\n",
                                r);
                }
        }
        unlink(path);
        return torn;
}

Test(jfr_file, replace_survives_sigkill_at_any_instant, .timeout = 120)
{
        char dir[64];
        tmp_dir(dir, sizeof(dir));
        int torn_in_place = kill_rounds(dir, 0, KILL_ROUNDS);
        int torn_replace = kill_rounds(dir, JFR_FILE_REPLACE, KILL_ROUNDS);
        printf("killed when the file changed: torn tails %d of %d appending in place, %d of %d "
               "with JFR_FILE_REPLACE\n",
               torn_in_place, KILL_ROUNDS, torn_replace, KILL_ROUNDS);
        cr_assert_eq(torn_replace, 0);
        rm_dir(dir);
}

/* A writable file in a directory its writer may not write: the replacement cannot be
 * created, so the chunks go in place instead of nowhere. */
Test(jfr_file, replace_falls_back_in_place_in_a_read_only_directory)
{
        char dir[64], path[128];
        tmp_dir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/t.jfr", dir);
        int fd = open(path, O_CREAT | O_WRONLY, 0666);
        cr_assert(fd >= 0);
        close(fd);
        cr_assert_eq(chmod(path, 0666), 0);
        cr_assert_eq(chmod(dir, 0555), 0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                struct jfr_file *f;
                struct jfr_file_counters c;
                uint8_t *a = fake_chunk(2000, 1);
                if (getuid() == 0 && (setgid(65534) || setuid(65534))) /* root writes anywhere */
                        _exit(10);
                if (jfr_file_open(&f, path, JFR_FILE_REPLACE | JFR_FILE_NO_FSYNC, NULL))
                        _exit(11);
                if (jfr_file_append(f, a, 2000) || jfr_file_append(f, a, 2000))
                        _exit(12);
                jfr_file_counters(f, &c);
                _exit(c.replace_fallbacks == 1 && c.replaces == 0 ? 0 : 13);
        }
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
        uint64_t size;
        cr_assert_eq(prefix_of(path, &size), 4000);
        cr_assert_eq(chmod(dir, 0755), 0);
        rm_dir(dir);
}
