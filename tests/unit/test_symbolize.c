/* SPDX-License-Identifier: MIT */
/*
 * test_symbolize.c — symbolization of real processes' frames: C++ demangling, inline frames
 * with file:line, unresolved frames keeping module+offset and build id, corrupt ELF files,
 * frames of a process that exited (and whose file was deleted), libc's lines and inline
 * frames from its debug file found by build id, names longer than SYM_NAME_MAX.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "stack/sigbus_guard.h"
#include "stack_sampler.h"

static char path_qsort[512], path_stripped[512], path_inline[512], path_cxx[512];

static void setup(void)
{
        const char *b = test_build_dir();
        snprintf(path_qsort, sizeof(path_qsort), "%s/tests/fixtures/fx_qsort", b);
        snprintf(path_stripped, sizeof(path_stripped), "%s/tests/fixtures/fx_qsort_stripped", b);
        snprintf(path_inline, sizeof(path_inline), "%s/tests/fixtures/fx_inline", b);
        snprintf(path_cxx, sizeof(path_cxx), "%s/tests/fixtures/fx_cxx", b);
}

static int ends_with(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && !strcmp(s + a - b, suffix);
}

/* Line number of the first line of path containing marker, or -1. */
static int marker_line(const char *path, const char *marker)
{
        FILE *f = fopen(path, "r");
        if (!f)
                return -1;
        char buf[512];
        int ln = 0, found = -1;
        while (fgets(buf, sizeof(buf), f)) {
                ln++;
                if (strstr(buf, marker)) {
                        found = ln;
                        break;
                }
        }
        fclose(f);
        return found;
}

/* Start, end and file offset of pid's executable mapping of a file whose name ends with
 * suffix (parsed here independently of proc_maps.c). */
static int exec_mapping(pid_t pid, const char *suffix, uint64_t *start, uint64_t *end,
                        uint64_t *pgoff)
{
        char fn[64], line[1024];
        snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
        FILE *f = fopen(fn, "r");
        if (!f)
                return -1;
        int ok = -1;
        while (fgets(line, sizeof(line), f)) {
                unsigned long long s, e, o;
                char perms[8], path[512] = "";
                if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511[^\n]", &s, &e, perms, &o, path) >=
                        4 &&
                    perms[2] == 'x' && (strstr(path, suffix) != NULL)) {
                        *start = s;
                        *end = e;
                        *pgoff = o;
                        ok = 0;
                        break;
                }
        }
        fclose(f);
        return ok;
}

static int count_fds(void)
{
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -1;
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

TestSuite(symbolize, .init = setup, .timeout = 120);

Test(symbolize, cxx_names_are_demangled)
{
        int in = -1;
        char line[256];
        pid_t pid = spawn_fixture(path_cxx, &in, line, sizeof(line));
        cr_assert_gt(pid, 0, "cannot start %s", path_cxx);
        void *a_scale = NULL, *a_make = NULL;
        cr_assert_eq(sscanf(line, "%p %p", &a_scale, &a_make), 2, "bad line '%s'", line);

        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);
        struct ctxprof_frame f1, f2;
        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)a_scale, &f1), 0);
        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)a_make, &f2), 0);
        close(in); /* fx_cxx exits */
        waitpid(pid, NULL, 0);

        cr_assert_geq(f1.module_id, CTXPROF_MODULE_FIRST);
        cr_assert_eq(f1.module_id, f2.module_id);
        struct sym_frame sf[SYM_MAX_INLINE];
        int n = symbolize(sym, &f1, sf, SYM_MAX_INLINE);
        cr_assert_geq(n, 1);
        /* template functions carry their return type in the mangled name */
        cr_expect_str_eq(sf[n - 1].function, "int app::detail::scale<int>(int)");
        cr_expect(sf[n - 1].file && ends_with(sf[n - 1].file, "fx_cxx.cpp"));
        n = symbolize(sym, &f2, sf, SYM_MAX_INLINE);
        cr_assert_geq(n, 1);
        cr_expect_str_eq(sf[n - 1].function, "app::Box<long>::make(long)");
        /* the interned names are counted (the daemon recreates a symbolizer past a bound) */
        struct symbolizer_stats st;
        symbolizer_stats(sym, &st);
        cr_expect_geq(st.string_bytes, strlen("int app::detail::scale<int>(int)") +
                                           strlen("app::Box<long>::make(long)") +
                                           strlen("fx_cxx.cpp"));

        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
}

