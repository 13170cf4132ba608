/* SPDX-License-Identifier: MIT */
/*
 * stack_sampler.h — test helper: starts a fixture process and takes "samples" of it the way
 * the BPF program does (registers + the user stack copied page by page from sp), using
 * ptrace (PTRACE_SEIZE/INTERRUPT/GETREGS) and /proc/PID/mem. Header-only, static functions.
 * Test code only: it may fail loudly, it never decides what a test asserts.
 */
#ifndef CTXPROF_TEST_STACK_SAMPLER_H
#define CTXPROF_TEST_STACK_SAMPLER_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stack/unwind_dwarf.h"

#define SAMPLER_STACK_MAX (32 * 1024)

struct sample {
        uint64_t regs[UNWIND_NREGS];
        unsigned char stack[SAMPLER_STACK_MAX];
        size_t len;
};

static inline const char *test_build_dir(void)
{
        const char *b = getenv("TEST_BUILD");
        return b && *b ? b : "build";
}

/* Starts path (argv = {path, NULL}) with stdin and stdout as pipes; waits until it prints a
 * line (the fixtures print "ready" or their addresses) and copies that line to line.
 * Returns the pid or -1. *stdin_fd stays open (closing it ends fx_cxx). */
static inline pid_t spawn_fixture(const char *path, int *stdin_fd, char *line, size_t linesz)
{
        int in[2], out[2];
        if (pipe(in) || pipe(out))
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                close(in[0]);
                close(in[1]);
                close(out[0]);
                close(out[1]);
                execl(path, path, (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        size_t n = 0;
        char c;
        while (n + 1 < linesz && read(out[0], &c, 1) == 1 && c != '\n')
                line[n++] = c;
        line[n] = 0;
        close(out[0]);
        if (stdin_fd)
                *stdin_fd = in[1];
        else
                close(in[1]);
        return n ? pid : -1;
}

static inline void kill_fixture(pid_t pid)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, __WALL);
}

static inline int sampler_attach(pid_t pid)
{
        return ptrace(PTRACE_SEIZE, pid, 0, 0) ? -errno : 0;
}

/* Copy like bpf/stk: the rest of sp's page, then whole pages until one fails (all or
 * nothing per page), up to SAMPLER_STACK_MAX. */
static inline size_t copy_stack(int memfd, uint64_t sp, unsigned char *buf)
{
        size_t len = 0;
        uint64_t first = 4096 - (sp & 4095);
        while (len < SAMPLER_STACK_MAX) {
                size_t want = len == 0 ? first : 4096;
                if (len + want > SAMPLER_STACK_MAX)
                        want = SAMPLER_STACK_MAX - len;
                ssize_t r = pread(memfd, buf + len, want, (off_t)(sp + len));
                if (r != (ssize_t)want)
                        break;
                len += want;
        }
        return len;
}

/* Registers and stack of a stopped tracee. 0 or -errno. */
static inline int sampler_read(pid_t pid, int memfd, struct sample *s)
{
        struct user_regs_struct r;
        if (ptrace(PTRACE_GETREGS, pid, 0, &r))
                return -errno;
        uint64_t d[UNWIND_NREGS] = {
            [CTXPROF_REG_RAX] = r.rax, [CTXPROF_REG_RDX] = r.rdx, [CTXPROF_REG_RCX] = r.rcx,
            [CTXPROF_REG_RBX] = r.rbx, [CTXPROF_REG_RSI] = r.rsi, [CTXPROF_REG_RDI] = r.rdi,
            [CTXPROF_REG_RBP] = r.rbp, [CTXPROF_REG_RSP] = r.rsp, [CTXPROF_REG_R8] = r.r8,
            [CTXPROF_REG_R9] = r.r9,   [CTXPROF_REG_R10] = r.r10, [CTXPROF_REG_R11] = r.r11,
            [CTXPROF_REG_R12] = r.r12, [CTXPROF_REG_R13] = r.r13, [CTXPROF_REG_R14] = r.r14,
            [CTXPROF_REG_R15] = r.r15, [CTXPROF_REG_RIP] = r.rip};
        memcpy(s->regs, d, sizeof(d));
        s->len = copy_stack(memfd, r.rsp, s->stack);
        return 0;
}

