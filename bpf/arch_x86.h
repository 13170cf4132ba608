/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * arch_x86.h — everything the BPF sampler knows about x86-64: where the thread pointer lives,
 * how the interrupted registers are laid out (pt_regs) and how to tell user mode from kernel
 * mode, and the page size the stack copy steps by. An arm64 port writes an arch_arm64.h with
 * the same five names and changes nothing else in bpf/ (user space: enum ctxprof_reg in
 * ctxprof/sample.h, and the TLS variant in daemon/tls/).
 *
 * Included by sampler.bpf.c after vmlinux.h and the libbpf headers; never included by user
 * space.
 */
#ifndef CTXPROF_BPF_ARCH_X86_H
#define CTXPROF_BPF_ARCH_X86_H

#include "ctxprof/sample.h"

/* Stack copies read at most one page at a time: a read that crosses into an unmapped page
 * fails whole. */
#define ARCH_PAGE_SIZE 4096

/* The thread pointer of a task: TLS variant II, the TCB is at %fs. */
static __always_inline __u64 arch_thread_pointer(struct task_struct *task)
{
        return BPF_CORE_READ(task, thread.fsbase);
}

/* 1 when the perf event interrupted user mode (CPL 3 in cs). The ctx allows only 8-byte loads
 * of regs (a 2-byte cs load is rejected by the verifier). */
static __always_inline int arch_user_mode(struct bpf_perf_event_data *ctx)
{
        return (*(volatile __u64 *)&ctx->regs.cs & 3) != 0;
}

/* The interrupted user registers in enum ctxprof_reg order, from the perf event's ctx (valid
 * when arch_user_mode(ctx)). */
static __always_inline void arch_regs_from_ctx(__u64 *o, struct bpf_perf_event_data *ctx)
{
        o[CTXPROF_REG_RAX] = *(volatile __u64 *)&ctx->regs.ax;
        o[CTXPROF_REG_RDX] = *(volatile __u64 *)&ctx->regs.dx;
        o[CTXPROF_REG_RCX] = *(volatile __u64 *)&ctx->regs.cx;
        o[CTXPROF_REG_RBX] = *(volatile __u64 *)&ctx->regs.bx;
        o[CTXPROF_REG_RSI] = *(volatile __u64 *)&ctx->regs.si;
        o[CTXPROF_REG_RDI] = *(volatile __u64 *)&ctx->regs.di;
        o[CTXPROF_REG_RBP] = *(volatile __u64 *)&ctx->regs.bp;
        o[CTXPROF_REG_RSP] = *(volatile __u64 *)&ctx->regs.sp;
        o[CTXPROF_REG_R8] = *(volatile __u64 *)&ctx->regs.r8;
        o[CTXPROF_REG_R9] = *(volatile __u64 *)&ctx->regs.r9;
        o[CTXPROF_REG_R10] = *(volatile __u64 *)&ctx->regs.r10;
        o[CTXPROF_REG_R11] = *(volatile __u64 *)&ctx->regs.r11;
        o[CTXPROF_REG_R12] = *(volatile __u64 *)&ctx->regs.r12;
        o[CTXPROF_REG_R13] = *(volatile __u64 *)&ctx->regs.r13;
        o[CTXPROF_REG_R14] = *(volatile __u64 *)&ctx->regs.r14;
        o[CTXPROF_REG_R15] = *(volatile __u64 *)&ctx->regs.r15;
        o[CTXPROF_REG_RIP] = *(volatile __u64 *)&ctx->regs.ip;
}

/* The same from a copy of a task's saved user pt_regs (the perf event interrupted the
 * kernel: bpf_task_pt_regs of the current task). */
static __always_inline void arch_regs_from_ptregs(__u64 *o, const struct pt_regs *p)
{
        o[CTXPROF_REG_RAX] = p->ax;
        o[CTXPROF_REG_RDX] = p->dx;
        o[CTXPROF_REG_RCX] = p->cx;
        o[CTXPROF_REG_RBX] = p->bx;
        o[CTXPROF_REG_RSI] = p->si;
        o[CTXPROF_REG_RDI] = p->di;
        o[CTXPROF_REG_RBP] = p->bp;
        o[CTXPROF_REG_RSP] = p->sp;
        o[CTXPROF_REG_R8] = p->r8;
        o[CTXPROF_REG_R9] = p->r9;
        o[CTXPROF_REG_R10] = p->r10;
        o[CTXPROF_REG_R11] = p->r11;
        o[CTXPROF_REG_R12] = p->r12;
        o[CTXPROF_REG_R13] = p->r13;
        o[CTXPROF_REG_R14] = p->r14;
        o[CTXPROF_REG_R15] = p->r15;
        o[CTXPROF_REG_RIP] = p->ip;
}

#endif