Test(symbolize, inline_frames_and_lines)
{
        int first = marker_line("tests/fixtures/fx_inline.c", "/* INLINE_FIRST */");
        int last = marker_line("tests/fixtures/fx_inline.c", "/* INLINE_LAST */");
        int call = marker_line("tests/fixtures/fx_inline.c", "/* CALL_SITE */");
        cr_assert(first > 0 && last > first && call > last, "markers not found (cwd = repo?)");

        char line[64];
        pid_t pid = spawn_fixture(path_inline, NULL, line, sizeof(line));
        cr_assert_gt(pid, 0);
        cr_assert_eq(sampler_attach(pid), 0);
        int memfd = open_mem(pid);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);
        static struct sample s;
        int inl = 0, total = 50;
        for (int i = 0; i < total; i++) {
                usleep(1000 + (unsigned)(rand() % 2000));
                cr_assert_eq(sampler_take(pid, memfd, &s), 0);
                struct ctxprof_frame f;
                cr_assert_eq(proc_maps_resolve(pm, s.regs[CTXPROF_REG_IP], &f), 0);
                struct sym_frame sf[SYM_MAX_INLINE];
                int n = symbolize(sym, &f, sf, SYM_MAX_INLINE);
                cr_assert_geq(n, 1);
                if (!sf[0].function || strcmp(sf[0].function, "hot_inline"))
                        continue;
                inl++;
                cr_expect_eq(n, 2, "hot_inline should be one inline level in outer");
                cr_expect_eq(sf[0].inlined, 1);
                cr_expect(sf[0].file && ends_with(sf[0].file, "fx_inline.c"));
                cr_expect(sf[0].line >= first && sf[0].line <= last, "line %d not in %d..%d",
                          sf[0].line, first, last);
                cr_expect_str_eq(sf[1].function, "outer");
                cr_expect_eq(sf[1].inlined, 0);
                cr_expect_eq(sf[1].line, call, "call site line %d, expected %d", sf[1].line, call);
                cr_expect(sf[1].file && ends_with(sf[1].file, "fx_inline.c"));
                /* a smaller output keeps the real function last */
                struct sym_frame one;
                cr_expect_eq(symbolize(sym, &f, &one, 1), 1);
                cr_expect_str_eq(one.function, "outer");
        }
        printf("inline: %d/%d stops inside hot_inline\n", inl, total);
        cr_expect_geq(inl * 2, total, "only %d/%d stops in hot_inline", inl, total);
        kill_fixture(pid);
        close(memfd);
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
}

