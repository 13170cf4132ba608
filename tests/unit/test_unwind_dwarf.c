/* SPDX-License-Identifier: MIT */
/*
 * test_unwind_dwarf.c — DWARF unwinding of real stacks: fx_qsort (no frame pointers, hot path
 * in libc's qsort callback) is stopped at random moments with ptrace; its stack is copied
 * page-wise like the BPF program does; dwarf_unwind + proc_maps_resolve + symbolize must
 * produce main -> run_sort -> qsort... -> cmp_slow -> leaf. Also: bad input, dead pids.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stack_sampler.h"

#define NSTOPS 400

static char fixture[512];

static void setup(void)
{
        snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/fx_qsort", test_build_dir());
        srand((unsigned)time(NULL));
}

/* The chain of one stop is right when it reaches main through run_sort, and every leaf /
 * cmp_slow frame sits where the program puts it. */
static int chain_ok(const struct chain *c, int *full)
{
        int m = chain_find(c, "main", 0);
        *full = 0;
        if (m < 1 || strcmp(c->names[m - 1], "run_sort"))
                return 0;
        int l = chain_find(c, "leaf", 0), cs = chain_find(c, "cmp_slow", 0);
        if (l >= 0 && cs != l + 1)
                return 0;
        if (cs >= 0) {
                int q = -1;
                for (int i = cs + 1; i < m - 1; i++)
                        if (strstr(c->names[i], "qsort") || strstr(c->names[i], "msort"))
                                q = i;
                if (q < 0)
                        return 0;
                *full = l == 0;
        }
        return 1;
}

Test(unwind_dwarf, qsort_callbacks_reach_main, .init = setup, .timeout = 300)
{
        pid_t pid = spawn_fixture(fixture, NULL, (char[64]){0}, 64);
        cr_assert_gt(pid, 0, "cannot start %s", fixture);
        cr_assert_eq(sampler_attach(pid), 0, "PTRACE_SEIZE failed");
        int memfd = open_mem(pid);
        cr_assert_geq(memfd, 0);

        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        struct proc_maps *pm = NULL;
        cr_assert(mods && sym && u);
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);
        usleep(20000); /* let it get past printing "ready", into run_sort */

        static struct sample s;
        static struct chain c;
        int ok = 0, full = 0, total = 0, printed = 0;
        for (int i = 0; i < NSTOPS; i++) {
                usleep(200 + (unsigned)(rand() % 3000));
                cr_assert_eq(sampler_take(pid, memfd, &s), 0, "sample %d failed", i);
                int n = sample_chain(u, pm, sym, pid, &s, &c);
                cr_assert_gt(n, 0, "pipeline failed: %d", n);
                total++;
                int f;
                if (chain_ok(&c, &f)) {
                        ok++;
                        full += f;
                } else if (printed++ < 5) {
                        fprintf(stderr, "bad chain (stack copy %zu B): ", s.len);
                        chain_print(&c, stderr);
                }
                if (i == 0) {
                        fprintf(stderr, "example: ");
                        chain_print(&c, stderr);
                }
        }
        printf("dwarf unwind: %d/%d stops reach main with the expected chain (%.1f%%), "
               "%d with the full leaf<-cmp_slow<-qsort<-run_sort<-main chain\n",
               ok, total, 100.0 * ok / total, full);
        kill_fixture(pid);
        close(memfd);
        proc_maps_free(pm);
        dwarf_unwinder_free(u);
        symbolizer_free(sym);
        modules_free(mods);
        cr_expect_geq(ok * 100, total * 99, "only %d/%d stops reached main correctly", ok, total);
        /* leaf() is where the fixture spends its time: most stops are inside it */
        cr_expect_geq(full * 2, total, "only %d/%d stops had the full chain", full, total);
}

Test(unwind_dwarf, bad_input_and_dead_pid)
{
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        cr_assert(u);
        uint64_t regs[UNWIND_NREGS] = {0}, ips[8];
        int tr = 0;
        cr_expect_eq(dwarf_unwind(u, 0, regs, NULL, 0, ips, 8, &tr), -EINVAL);
        cr_expect_eq(dwarf_unwind(u, getpid(), regs, NULL, 16, ips, 8, &tr), -EINVAL);
        cr_expect_eq(dwarf_unwind(u, getpid(), regs, NULL, 0, ips, 0, &tr), -EINVAL);

        /* a pid that no longer exists */
        pid_t dead = fork();
        if (dead == 0)
                _exit(0);
        waitpid(dead, NULL, 0);
        regs[CTXPROF_REG_IP] = 0x401000;
        cr_expect_eq(dwarf_unwind(u, dead, regs, NULL, 0, ips, 8, &tr), -ESRCH);

        /* garbage registers and a garbage stack for a live process: no crash, the leaf kept */
        unsigned char junk[4096];
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (unsigned char)rand();
        regs[CTXPROF_REG_SP] = (uint64_t)(uintptr_t)junk;
        regs[CTXPROF_REG_IP] = (uint64_t)(uintptr_t)&chain_ok; /* text of ours */
        int n = dwarf_unwind(u, getpid(), regs, junk, sizeof(junk), ips, 8, &tr);
        cr_expect_geq(n, 1);
        cr_expect_eq(ips[0], regs[CTXPROF_REG_IP]);
        dwarf_unwinder_forget(u, getpid());
        dwarf_unwinder_forget(u, 12345678); /* unknown pid: nothing happens */
        dwarf_unwinder_free(u);
}