/* Stop the running (seized) tracee; 0 once it is in a ptrace event stop, or -errno. */
static inline int sampler_stop(pid_t pid)
{
        if (ptrace(PTRACE_INTERRUPT, pid, 0, 0))
                return -errno;
        for (;;) {
                int st;
                if (waitpid(pid, &st, __WALL) < 0)
                        return -errno;
                if (!WIFSTOPPED(st))
                        return -ESRCH;
                if ((st >> 16) == PTRACE_EVENT_STOP)
                        return 0;
                /* a signal-delivery stop: deliver it and wait for our interrupt */
                if (ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st)))
                        return -errno;
        }
}

/* Stop the running (seized) tracee, take a sample, let it run again. 0 or -errno. */
static inline int sampler_take(pid_t pid, int memfd, struct sample *s)
{
        int ret = sampler_stop(pid);
        if (ret)
                return ret;
        ret = sampler_read(pid, memfd, s);
        if (ptrace(PTRACE_CONT, pid, 0, 0) && !ret)
                ret = -errno;
        return ret;
}

static inline int open_mem(pid_t pid)
{
        char fn[64];
        snprintf(fn, sizeof(fn), "/proc/%d/mem", (int)pid);
        return open(fn, O_RDONLY | O_CLOEXEC);
}

#endif

#include "stack/proc_maps.h"
#include "stack/symbolize.h"

#define CHAIN_MAX 256

/* One sample through the whole pipeline: unwind, resolve, symbolize. names[] gets every
 * entry (inline ones included) leaf first, "?" for unnamed; real[] marks entries that are
 * real (not inlined) functions. Returns the entry count, -errno on failure. */
struct chain {
        const char *names[CHAIN_MAX];
        int real[CHAIN_MAX];
        int n, nips, truncated;
        struct ctxprof_frame frames[CTXPROF_MAX_FRAMES];
};

static inline int sample_chain(struct dwarf_unwinder *u, struct proc_maps *pm,
                               struct symbolizer *sym, pid_t pid, const struct sample *s,
                               struct chain *c)
{
        uint64_t ips[CTXPROF_MAX_FRAMES];
        int n =
            dwarf_unwind(u, pid, s->regs, s->stack, s->len, ips, CTXPROF_MAX_FRAMES, &c->truncated);
        if (n < 0)
                return n;
        c->n = 0;
        c->nips = n;
        for (int i = 0; i < n; i++) {
                struct ctxprof_frame *f = &c->frames[i];
                int r = proc_maps_resolve(pm, ips[i], f);
                if (r < 0)
                        return r;
                if (i > 0)
                        f->flags |= CTXPROF_FRAME_RETADDR;
                struct sym_frame sf[SYM_MAX_INLINE];
                int k = symbolize(sym, f, sf, SYM_MAX_INLINE);
                if (k < 1)
                        return k < 0 ? k : -EIO;
                for (int j = 0; j < k && c->n < CHAIN_MAX; j++) {
                        c->names[c->n] = sf[j].function ? sf[j].function : "?";
                        c->real[c->n] = !sf[j].inlined;
                        c->n++;
                }
        }
        return c->n;
}

static inline void chain_print(const struct chain *c, FILE *f)
{
        for (int i = 0; i < c->n; i++)
                fprintf(f, "%s%s%s", i ? " <- " : "", c->names[i], c->real[i] ? "" : "(i)");
        fprintf(f, "%s\n", c->truncated ? " [truncated]" : "");
}

static inline int chain_find(const struct chain *c, const char *name, int from)
{
        for (int i = from; i < c->n; i++)
                if (!strcmp(c->names[i], name))
                        return i;
        return -1;
}