Test(symbolize, unresolved_frames_keep_module_offset_and_build_id)
{
        char line[64];
        pid_t pid = spawn_fixture(path_stripped, NULL, line, sizeof(line));
        cr_assert_gt(pid, 0);
        cr_assert_eq(sampler_attach(pid), 0);
        int memfd = open_mem(pid);
        static struct sample s;
        uint64_t start, end, pgoff;
        cr_assert_eq(exec_mapping(pid, "fx_qsort_stripped", &start, &end, &pgoff), 0);
        /* most stops are in leaf(); some land in libc's qsort: take one in the executable */
        for (int i = 0; i < 100; i++) {
                cr_assert_eq(sampler_take(pid, memfd, &s), 0);
                if (s.regs[CTXPROF_REG_IP] >= start && s.regs[CTXPROF_REG_IP] < end)
                        break;
                usleep(1000);
        }

        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);
        /* the leaf is in the executable (leaf/cmp_slow), which has no symbols at all */
        uint64_t ip = s.regs[CTXPROF_REG_IP];
        cr_assert(ip >= start && ip < end, "leaf %#lx not in the executable", (unsigned long)ip);
        struct ctxprof_frame f;
        cr_assert_eq(proc_maps_resolve(pm, ip, &f), 0);
        cr_expect_geq(f.module_id, CTXPROF_MODULE_FIRST);
        cr_expect_eq(f.offset, ip - start + pgoff);
        struct sym_frame sf[4];
        cr_assert_eq(symbolize(sym, &f, sf, 4), 1);
        cr_expect_null(sf[0].function);
        cr_expect_null(sf[0].file);
        cr_expect_eq(sf[0].line, -1);
        struct module_info mi;
        cr_assert_eq(modules_info(mods, f.module_id, &mi), 0);
        cr_expect(ends_with(mi.path, "fx_qsort_stripped"), "path %s", mi.path);
        cr_expect_eq(strlen(mi.build_id_hex), 40, "build id '%s'", mi.build_id_hex);
        /* the same build id as read independently from the file */
        int fd = open(path_stripped, O_RDONLY);
        unsigned char bid[MODULES_BUILD_ID_MAX];
        int bl = modules_read_build_id(fd, bid, sizeof(bid));
        close(fd);
        cr_assert_eq(bl, 20);
        char hex[41];
        for (int i = 0; i < 20; i++)
                snprintf(hex + 2 * i, 3, "%02x", bid[i]);
        cr_expect_str_eq(mi.build_id_hex, hex);

        /* an address nobody maps: UNKNOWN with the raw address, one unnamed entry */
        cr_assert_eq(proc_maps_resolve(pm, 0x1000, &f), 0);
        cr_expect_eq(f.module_id, CTXPROF_MODULE_UNKNOWN);
        cr_expect_eq(f.offset, 0x1000);
        cr_expect_eq(symbolize(sym, &f, sf, 4), 1);
        cr_expect_null(sf[0].function);
        cr_expect_eq(modules_info(mods, CTXPROF_MODULE_UNKNOWN, &mi), -ENOENT);
        cr_expect_eq(symbolize(sym, &f, sf, 0), -EINVAL);

        kill_fixture(pid);
        close(memfd);
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
}

/* Map a file executable into this test process (like a loaded library). */
static void *map_exec(const char *path, size_t *len)
{
        int fd = open(path, O_RDONLY);
        cr_assert_geq(fd, 0);
        struct stat st;
        fstat(fd, &st);
        *len = (size_t)st.st_size;
        void *p = mmap(NULL, *len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        close(fd);
        cr_assert_neq(p, MAP_FAILED, "mmap PROT_EXEC of %s: %s", path, strerror(errno));
        return p;
}

static void write_file(const char *path, const void *buf, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, buf, len), (ssize_t)len);
        close(fd);
}

