/* SPDX-License-Identifier: MIT */
/*
 * test_tls_locate.c — the TLS locator and the reference reader against real processes:
 * fixture children (tests/fixtures/tls_fixture.c, built by mk/50-tlsloc.mk) publish known
 * labels and spans in several threads; the test locates the variables from the child's ELF
 * files and /proc/PID/mem only, takes each thread's fs_base with ptrace, and checks every
 * value and every address against what the child printed about itself.
 * Never leaves a child behind (each dies with SIGKILL, and with its parent).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx/abi.h"
#include "ctx_read_user.h"
#include "tls/elf_tls.h"
#include "tls/tls_locate.h"

#define MAXT 16

struct fx_thread {
        pid_t tid;
        char role[16];
        int idx;
        uint64_t labels_addr, span_addr; /* as the thread saw them; 0 = not printed */
};

struct fx {
        pid_t pid;
        FILE *out;
        int n;
        struct fx_thread th[MAXT];
};

static const char *build_dir(void)
{
        const char *b = getenv("TEST_BUILD");
        return b && *b ? b : "build";
}

static void fx_path(char *buf, size_t len, const char *name)
{
        snprintf(buf, len, "%s/tests/fixtures/%s", build_dir(), name);
}

static void fx_start(struct fx *f, const char *name, const char *arg, const char *tunables)
{
        char path[512];
        fx_path(path, sizeof(path), name);
        cr_assert(access(path, X_OK) == 0, "fixture %s missing: build with make test-bins", path);
        int p[2];
        cr_assert(pipe2(p, O_CLOEXEC) == 0);
        memset(f, 0, sizeof(*f));
        f->pid = fork();
        cr_assert(f->pid >= 0);
        if (f->pid == 0) {
                dup2(p[1], 1);
                if (tunables)
                        setenv("GLIBC_TUNABLES", tunables, 1);
                execl(path, path, arg, (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        f->out = fdopen(p[0], "r");
        cr_assert(f->out);
        char line[256];
        while (fgets(line, sizeof(line), f->out)) {
                if (strncmp(line, "READY", 5) == 0)
                        return;
                struct fx_thread *t = &f->th[f->n];
                void *la, *sa;
                cr_assert(f->n < MAXT);
                cr_assert(sscanf(line, "T %d %15s %d %p %p", &t->tid, t->role, &t->idx, &la, &sa) ==
                              5,
                          "bad fixture line: %s", line);
                t->labels_addr = (uint64_t)(uintptr_t)la;
                t->span_addr = (uint64_t)(uintptr_t)sa;
                f->n++;
        }
        cr_assert_fail("fixture %s exited before READY", name);
}

static void fx_stop(struct fx *f)
{
        if (f->pid > 0) {
                kill(f->pid, SIGKILL);
                waitpid(f->pid, NULL, 0);
        }
        if (f->out)
                fclose(f->out);
        f->pid = 0;
        f->out = NULL;
}

/* The thread pointer of one thread of a child, via ptrace (stops it for a moment). */
static uint64_t thread_fsbase(pid_t tid)
{
        cr_assert(ptrace(PTRACE_SEIZE, tid, 0, 0) == 0, "PTRACE_SEIZE %d: %s", tid,
                  strerror(errno));
        cr_assert(ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0);
        int st;
        cr_assert(waitpid(tid, &st, __WALL) == tid);
        struct user_regs_struct regs;
        cr_assert(ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0);
        cr_assert(ptrace(PTRACE_DETACH, tid, 0, 0) == 0);
        return regs.fs_base;
}

static const char *mode_name(uint32_t m)
{
        return m == CTXPROF_TLS_STATIC ? "STATIC" : m == CTXPROF_TLS_DTV ? "DTV" : "NONE";
}

static void print_var(const char *fixture, const char *what, const struct ctxprof_tls_var *v)
{
        fprintf(stderr,
                "%-22s %-6s %-6s tp_offset=%" PRId64 " module=%" PRIu64 " offset=%" PRIu64
                " stride=%u\n",
                fixture, what, mode_name(v->mode), (int64_t)v->tp_offset, (uint64_t)v->module,
                (uint64_t)v->offset, v->dtv_stride);
}

/* Labels written by the libctx API: our two, plus libctx's span mirrors if present. */
static void check_worker_labels(const struct ctx_user_context *c, int idx)
{
        char want[16];
        snprintf(want, sizeof(want), "w%d", idx);
        cr_assert_eq(c->labels_error, 0);
        cr_assert(c->labels_present);
        const struct ctx_user_label *l = ctx_user_label_find(c, "fixture");
        cr_assert(l, "worker %d: label 'fixture' missing", idx);
        cr_assert_str_eq(l->val, "tlsloc");
        l = ctx_user_label_find(c, "worker");
        cr_assert(l, "worker %d: label 'worker' missing", idx);
        cr_assert_str_eq(l->val, want);
        for (unsigned i = 0; i < c->nlabels; i++) {
                const char *k = c->labels[i].key;
                if (!strcmp(k, "fixture") || !strcmp(k, "worker"))
                        continue;
                char num[32];
                if (!strcmp(k, "span-id"))
                        snprintf(num, sizeof(num), "%" PRIu64, (uint64_t)0xA000 + idx);
                else if (!strcmp(k, "root-span-id"))
                        snprintf(num, sizeof(num), "%" PRIu64,
                                 (uint64_t)0x00000001B0000000ULL + idx);
                else
                        cr_assert_fail("worker %d: unexpected label '%s'", idx, k);
                cr_assert_str_eq(c->labels[i].val, num);
        }
}

static void check_raw1(const struct ctx_user_context *c)
{
        cr_assert_eq(c->labels_error, 0);
        cr_assert_eq(c->nlabels, 3, "NULL key and NULL value skipped, duplicate dropped: %u",
                     c->nlabels);
        const struct ctx_user_label *l = ctx_user_label_find(c, "a");
        cr_assert(l);
        cr_assert_str_eq(l->val, "1", "first duplicate wins");
        l = ctx_user_label_find(c, "b");
        cr_assert(l);
        cr_assert_str_eq(l->val, "22");
        cr_assert_null(ctx_user_label_find(c, "c"), "value.buf NULL: skipped");
        const struct ctx_user_label *lk = NULL;
        for (unsigned i = 0; i < c->nlabels; i++)
                if (c->labels[i].key_len == 200)
                        lk = &c->labels[i];
        cr_assert(lk, "long key kept (truncated)");
        cr_assert_eq(lk->key_n, CTX_READ_MAX_KEY);
        for (unsigned i = 0; i < CTX_READ_MAX_KEY; i++)
                cr_assert_eq(lk->key[i], 'k');
        cr_assert_str_eq(lk->val, "L");
}

enum expect { EXPECT_ANY, EXPECT_STATIC, EXPECT_DTV };

/* Start fixture, locate, read every thread, check; returns the target for extra checks. */
static void run_fixture(const char *name, const char *arg, const char *tunables, enum expect expect,
                        struct ctxprof_tls_target *tout)
{
        /* a dlopen'ed module in dynamic TLS has no block in a thread that never touched it */
        int expect_unallocated = arg && expect == EXPECT_DTV;
        struct fx f;
        fx_start(&f, name, arg, tunables);
        struct ctxprof_tls_target t;
        int rc = tls_locate(f.pid, &t, NULL);
        cr_assert_eq(rc, 0, "%s: tls_locate = %d (%s)", name, rc, strerror(-rc));
        const char *label = tunables ? "dlopen+tunable" : name;
        print_var(label, "labels", &t.labels);
        print_var(label, "span", &t.span);
        cr_assert_neq(t.labels.mode, CTXPROF_TLS_NONE, "%s: labels not found", name);
        cr_assert_neq(t.span.mode, CTXPROF_TLS_NONE, "%s: span not found", name);
        if (expect != EXPECT_ANY) {
                uint32_t m = expect == EXPECT_STATIC ? CTXPROF_TLS_STATIC : CTXPROF_TLS_DTV;
                cr_assert_eq(t.labels.mode, m, "%s: labels mode %s", name,
                             mode_name(t.labels.mode));
                cr_assert_eq(t.span.mode, m, "%s: span mode %s", name, mode_name(t.span.mode));
        }
        char p[64];
        snprintf(p, sizeof(p), "/proc/%d/mem", f.pid);
        int mem = open(p, O_RDONLY | O_CLOEXEC);
        cr_assert(mem >= 0);
        int workers = 0;
        for (int i = 0; i < f.n; i++) {
                struct fx_thread *th = &f.th[i];
                uint64_t tp = thread_fsbase(th->tid);
                cr_assert_neq(tp, 0);
                struct ctx_user_context c;
                cr_assert_eq(ctx_read_user(mem, &t, tp, &c), 0);
                if (th->labels_addr) {
                        /* the locator's address is the one the thread itself uses */
                        uint64_t a;
                        cr_assert_eq(tls_var_address(mem, &t, &t.labels, tp, &a), 0);
                        cr_assert_eq(a, th->labels_addr,
                                     "%s %s %d: labels at %#" PRIx64 ", thread says %#" PRIx64,
                                     name, th->role, th->idx, a, th->labels_addr);
                        cr_assert_eq(tls_var_address(mem, &t, &t.span, tp, &a), 0);
                        cr_assert_eq(a, th->span_addr, "%s %s %d: span at %#" PRIx64, name,
                                     th->role, th->idx, a);
                }
                if (!strcmp(th->role, "worker")) {
                        workers++;
                        check_worker_labels(&c, th->idx);
                        cr_assert_eq(c.span_state, CTX_SPAN_VALID, "%s worker %d: span state %d",
                                     name, th->idx, c.span_state);
                        cr_assert_eq(c.span_id, 0xA000 + (uint64_t)th->idx);
                        cr_assert_eq(c.root_span_id, 0x00000001B0000000ULL + th->idx);
                } else if (!strcmp(th->role, "raw1")) {
                        check_raw1(&c);
                } else if (!strcmp(th->role, "raw2")) {
                        /* wild storage pointer, count 2^63: an error, never a label */
                        cr_assert(c.labels_present);
                        cr_assert_eq(c.nlabels, 0);
                        cr_assert_eq(c.labels_error, -EFAULT);
                } else {
                        /* main (loaded the library only), idle and early (never touched it; early
                         * was created before the dlopen) */
                        cr_assert_eq(c.labels_present, 0, "%s %s: labels", name, th->role);
                        cr_assert_eq(c.nlabels, 0);
                        cr_assert(c.span_state == CTX_SPAN_NONE || c.span_state == CTX_SPAN_ABSENT,
                                  "%s %s: span state %d", name, th->role, c.span_state);
                        if (expect_unallocated && strcmp(th->role, "main") != 0) {
                                uint64_t a;
                                int r = tls_var_address(mem, &t, &t.span, tp, &a);
                                fprintf(stderr, "%-22s %s thread: tls_var_address = %d\n", label,
                                        th->role, r);
                                cr_assert_eq(r, -ENOENT, "unallocated DTV block must be -ENOENT");
                        }
                }
        }
        cr_assert_eq(workers, 3);
        close(mem);
        fx_stop(&f);
        if (tout)
                *tout = t;
}

Test(tls_locate, shared_library_tlsdesc)
{
        run_fixture("tls_fx_so", NULL, NULL, EXPECT_STATIC, NULL);
}

Test(tls_locate, archive_in_pie)
{
        run_fixture("tls_fx_pie", NULL, NULL, EXPECT_STATIC, NULL);
}

Test(tls_locate, archive_in_non_pie)
{
        run_fixture("tls_fx_nopie", NULL, NULL, EXPECT_STATIC, NULL);
}

Test(tls_locate, local_exec_symtab_only)
{
        struct ctxprof_tls_target t;
        run_fixture("tls_fx_nodynlist", NULL, NULL, EXPECT_STATIC, &t);
}

Test(tls_locate, dlopen_default)
{
        char lib[512];
        snprintf(lib, sizeof(lib), "%s/libctx.so", build_dir());
        /* small TLS: static, from glibc's optional surplus (512 B by default) */
        run_fixture("tls_fx_dlopen", lib, NULL, EXPECT_STATIC, NULL);
}

Test(tls_locate, dlopen_dynamic_tls)
{
        char lib[512];
        snprintf(lib, sizeof(lib), "%s/libctx.so", build_dir());
        struct ctxprof_tls_target t;
        run_fixture("tls_fx_dlopen", lib, "glibc.rtld.optional_static_tls=0", EXPECT_DTV, &t);
        cr_assert_eq(t.labels.dtv_stride, 16);
        cr_assert_eq(t.dtv.dtv_offset, 8);
        cr_assert_eq(t.dtv.len_index, -1);
}

Test(tls_locate, general_dynamic_dialect)
{
        run_fixture("tls_fx_gd", NULL, NULL, EXPECT_DTV, NULL);
}

Test(tls_locate, third_party_writer_reader_rules)
{
        run_fixture("tls_fx_raw", NULL, NULL, EXPECT_STATIC, NULL);
}

Test(tls_locate, process_without_symbols)
{
        struct fx f;
        fx_start(&f, "tls_fx_none", NULL, NULL);
        struct ctxprof_tls_target t;
        cr_assert_eq(tls_locate(f.pid, &t, NULL), 0);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE);
        cr_assert_eq(t.span.mode, CTXPROF_TLS_NONE);
        fx_stop(&f);
}

/* Located once without context (its files remembered as context-free), then it dlopens
 * libctx: the next location must find it and read the label the process set. */
Test(tls_locate, library_dlopened_after_the_first_look)
{
        char path[512], lib[512], line[256];
        int in[2], out[2];

        fx_path(path, sizeof(path), "tls_fx_late");
        snprintf(lib, sizeof(lib), "%s/libctx.so", build_dir());
        cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execl(path, path, lib, (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        FILE *fo = fdopen(out[0], "r");
        cr_assert(fo && fgets(line, sizeof(line), fo) && !strncmp(line, "ready", 5),
                  "tls_fx_late did not start");

        struct ctxprof_tls_target t;
        for (int i = 0; i < 2; i++) { /* twice: the second look uses what the first remembered */
                cr_assert_eq(tls_locate(pid, &t, NULL), 0);
                cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE, "context before the dlopen");
        }
        cr_assert_eq(write(in[1], "x", 1), 1);
        cr_assert(fgets(line, sizeof(line), fo) && !strncmp(line, "loaded", 6), "got: %s", line);
        cr_assert_eq(tls_locate(pid, &t, NULL), 0);
        cr_assert_neq(t.labels.mode, CTXPROF_TLS_NONE, "libctx dlopen'ed later not found");
        cr_assert_neq(t.span.mode, CTXPROF_TLS_NONE);

        snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
        int mem = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert(mem >= 0);
        struct ctx_user_context c;
        cr_assert_eq(ctx_read_user(mem, &t, thread_fsbase(pid), &c), 0);
        const struct ctx_user_label *l = ctx_user_label_find(&c, "late");
        cr_assert(l && !strcmp(l->val, "yes"), "label late=yes not read");
        close(mem);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fclose(fo);
        close(in[1]);
}

/* Rewrite dst in place with src's bytes (same inode, new size and mtime). */
static void rewrite_file(const char *src, const char *dst)
{
        static char buf[4 << 20];
        int in = open(src, O_RDONLY | O_CLOEXEC);
        cr_assert(in >= 0, "%s: %s", src, strerror(errno));
        ssize_t n = read(in, buf, sizeof(buf));
        close(in);
        cr_assert(n > 0 && n < (ssize_t)sizeof(buf));
        int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        cr_assert(out >= 0, "%s: %s", dst, strerror(errno));
        cr_assert_eq(write(out, buf, (size_t)n), n);
        close(out);
}

/* An executable without context is remembered as such; the same file (same inode) rewritten
 * with a build that links libctx must be read again, not skipped. */
Test(tls_locate, file_rewritten_in_place_is_read_again)
{
        char dst[512], none[512], pie[512];
        struct stat a, b;
        struct fx f;
        struct ctxprof_tls_target t;

        fx_path(dst, sizeof(dst), "tls_fx_rewritten");
        fx_path(none, sizeof(none), "tls_fx_none");
        fx_path(pie, sizeof(pie), "tls_fx_pie");
        unlink(dst);
        rewrite_file(none, dst);
        fx_start(&f, "tls_fx_rewritten", NULL, NULL);
        cr_assert_eq(tls_locate(f.pid, &t, NULL), 0);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE);
        fx_stop(&f);
        cr_assert_eq(stat(dst, &a), 0);
        usleep(10000); /* a visibly later mtime, whatever the file system's granularity */
        rewrite_file(pie, dst);
        cr_assert_eq(stat(dst, &b), 0);
        cr_assert_eq(a.st_ino, b.st_ino, "not rewritten in place");
        fx_start(&f, "tls_fx_rewritten", NULL, NULL);
        cr_assert_eq(tls_locate(f.pid, &t, NULL), 0);
        cr_assert_neq(t.labels.mode, CTXPROF_TLS_NONE, "the rewritten file was not read again");
        fx_stop(&f);
        /* and back: a file that defined our variables is not taken for what it was either */
        usleep(10000);
        rewrite_file(none, dst);
        fx_start(&f, "tls_fx_rewritten", NULL, NULL);
        cr_assert_eq(tls_locate(f.pid, &t, NULL), 0);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE, "the rewritten file's old variables stayed");
        fx_stop(&f);
        unlink(dst);
}

Test(tls_locate, a_file_read_once_is_not_read_again)
{
        struct target_stats st1 = {0}, st2 = {0};
        struct ctxprof_tls_target t1, t2;
        struct fx f;

        /* the same process twice (another process of the same files may map them in
         * another order: ASLR, and locate stops at the file that defines the last variable) */
        fx_start(&f, "tls_fx_so", NULL, NULL);
        cr_assert_eq(tls_locate(f.pid, &t1, &st1), 0);
        cr_assert_eq(tls_locate(f.pid, &t2, &st2), 0);
        fx_stop(&f);
        cr_assert_neq(t1.labels.mode, CTXPROF_TLS_NONE);
        cr_assert_gt(st1.opened, 0);
        /* every file was read before: those without context and the library with it */
        cr_assert_eq(st2.opened, 0, "%lu files read again", (unsigned long)st2.opened);
        cr_assert_eq(t2.labels.mode, t1.labels.mode);
        cr_assert_eq(t2.labels.tp_offset, t1.labels.tp_offset);
        cr_assert_eq(t2.span.mode, t1.span.mode);
        cr_assert_eq(t2.span.tp_offset, t1.span.tp_offset);
}

Test(tls_locate, dead_and_zombie_pid)
{
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0)
                _exit(0);
        /* zombie: exists, no address space */
        siginfo_t si;
        cr_assert(waitid(P_PID, pid, &si, WEXITED | WNOWAIT) == 0);
        struct ctxprof_tls_target t;
        cr_assert_eq(tls_locate(pid, &t, NULL), -ESRCH);
        cr_assert(waitpid(pid, NULL, 0) == pid);
        cr_assert_eq(tls_locate(pid, &t, NULL), -ESRCH);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE);
}