/* 1 once pid maps a file whose maps line holds needle, polled every 10 ms for up to 10 s. */
static int wait_mapped(pid_t pid, const char *needle)
{
        char path[64], line[1024];

        snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
        for (int i = 0; i < 1000; i++) {
                FILE *f = fopen(path, "r");
                int found = 0;

                while (f && !found && fgets(line, sizeof(line), f))
                        found = strstr(line, needle) != NULL;
                if (f)
                        fclose(f);
                if (found)
                        return 1;
                usleep(10000);
        }
        return 0;
}

Test(unwind_dwarf, code_mapped_after_attach_is_found, .timeout = 120)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/tests/fixtures/fx_dlopen", test_build_dir());
        int in = -1;
        char line[64];
        pid_t pid = spawn_fixture(path, &in, line, sizeof(line));
        cr_assert_gt(pid, 0, "cannot start %s", path);
        cr_assert_eq(sampler_attach(pid), 0);
        int memfd = open_mem(pid);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);

        /* first sample while it waits in read(): unwinder and maps know the old mappings */
        static struct sample s;
        static struct chain c;
        usleep(20000);
        cr_assert_eq(sampler_take(pid, memfd, &s), 0);
        cr_assert_gt(sample_chain(u, pm, sym, pid, &s, &c), 0);
        fprintf(stderr, "before dlopen: ");
        chain_print(&c, stderr);
        cr_expect_geq(chain_find(&c, "main", 0), 0, "blocked in read: should reach main");

        /* now the plugin gets mapped and runs */
        cr_assert_eq(write(in, "g", 1), 1);
        /* the fact first (a loaded host may run the fixture's dlopen late: 6 of 20 samples
         * came before it in one run), then past our own re-read limits */
        cr_assert(wait_mapped(pid, "libfx_plugin.so"), "the plugin was not mapped within 10 s");
        usleep(200000); /* > UNWIND_REREPORT_NS and PROC_MAPS_REFRESH_NS */
        int ok = 0, total = 20;
        for (int i = 0; i < total; i++) {
                usleep(3000);
                cr_assert_eq(sampler_take(pid, memfd, &s), 0);
                cr_assert_gt(sample_chain(u, pm, sym, pid, &s, &c), 0);
                int sp = chain_find(&c, "plugin_spin", 0);
                int run = chain_find(&c, "plugin_run", 0);
                int m = chain_find(&c, "main", 0);
                if (sp == 0 && run > sp && m > run)
                        ok++;
                else if (i < 3) {
                        fprintf(stderr, "after dlopen: ");
                        chain_print(&c, stderr);
                }
        }
        struct proc_maps_stats pst;
        proc_maps_stats(pm, &pst);
        printf("after dlopen: %d/%d stops plugin_spin <- plugin_run <- main; maps re-read %llu "
               "times\n",
               ok, total, (unsigned long long)pst.refreshes);
        cr_expect_geq(pst.refreshes, 1);
        /* plugin_spin is where the loop spends its time */
        cr_expect_geq(ok * 10, total * 8, "only %d/%d", ok, total);
        close(in);
        kill_fixture(pid);
        close(memfd);
        proc_maps_free(pm);
        dwarf_unwinder_free(u);
        symbolizer_free(sym);
        modules_free(mods);
}

/* Single-step fx_redzone through every instruction of its loop, epilogues included: each
 * step must unwind to main. Between rz_leaf's `pop %rbp` and `ret` this needs the red-zone
 * answer (rz_caller's CFA is rbp-based). */
Test(unwind_dwarf, every_instruction_single_stepped, .timeout = 120)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/tests/fixtures/fx_redzone", test_build_dir());
        char line[64];
        pid_t pid = spawn_fixture(path, NULL, line, sizeof(line));
        cr_assert_gt(pid, 0, "cannot start %s", path);
        cr_assert_eq(sampler_attach(pid), 0);
        int memfd = open_mem(pid);
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        struct proc_maps *pm = NULL;
        cr_assert_eq(proc_maps_open(mods, pid, &pm), 0);
        usleep(20000);
        cr_assert_eq(sampler_stop(pid), 0);

        static struct sample s;
        static struct chain c;
        int total = 0, ok = 0, in_leaf = 0, printed = 0;
        for (int i = 0; i < 3000; i++) {
                cr_assert_eq(sampler_read(pid, memfd, &s), 0);
                cr_assert_gt(sample_chain(u, pm, sym, pid, &s, &c), 0);
                total++;
                int m = chain_find(&c, "main", 0);
                int leaf = chain_find(&c, "rz_leaf", 0);
                int caller = chain_find(&c, "rz_caller", 0);
                in_leaf += leaf == 0;
                if (m >= 0 && (leaf < 0 || caller == leaf + 1) && (caller < 0 || m == caller + 1))
                        ok++;
                else if (printed++ < 5) {
                        fprintf(stderr, "step %d rip %#lx: ", i,
                                (unsigned long)s.regs[CTXPROF_REG_IP]);
                        chain_print(&c, stderr);
                }
                int st;
                cr_assert_eq(ptrace(PTRACE_SINGLESTEP, pid, 0, 0), 0);
                cr_assert_eq(waitpid(pid, &st, __WALL), pid);
                cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP);
        }
        printf("single-step: %d/%d instructions unwind to main (%d in rz_leaf)\n", ok, total,
               in_leaf);
        cr_expect_eq(ok, total);
        cr_expect_gt(in_leaf, 100);
        kill_fixture(pid);
        close(memfd);
        proc_maps_free(pm);
        dwarf_unwinder_free(u);
        symbolizer_free(sym);
        modules_free(mods);
}