Test(symbolize, corrupt_elf_files_stay_unresolved)
{
        char dir[512], garbage[600], trunc[600], badhdr[600];
        snprintf(dir, sizeof(dir), "%s/tests/tmp", test_build_dir());
        mkdir(dir, 0755);
        snprintf(garbage, sizeof(garbage), "%s/garbage.%d.so", dir, (int)getpid());
        snprintf(trunc, sizeof(trunc), "%s/truncated.%d.so", dir, (int)getpid());
        snprintf(badhdr, sizeof(badhdr), "%s/badhdr.%d.so", dir, (int)getpid());

        static unsigned char buf[64 * 1024];
        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (unsigned char)(i * 7919 + 13);
        write_file(garbage, buf, sizeof(buf));
        /* a real ELF cut after its first 8 KiB: headers point beyond the end */
        int fd = open(path_qsort, O_RDONLY);
        ssize_t got = read(fd, buf, 8192);
        close(fd);
        cr_assert_eq(got, 8192);
        write_file(trunc, buf, 8192);
        /* a valid ident with absurd header fields */
        memset(buf + 16, 0xff, 48);
        write_file(badhdr, buf, 8192);

        const char *paths[] = {garbage, trunc, badhdr};
        void *maps[3];
        size_t lens[3];
        for (int i = 0; i < 3; i++)
                maps[i] = map_exec(paths[i], &lens[i]);

        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        for (int i = 0; i < 3; i++) {
                uint64_t ip = (uint64_t)(uintptr_t)maps[i] + 100;
                struct ctxprof_frame f;
                cr_assert_eq(proc_maps_resolve(pm, ip, &f), 0);
                cr_expect_geq(f.module_id, CTXPROF_MODULE_FIRST, "%s not registered", paths[i]);
                cr_expect_eq(f.offset, 100);
                struct module_info mi;
                cr_assert_eq(modules_info(mods, f.module_id, &mi), 0);
                cr_expect(ends_with(mi.path, strrchr(paths[i], '/')), "path %s", mi.path);
                struct sym_frame sf[4];
                cr_expect_eq(symbolize(sym, &f, sf, 4), 1);
                cr_expect_null(sf[0].function, "%s: got a name", paths[i]);
                f.flags = CTXPROF_FRAME_RETADDR;
                cr_expect_eq(symbolize(sym, &f, sf, 4), 1);

                /* unwinding with the leaf in the corrupt file: no crash, the leaf kept */
                uint64_t regs[UNWIND_NREGS] = {0}, ips[8];
                static unsigned char stk[4096];
                regs[CTXPROF_REG_SP] = (uint64_t)(uintptr_t)stk;
                regs[CTXPROF_REG_IP] = ip;
                int tr = 0;
                int n = dwarf_unwind(u, getpid(), regs, stk, sizeof(stk), ips, 8, &tr);
                cr_expect_geq(n, 1);
                cr_expect_eq(ips[0], ip);
        }
        proc_maps_free(pm);
        dwarf_unwinder_free(u);
        symbolizer_free(sym);
        modules_free(mods);
        for (int i = 0; i < 3; i++) {
                munmap(maps[i], lens[i]);
                unlink(paths[i]);
        }
}

/* Copy a fixture (at most 1 MiB) to BUILD/tests/tmp/NAME.PID; its path in out. */
static void copy_to_tmp(const char *src, const char *name, char *out, size_t outsz)
{
        snprintf(out, outsz, "%s/tests/tmp", test_build_dir());
        mkdir(out, 0755);
        snprintf(out, outsz, "%s/tests/tmp/%s.%d", test_build_dir(), name, (int)getpid());
        int in = open(src, O_RDONLY);
        struct stat st;
        cr_assert_geq(in, 0, "%s: %s", src, strerror(errno));
        fstat(in, &st);
        static unsigned char buf[1 << 20];
        ssize_t len = read(in, buf, sizeof(buf));
        close(in);
        cr_assert(len > 0 && len == st.st_size, "%s: read %zd of %lld", src, len,
                  (long long)st.st_size);
        write_file(out, buf, (size_t)len);
}

/* A target truncates one of its files while ctxprof reads it: elfutils has the file mapped,
 * so the next read of a page past the new end raises SIGBUS. The guard installed by
 * modules_new turns that into a corrupt module (no names), never a crash of the test (or of
 * the daemon). */
Test(symbolize, file_truncated_while_symbolizing)
{
        char copy[600];
        copy_to_tmp(path_inline, "fx_inline_trunc", copy, sizeof(copy));
        size_t maplen;
        unsigned char *base = map_exec(copy, &maplen);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        struct ctxprof_frame f;
        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)base + 0x1000, &f), 0);
        cr_assert_geq(f.module_id, CTXPROF_MODULE_FIRST);
        struct sym_frame sf[SYM_MAX_INLINE];
        /* the module is opened and its tables mapped while the file is whole */
        cr_assert_geq(symbolize(sym, &f, sf, SYM_MAX_INLINE), 1);
        uint64_t before = sigbus_guard_repaired();

        int fd = open(copy, O_WRONLY);
        cr_assert_geq(fd, 0);
        cr_assert_eq(ftruncate(fd, 0), 0);
        close(fd);
        /* every other offset is a fresh lookup: symbol table and DWARF pages re-read */
        for (uint64_t off = 0x1008; off < 0x1400; off += 8) {
                f.offset = off;
                cr_assert_geq(symbolize(sym, &f, sf, SYM_MAX_INLINE), 1);
        }
        uint64_t repaired = sigbus_guard_repaired() - before;
        cr_log_info("pages past the truncated end repaired: %llu", (unsigned long long)repaired);
        cr_expect_gt(repaired, 0, "no read past the end: the test did not exercise the guard");

        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
        munmap(base, maplen);
        unlink(copy);
}