/* Before ld.so ran (stopped at exec), the executable's own variables are still located:
 * its TLS block is always the first, so the file alone gives the offsets, and they equal
 * what the relocated GOT says once the process runs. */
Test(tls_locate, executable_at_exec_stop)
{
        struct ctxprof_tls_target running;
        run_fixture("tls_fx_pie", NULL, NULL, EXPECT_STATIC, &running);

        char path[512];
        fx_path(path, sizeof(path), "tls_fx_pie");
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                ptrace(PTRACE_TRACEME, 0, 0, 0);
                execl(path, path, (char *)NULL);
                _exit(127);
        }
        int st;
        cr_assert(waitpid(pid, &st, 0) == pid);
        cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "not stopped at exec");
        struct ctxprof_tls_target t;
        int rc = tls_locate(pid, &t, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        cr_assert_eq(rc, 0, "tls_locate at exec = %d", rc);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_STATIC);
        cr_assert_eq(t.labels.tp_offset, running.labels.tp_offset);
        cr_assert_eq(t.span.mode, CTXPROF_TLS_STATIC);
        cr_assert_eq(t.span.tp_offset, running.span.tp_offset);
}

/* A shared object mapped but not relocated yet (descriptors still {0,0}): -EAGAIN, and no
 * variable is reported (never an offset decoded from garbage). */
