/* SPDX-License-Identifier: MIT */
/*
 * test_util.c — daemon/util/: the clocks agree with the kernel's, FNV-1a gives the published
 * test vectors, the page size is the kernel's, arrays grow by doubling and keep their contents (and
 * are left alone on overflow), `mkdir -p` creates what is missing with the right modes and reports
 * what is in the way, and the write loops finish after short writes (RLIMIT_FSIZE) and signals
 * (EINTR from a timer while a pipe is full).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fs.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/page.h"

/* ---- clock ---- */

Test(util_clock, monotonic_ns_and_ms_agree_with_clock_gettime)
{
        struct timespec ts;
        uint64_t a = mono_ns();
        uint64_t ms = mono_ms();

        cr_assert_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
        uint64_t b = (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
        uint64_t c = mono_ns();

        cr_assert_leq(a, b);
        cr_assert_leq(b, c);
        cr_assert_geq(ms, a / NS_PER_MS);
        cr_assert_leq(ms, c / NS_PER_MS);
        for (int i = 0; i < 1000; i++) {
                uint64_t n = mono_ns();

                cr_assert_geq(n, c, "CLOCK_MONOTONIC went back");
                c = n;
        }
}

Test(util_clock, wall_ns_is_the_epoch_clock)
{
        time_t before = time(NULL);
        uint64_t w = wall_ns();
        time_t after = time(NULL);

        cr_assert_geq(w / NS_PER_SEC, (uint64_t)before);
        /* time() reads the coarse clock, up to a tick behind CLOCK_REALTIME: across a
         * second's edge it can still say the second before (a clean-clone CI run failed so) */
        cr_assert_leq(w / NS_PER_SEC, (uint64_t)after + 1);
}

/* ---- page ---- */

Test(util_page, the_kernel_page_size)
{
        uint64_t ps = page_size();

        cr_assert_eq(ps, (uint64_t)getpagesize());
        cr_assert_eq(ps & (ps - 1), 0, "a power of two");
}

/* ---- hash ---- */

/* Vectors from the FNV reference (Fowler/Noll/Vo, draft-eastlake-fnv). */
Test(util_hash, fnv1a64_reference_vectors)
{
        cr_assert_eq(fnv1a64(NULL, 0), 0xcbf29ce484222325ull);
        cr_assert_eq(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
        cr_assert_eq(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
        /* bytes, not a C string: an embedded NUL counts */
        cr_assert_neq(fnv1a64("a\0b", 3), fnv1a64("a", 1));
}

/* ---- grow ---- */

Test(util_grow, nothing_happens_while_it_fits)
{
        int buf[4], *a = buf;
        size_t cap = 4;

        cr_assert_eq(grow_array((void **)&a, &cap, sizeof(*a), 4, 64), 0);
        cr_assert_eq(a, buf);
        cr_assert_eq(cap, 4);
        a = NULL;
        cap = 0;
        cr_assert_eq(grow_array((void **)&a, &cap, sizeof(*a), 0, 64), 0);
        cr_assert_null(a);
}

Test(util_grow, doubles_from_first_and_keeps_contents)
{
        uint64_t *a = NULL;
        size_t cap = 0;

        cr_assert_eq(grow_array((void **)&a, &cap, sizeof(*a), 1, 16), 0);
        cr_assert_eq(cap, 16);
        for (size_t i = 0; i < 16; i++)
                a[i] = i * 7;
        /* one more than fits: double */
        cr_assert_eq(grow_array((void **)&a, &cap, sizeof(*a), 17, 16), 0);
        cr_assert_eq(cap, 32);
        /* far more: the first power-of-two multiple that holds it */
        cr_assert_eq(grow_array((void **)&a, &cap, sizeof(*a), 1000, 16), 0);
        cr_assert_eq(cap, 1024);
        for (size_t i = 0; i < 16; i++)
                cr_assert_eq(a[i], i * 7);
        a[999] = 1; /* ASan: the whole new capacity is there */
        free(a);
}

Test(util_grow, u32_capacity)
{
        uint16_t *a = NULL;
        uint32_t cap = 0;

        cr_assert_eq(grow_array_u32((void **)&a, &cap, sizeof(*a), 100, 64), 0);
        cr_assert_eq(cap, 128);
        a[127] = 1;
        cr_assert_eq(grow_array_u32((void **)&a, &cap, sizeof(*a), (size_t)UINT32_MAX + 1, 64),
                     -EOVERFLOW);
        cr_assert_eq(cap, 128);
        free(a);
}

Test(util_grow, overflow_leaves_the_array_alone)
{
        char *a = malloc(8), *was = a;
        size_t cap = 8;

        cr_assert_eq(grow_array((void **)&a, &cap, 16, SIZE_MAX / 16 + 1, 64), -EOVERFLOW);
        cr_assert_eq(a, was);
        cr_assert_eq(cap, 8);
        free(a);
}

/* ---- fs: mkdir -p ---- */

static char root[] = "/tmp/ctxprof-util.XXXXXX";

static void make_root(void)
{
        umask(022);
        cr_assert(mkdtemp(root));
}

static void remove_root(void)
{
        char cmd[64];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
        cr_expect_eq(system(cmd), 0);
}

static mode_t mode_of(const char *path)
{
        struct stat st;

        cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
        cr_assert(S_ISDIR(st.st_mode), "%s is not a directory", path);
        return st.st_mode & 07777;
}

static const char *in_root(char *buf, const char *rel)
{
        snprintf(buf, PATH_MAX, "%s/%s", root, rel);
        return buf;
}

Test(util_fs, mkdir_p_creates_parents_and_leaf_with_their_modes, .init = make_root,
     .fini = remove_root)
{
        char p[PATH_MAX];

        cr_assert_eq(mkdir_p(in_root(p, "a/b/c"), 0750), 0);
        cr_assert_eq(mode_of(in_root(p, "a")), 0755);
        cr_assert_eq(mode_of(in_root(p, "a/b")), 0755);
        cr_assert_eq(mode_of(in_root(p, "a/b/c")), 0750);
        /* again: everything exists, nothing changes */
        cr_assert_eq(chmod(in_root(p, "a/b/c"), 0700), 0);
        cr_assert_eq(mkdir_p(in_root(p, "a/b/c"), 0750), 0);
        cr_assert_eq(mode_of(in_root(p, "a/b/c")), 0700);
        /* a trailing slash and doubled slashes */
        cr_assert_eq(mkdir_p(in_root(p, "d//e/"), 0750), 0);
        mode_of(in_root(p, "d/e"));
}

Test(util_fs, mkdir_p_reports_what_is_in_the_way, .init = make_root, .fini = remove_root)
{
        char p[PATH_MAX], *long_path;
        int fd = open(in_root(p, "file"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_eq(mkdir_p(in_root(p, "file/sub"), 0750), -ENOTDIR);
        cr_assert_eq(mkdir_parents(in_root(p, "file/sub/x"), 0755), -ENOTDIR);

        long_path = malloc(PATH_MAX + 2);
        memset(long_path, 'x', PATH_MAX + 1);
        long_path[0] = '/';
        long_path[PATH_MAX + 1] = '\0';
        cr_assert_eq(mkdir_p(long_path, 0750), -ENAMETOOLONG);
        free(long_path);
}

Test(util_fs, mkdir_parents_creates_the_directory_of_a_file, .init = make_root, .fini = remove_root)
{
        char p[PATH_MAX];
        struct stat st;

        cr_assert_eq(mkdir_parents(in_root(p, "s/t/status"), 0755), 0);
        cr_assert_eq(mode_of(in_root(p, "s/t")), 0755);
        cr_assert_neq(stat(in_root(p, "s/t/status"), &st), 0, "the file itself is not made");
        cr_assert_eq(mkdir_parents("status-in-cwd", 0755), 0);
        cr_assert_eq(mkdir_parents("/status-in-root", 0755), 0);
}

/* ---- fs: write loops ---- */

Test(util_fs, write_all_and_pwrite_all_write_everything, .init = make_root, .fini = remove_root)
{
        char p[PATH_MAX], got[64];
        int fd = open(in_root(p, "w"), O_CREAT | O_RDWR | O_CLOEXEC, 0644);

        cr_assert_geq(fd, 0);
        cr_assert_eq(write_all(fd, "hello ", 6), 0);
        cr_assert_eq(pwrite_all(fd, "world", 5, 6), 0);
        cr_assert_eq(pwrite_all(fd, "W", 1, 6), 0);
        cr_assert_eq(pread(fd, got, sizeof(got), 0), 11);
        cr_assert_eq(memcmp(got, "hello World", 11), 0);
        cr_assert_eq(write_all(fd, "", 0), 0);
        close(fd);

        fd = open(in_root(p, "w"), O_RDONLY | O_CLOEXEC);
        cr_assert_eq(write_all(fd, "x", 1), -EBADF);
        close(fd);
        fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write_all(fd, "x", 1), -ENOSPC);
        close(fd);
}

/* With RLIMIT_FSIZE at 4096 the first write of 10000 bytes is cut short at 4096 bytes; the
 * loop must go on and get EFBIG from the next one (a loop that stopped after the short write
 * would report success). */
Test(util_fs, short_writes_are_continued, .init = make_root, .fini = remove_root)
{
        static char big[10000];
        struct rlimit rl = {4096, 4096};
        char p[PATH_MAX];
        struct stat st;

        signal(SIGXFSZ, SIG_IGN);
        memset(big, 'b', sizeof(big));
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);

        int fd = open(in_root(p, "w"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write_all(fd, big, sizeof(big)), -EFBIG);
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert_eq(st.st_size, 4096);
        cr_assert_eq(pwrite_all(fd, big, sizeof(big), 1000), -EFBIG);
        close(fd);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
        (void)sig;
        alarms++;
}

#define PIPE_BYTES (8u << 20)

static void *drain(void *arg)
{
        int fd = *(int *)arg;
        size_t total = 0, bad = 0;
        unsigned char buf[4096];
        ssize_t n;

        while ((n = read(fd, buf, sizeof(buf))) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (ssize_t i = 0; i < n; i++)
                        bad += buf[i] != (unsigned char)((total + (size_t)i) * 31);
                total += (size_t)n;
        }
        return (void *)(bad ? SIZE_MAX : total);
}

/* A timer signal without SA_RESTART interrupts write() on a full pipe again and again: each
 * time write returns what it wrote so far, or -1/EINTR. Every byte must still arrive once. */
Test(util_fs, signals_during_write_all_lose_nothing)
{
        struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
        struct itimerval it = {{0, 200}, {0, 200}};
        unsigned char *data = malloc(PIPE_BYTES);
        sigset_t alrm, old;
        pthread_t reader;
        void *got;
        int fds[2];

        cr_assert(data);
        for (size_t i = 0; i < PIPE_BYTES; i++)
                data[i] = (unsigned char)(i * 31);
        cr_assert_eq(pipe(fds), 0);
        /* the reader never takes the signal: only the writer is interrupted */
        sigemptyset(&alrm);
        sigaddset(&alrm, SIGALRM);
        pthread_sigmask(SIG_BLOCK, &alrm, &old);
        cr_assert_eq(pthread_create(&reader, NULL, drain, &fds[0]), 0);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
        cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);

        int err = write_all(fds[1], data, PIPE_BYTES);

        memset(&it, 0, sizeof(it));
        setitimer(ITIMER_REAL, &it, NULL);
        close(fds[1]);
        pthread_join(reader, &got);
        close(fds[0]);
        free(data);
        cr_assert_eq(err, 0);
        cr_assert_eq((size_t)got, PIPE_BYTES, "the reader got %zu bytes (SIZE_MAX: wrong bytes)",
                     (size_t)got);
        cr_assert_gt(alarms, 0, "no signal arrived during the write: the test proved nothing");
}