Test(symbolize, frames_of_an_exited_process_with_a_deleted_file)
{
        char copy[600];
        copy_to_tmp(path_qsort, "fx_qsort_deleted", copy, sizeof(copy));
        chmod(copy, 0755);
        int fds_before = count_fds();
        char line[64];
        pid_t pid = spawn_fixture(copy, NULL, line, sizeof(line));
        cr_assert_gt(pid, 0);
        unlink(copy); /* now "(deleted)" in its maps */
        cr_assert_eq(sampler_attach(pid), 0);
        int memfd = open_mem(pid);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);

        /* record frames while it lives ... */
        enum { NS = 10 };
        static struct ctxprof_frame frames[NS][CTXPROF_MAX_FRAMES];
        int nframes[NS];
        static struct sample s;
        for (int i = 0; i < NS; i++) {
                usleep(1000);
                cr_assert_eq(sampler_take(pid, memfd, &s), 0);
                uint64_t ips[CTXPROF_MAX_FRAMES];
                int tr;
                int n = dwarf_unwind(u, pid, s.regs, s.stack, s.len, ips, CTXPROF_MAX_FRAMES, &tr);
                cr_assert_geq(n, 1);
                for (int j = 0; j < n; j++) {
                        cr_assert_eq(proc_maps_resolve(pm, ips[j], &frames[i][j]), 0);
                        if (j)
                                frames[i][j].flags |= CTXPROF_FRAME_RETADDR;
                }
                nframes[i] = n;
        }
        /* ... then it exits, and only then are the frames named */
        kill_fixture(pid);
        close(memfd);
        dwarf_unwinder_forget(u, pid);
        proc_maps_free(pm);
        int with_main = 0;
        for (int i = 0; i < NS; i++) {
                int main_seen = 0, run_sort_seen = 0;
                for (int j = 0; j < nframes[i]; j++) {
                        struct sym_frame sf[SYM_MAX_INLINE];
                        int n = symbolize(sym, &frames[i][j], sf, SYM_MAX_INLINE);
                        cr_assert_geq(n, 1);
                        const char *fn = sf[n - 1].function;
                        int is_main = fn && !strcmp(fn, "main");
                        main_seen |= is_main;
                        run_sort_seen |= fn && !strcmp(fn, "run_sort");
                        if (is_main) {
                                /* main's module, not the leaf's: a sample may stop in libc's
                                 * qsort as well as in the executable's comparator */
                                struct module_info mi;
                                cr_assert_eq(modules_info(mods, frames[i][j].module_id, &mi), 0);
                                cr_expect(ends_with(mi.path, strrchr(copy, '/')), "%s", mi.path);
                                cr_expect_eq(strlen(mi.build_id_hex), 40);
                        }
                }
                with_main += main_seen && run_sort_seen;
        }
        cr_expect_eq(with_main, NS, "only %d/%d stacks named main and run_sort after exit",
                     with_main, NS);
        dwarf_unwinder_free(u);
        symbolizer_free(sym);
        modules_free(mods);
        /* the registry's and libdwfl's descriptors are all closed again */
        cr_expect_eq(count_fds(), fds_before);
}