Test(tls_locate, mapped_not_relocated_is_eagain)
{
        char lib[512];
        snprintf(lib, sizeof(lib), "%s/libctx.so", build_dir());
        struct fx f;
        fx_start(&f, "tls_fx_maponly", lib, NULL);
        struct ctxprof_tls_target t;
        int rc = tls_locate(f.pid, &t, NULL);
        fx_stop(&f);
        cr_assert_eq(rc, -EAGAIN, "tls_locate = %d", rc);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE);
        cr_assert_eq(t.span.mode, CTXPROF_TLS_NONE);
}

static void copy_file(const char *from, const char *to)
{
        FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
        cr_assert(a && b);
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
                cr_assert_eq(fwrite(buf, 1, n, b), n);
        fclose(a);
        cr_assert_eq(fclose(b), 0);
        chmod(to, 0755);
}

/* Corrupt and truncated ELF files: an error (or nothing found), never a crash. */
Test(tls_locate, corrupt_elf_files)
{
        char src[512], tmp[] = "/tmp/tlsloc-elf-XXXXXX";
        fx_path(src, sizeof(src), "libctxstandin.so");
        int fd = mkstemp(tmp);
        cr_assert(fd >= 0);
        close(fd);
        copy_file(src, tmp);
        struct stat sb;
        cr_assert(stat(tmp, &sb) == 0);
        const char *names[] = {CUSTOM_LABELS_CURRENT_SET_SYM, CTX_SPAN_CONTEXT_SYM};
        struct elf_tls_info info;
        struct elf_tls_sym syms[2];

        fd = open(tmp, O_RDONLY);
        cr_assert_eq(elf_tls_scan(fd, names, 2, 1, &info, syms), 0);
        cr_assert(syms[0].defined && syms[0].reloc == ELF_TLS_RELOC_TLSDESC);
        close(fd);

        /* truncations: section headers sit at the end, so every cut loses them */
        off_t cuts[] = {0, 16, 64, 200, sb.st_size / 3, sb.st_size / 2, sb.st_size - 64};
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
                cr_assert(truncate(tmp, cuts[i]) == 0);
                fd = open(tmp, O_RDONLY);
                int rc = elf_tls_scan(fd, names, 2, 1, &info, syms);
                close(fd);
                cr_assert_lt(rc, 0, "cut at %ld: rc %d", (long)cuts[i], rc);
                copy_file(src, tmp);
        }
        /* garbage over the section header table and the dynamic symbols */
        unsigned seed = 12345;
        for (int round = 0; round < 50; round++) {
                copy_file(src, tmp);
                fd = open(tmp, O_RDWR);
                for (int k = 0; k < 64; k++) {
                        seed = seed * 1103515245u + 12345u;
                        off_t at = 16 + (off_t)(seed % (unsigned)(sb.st_size - 16));
                        unsigned char b = (unsigned char)(seed >> 16);
                        cr_assert_eq(pwrite(fd, &b, 1, at), 1);
                }
                int rc = elf_tls_scan(fd, names, 2, 1, &info, syms);
                close(fd);
                cr_assert(rc == 0 || rc == -ENOEXEC, "round %d: rc %d", round, rc);
        }
        unlink(tmp);
}