Test(symbolize, one_module_per_file_across_processes)
{
        char line[64];
        pid_t a = spawn_fixture(path_qsort, NULL, line, sizeof(line));
        pid_t b = spawn_fixture(path_qsort, NULL, line, sizeof(line));
        cr_assert(a > 0 && b > 0);
        struct modules *mods = modules_new();
        struct proc_maps *pa = NULL, *pb = NULL;
        cr_assert_eq(proc_maps_open(mods, a, &pa), 0);
        cr_assert_eq(proc_maps_open(mods, b, &pb), 0);
        uint64_t sa, ea, oa, sb, eb, ob;
        cr_assert_eq(exec_mapping(a, "libc.so", &sa, &ea, &oa), 0);
        cr_assert_eq(exec_mapping(b, "libc.so", &sb, &eb, &ob), 0);
        struct ctxprof_frame fa, fb;
        cr_assert_eq(proc_maps_resolve(pa, sa + 0x123, &fa), 0);
        cr_assert_eq(proc_maps_resolve(pb, sb + 0x123, &fb), 0);
        cr_expect_eq(fa.module_id, fb.module_id);
        cr_expect_eq(fa.offset, fb.offset);
        cr_expect_eq(fa.offset, oa + 0x123);
        kill_fixture(a);
        kill_fixture(b);
        proc_maps_free(pa);
        proc_maps_free(pb);
        cr_expect_eq(proc_maps_open(mods, a, &pa), -ESRCH);
        modules_free(mods);
}

Test(symbolize, anonymous_executable_memory_stays_a_raw_address)
{
        /* what a JIT's code cache looks like in /proc/PID/maps: no file */
        size_t len = 2 * 4096;
        unsigned char *jit =
            mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert_neq(jit, MAP_FAILED);
        jit[0] = 0xc3; /* ret */
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        uint64_t ip = (uint64_t)(uintptr_t)jit + 0x123;
        struct ctxprof_frame f;
        cr_assert_eq(proc_maps_resolve(pm, ip, &f), 0);
        cr_expect_eq(f.module_id, CTXPROF_MODULE_UNKNOWN);
        cr_expect_eq(f.offset, ip);
        struct sym_frame sf[2];
        cr_expect_eq(symbolize(sym, &f, sf, 2), 1);
        cr_expect_null(sf[0].function);
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
        munmap(jit, len);
}

/* libc's own functions are named with lines and inline frames from its separate debug file,
 * found by build id under /usr/lib/debug/.build-id (Debian's libc6-dbg; skipped without it):
 * the only place debug files are looked up (stack/debuginfo_find.h). */
Test(symbolize, libc_lines_and_inline_frames_from_its_debug_file)
{
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        cr_assert_not_null(libc);
        /* libc's malloc itself, not an interposer (ASan) */
        uint64_t fn = (uint64_t)(uintptr_t)dlsym(libc, "malloc");
        cr_assert_neq(fn, 0);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        struct ctxprof_frame f;
        cr_assert_eq(proc_maps_resolve(pm, fn, &f), 0);
        struct module_info mi;
        cr_assert_eq(modules_info(mods, f.module_id, &mi), 0);
        char dbg[256];
        snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", mi.build_id_hex,
                 mi.build_id_hex + 2);
        if (strlen(mi.build_id_hex) < 4 || access(dbg, R_OK)) {
                proc_maps_free(pm);
                symbolizer_free(sym);
                modules_free(mods);
                cr_skip_test("no debug file of libc (%s): install libc6-dbg", dbg);
        }
        int lines = 0, inl = 0, total = 0;
        for (uint64_t d = 0; d < 256; d += 2) {
                cr_assert_eq(proc_maps_resolve(pm, fn + d, &f), 0);
                struct sym_frame sf[SYM_MAX_INLINE];
                int n = symbolize(sym, &f, sf, SYM_MAX_INLINE);
                cr_assert_geq(n, 1);
                total++;
                if (sf[0].file && ends_with(sf[0].file, "malloc.c") && sf[0].line > 0)
                        lines++;
                if (n >= 2 && sf[0].inlined && sf[n - 1].function &&
                    strstr(sf[n - 1].function, "malloc"))
                        inl++;
        }
        printf("libc malloc: %d/%d stops with malloc.c:LINE, %d in inline frames\n", lines, total,
               inl);
        cr_expect_geq(lines * 2, total, "only %d/%d stops have malloc.c:LINE", lines, total);
        cr_expect_gt(inl, 0, "no inline frame in libc's malloc");
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
}

/* A function of this program whose name (symbol table and DWARF) is 4095 'a', then 'é'
 * (2 bytes: bytes 4095 and 4096), then "_tail": SYM_NAME_MAX cuts inside the 'é'. */
_Static_assert(SYM_NAME_MAX == 4096, "the name below straddles byte 4096");
#define CAT_(a, b)  CAT__(a, b)
#define CAT__(a, b) a##b
#define N1          a
#define N2          CAT_(N1, N1)
#define N4          CAT_(N2, N2)
#define N8          CAT_(N4, N4)
#define N16         CAT_(N8, N8)
#define N32         CAT_(N16, N16)
#define N64         CAT_(N32, N32)
#define N128        CAT_(N64, N64)
#define N256        CAT_(N128, N128)
#define N512        CAT_(N256, N256)
#define N1024       CAT_(N512, N512)
#define N2048       CAT_(N1024, N1024)
#define N4095                                                                                      \
        CAT_(N2048,                                                                                \
             CAT_(N1024,                                                                           \
                  CAT_(N512,                                                                       \
                       CAT_(N256,                                                                  \
                            CAT_(N128,                                                             \
                                 CAT_(N64,                                                         \
                                      CAT_(N32, CAT_(N16, CAT_(N8, CAT_(N4, CAT_(N2, N1)))))))))))
#define LONG_NAME CAT_(N4095, é_tail)

__attribute__((noinline)) int LONG_NAME(int x);
__attribute__((noinline)) int LONG_NAME(int x)
{
        __asm__ volatile("" : "+r"(x));
        return x * 3 + 1;
}

Test(symbolize, long_names_are_cut_at_a_character_boundary)
{
        cr_assert_eq(LONG_NAME(1), 4);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        struct ctxprof_frame f;
        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)&LONG_NAME, &f), 0);
        struct sym_frame sf[4];
        int n = symbolize(sym, &f, sf, 4);
        cr_assert_geq(n, 1);
        const char *name = sf[n - 1].function;
        cr_assert_not_null(name);
        /* cut before the 'é' that crosses SYM_NAME_MAX, never inside it */
        cr_expect_eq(strlen(name), SYM_NAME_MAX - 1, "name of %zu bytes", strlen(name));
        cr_expect_eq(strspn(name, "a"), SYM_NAME_MAX - 1);
        struct symbolizer_stats st;
        symbolizer_stats(sym, &st);
        cr_expect_geq(st.names_cut, 1);
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
}

/* 0 when nobody has the FIFO at path open for reading (a blocked open(O_RDONLY) counts). */
static int fifo_has_reader(const char *path)
{
        int fd = open(path, O_WRONLY | O_NONBLOCK);
        if (fd >= 0)
                close(fd);
        return fd >= 0;
}

/* Copy src to dst with objcopy ARGS (a section added or removed); 0 on success. */
static int objcopy(const char *args, const char *src, const char *dst)
{
        char cmd[2048];
        snprintf(cmd, sizeof(cmd), "objcopy %s '%s' '%s' 2>/dev/null", args, src, dst);
        return system(cmd);
}

/* The target's file names its debug information: a .gnu_debuglink (CRC 0) and a
 * .gnu_debugaltlink naming FIFOs beside it. elfutils' standard lookup opened them (and
 * blocked in open(2)); the symbolizer looks up debug files by build id only
 * (stack/debuginfo_find.h): it names the frames from the symbol table, does not block, and
 * leaves the FIFOs alone. (The daemon's version of this: tests/hostile/test_debug*_fifo.sh.) */