/* Start a copy of tls_fx_raw and its library in a fresh directory (so the test may
 * unlink or truncate them). */
struct copied {
        char dir[64], exe[128], lib[128];
};

static void start_copied(struct fx *f, struct copied *c)
{
        snprintf(c->dir, sizeof(c->dir), "/tmp/tlsloc-run-XXXXXX");
        cr_assert(mkdtemp(c->dir));
        char src[512];
        fx_path(src, sizeof(src), "tls_fx_raw");
        snprintf(c->exe, sizeof(c->exe), "%s/tls_fx_raw", c->dir);
        copy_file(src, c->exe);
        fx_path(src, sizeof(src), "libctxstandin.so");
        snprintf(c->lib, sizeof(c->lib), "%s/libctxstandin.so", c->dir);
        copy_file(src, c->lib);

        memset(f, 0, sizeof(*f));
        int p[2];
        cr_assert(pipe2(p, O_CLOEXEC) == 0);
        f->pid = fork();
        cr_assert(f->pid >= 0);
        if (f->pid == 0) {
                dup2(p[1], 1);
                int devnull = open("/dev/null", O_WRONLY);
                dup2(devnull, 2); /* ASan in the child may complain about a truncated file */
                execl(c->exe, c->exe, (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        f->out = fdopen(p[0], "r");
        cr_assert(f->out);
        char line[256];
        int ready = 0;
        while (!ready && fgets(line, sizeof(line), f->out))
                ready = strncmp(line, "READY", 5) == 0;
        cr_assert(ready, "copied fixture did not start");
}

static void stop_copied(struct fx *f, struct copied *c)
{
        fx_stop(f);
        unlink(c->lib);
        unlink(c->exe);
        rmdir(c->dir);
}

/* A live process whose context library is truncated under it: no crash, nothing found. */
Test(tls_locate, library_truncated_while_running)
{
        struct fx f;
        struct copied c;
        start_copied(&f, &c);
        struct ctxprof_tls_target t;
        cr_assert_eq(tls_locate(f.pid, &t, NULL), 0);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_STATIC);
        cr_assert(truncate(c.lib, 300) == 0);
        int rc = tls_locate(f.pid, &t, NULL);
        fprintf(stderr, "after truncating the mapped library: tls_locate = %d, labels %s\n", rc,
                mode_name(t.labels.mode));
        cr_assert(rc <= 0);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_NONE);
        stop_copied(&f, &c);
}

/* The library file was deleted (package upgrade): still found through map_files. */
Test(tls_locate, library_deleted_while_running)
{
        struct fx f;
        struct copied c;
        start_copied(&f, &c);
        cr_assert(unlink(c.lib) == 0);
        struct ctxprof_tls_target t;
        cr_assert_eq(tls_locate(f.pid, &t, NULL), 0);
        cr_assert_eq(t.labels.mode, CTXPROF_TLS_STATIC);
        cr_assert_eq(t.span.mode, CTXPROF_TLS_STATIC);
        stop_copied(&f, &c);
}

/* Someone else's process without the right to read it: a clear error, not "no context". */
Test(tls_locate, no_permission)
{
        if (geteuid() != 0) {
                struct ctxprof_tls_target t;
                int rc = tls_locate(1, &t, NULL);
                cr_assert(rc == -EACCES || rc == -EPERM, "rc %d", rc);
                return;
        }
        struct fx f;
        fx_start(&f, "tls_fx_so", NULL, NULL);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
                        _exit(10);
                struct ctxprof_tls_target t;
                int rc = tls_locate(f.pid, &t, NULL);
                _exit(rc == -EACCES || rc == -EPERM ? 0 : rc == 0 ? 11 : 12);
        }
        int st;
        cr_assert(waitpid(pid, &st, 0) == pid);
        fx_stop(&f);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "unprivileged tls_locate: exit %d",
                  WEXITSTATUS(st));
}