Test(symbolize, debug_links_in_the_file_are_not_followed)
{
        if (system("command -v objcopy >/dev/null"))
                cr_skip_test("needs objcopy (binutils) to plant the links");
        char dir[600], link[700], altlink[700], fifo[700], altfifo[700], blob[700];
        snprintf(dir, sizeof(dir), "%s/tests/tmp", test_build_dir());
        mkdir(dir, 0755);
        snprintf(dir, sizeof(dir), "%s/tests/tmp/links.%d", test_build_dir(), (int)getpid());
        cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
        snprintf(link, sizeof(link), "%s/app", dir);
        snprintf(altlink, sizeof(altlink), "%s/app_alt", dir);
        snprintf(fifo, sizeof(fifo), "%s/app.debug", dir);
        snprintf(altfifo, sizeof(altfifo), "%s/alt.debug", dir);
        snprintf(blob, sizeof(blob), "%s/blob", dir);

        /* no symbols of its own in the first (so a debug file is wanted), DWARF in the second */
        static const char dl[] = "app.debug\0\0\0\0\0\0"; /* name, padding to 4, CRC 0 */
        write_file(blob, dl, sizeof(dl) - 1);
        char args[800];
        snprintf(args, sizeof(args), "--add-section .gnu_debuglink='%s'", blob);
        cr_assert_eq(objcopy(args, path_stripped, link), 0);
        static const char al[] = "alt.debug\0"
                                 "0123456789abcdefghij"; /* name, build id */
        write_file(blob, al, sizeof(al) - 1);
        snprintf(args, sizeof(args), "--add-section .gnu_debugaltlink='%s'", blob);
        cr_assert_eq(objcopy(args, path_inline, altlink), 0);
        cr_assert_eq(mkfifo(fifo, 0644), 0);
        cr_assert_eq(mkfifo(altfifo, 0644), 0);

        const char *paths[] = {link, altlink};
        void *maps[2];
        size_t lens[2];
        for (int i = 0; i < 2; i++)
                maps[i] = map_exec(paths[i], &lens[i]);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        for (int i = 0; i < 2; i++) {
                /* every page of the file's text: any frame may be the one that looks */
                for (size_t off = 0; off < lens[i]; off += 64) {
                        struct ctxprof_frame f;
                        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)maps[i] + off, &f),
                                     0);
                        struct sym_frame sf[SYM_MAX_INLINE];
                        cr_assert_geq(symbolize(sym, &f, sf, SYM_MAX_INLINE), 1);
                }
        }
        struct symbolizer_stats st;
        symbolizer_stats(sym, &st);
        cr_expect_eq(st.dwarf_refused, 1, "the DWARF whose alt file has no build-id match is read");
        cr_expect_not(fifo_has_reader(fifo), "someone sits in open(2) of %s", fifo);
        cr_expect_not(fifo_has_reader(altfifo), "someone sits in open(2) of %s", altfifo);
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
        for (int i = 0; i < 2; i++) {
                munmap(maps[i], lens[i]);
                unlink(paths[i]);
        }
        unlink(fifo);
        unlink(altfifo);
        unlink(blob);
        rmdir(dir);
}

/* One module cannot take the whole result cache: past SYM_MODULE_CACHE_BYTES its frames are
 * named but not cached (counted), and the cache is never emptied for it. */
Test(symbolize, one_module_cannot_fill_the_result_cache)
{
        size_t len;
        void *map = map_exec(path_stripped, &len);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, getpid(), &pm), 0);
        struct ctxprof_frame f;
        cr_assert_eq(proc_maps_resolve(pm, (uint64_t)(uintptr_t)map, &f), 0);
        cr_assert_geq(f.module_id, CTXPROF_MODULE_FIRST);
        /* each distinct offset is one cache entry of at least 48 bytes */
        uint64_t n = SYM_MODULE_CACHE_BYTES / 48 + 1000;
        for (uint64_t i = 0; i < n; i++) {
                struct sym_frame sf[4];
                f.offset = i;
                cr_assert_geq(symbolize(sym, &f, sf, 4), 1);
        }
        struct symbolizer_stats st;
        symbolizer_stats(sym, &st);
        printf("%llu frames of one module: %llu not cached, cache emptied %llu times\n",
               (unsigned long long)n, (unsigned long long)st.cache_refused,
               (unsigned long long)st.cache_clears);
        cr_expect_geq(st.cache_refused, 1000);
        cr_expect_eq(st.cache_clears, 0);
        proc_maps_free(pm);
        symbolizer_free(sym);
        modules_free(mods);
        munmap(map, len);
}
