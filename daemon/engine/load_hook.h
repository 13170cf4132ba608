/* SPDX-License-Identifier: MIT */
/*
 * load_hook.h — how the sampler learns that a target loaded or unloaded a library (a late
 * dlopen of the context symbols, a new unwind table): per target, a uprobe on its dynamic
 * loader's _dl_debug_state, pid-filtered so only that process traps; where the kernel offers
 * no uprobe, the host-wide tp_btf/sys_exit program as the last fallback. Both run the BPF
 * side in bpf/sampler.bpf.c (CTXPROF_EV_MAP). Never prints.
 *
 * Thread safety: driven by the sampler's thread only.
 */
#ifndef CTXPROF_LOAD_HOOK_H
#define CTXPROF_LOAD_HOOK_H

#include <stdint.h>
#include <sys/types.h>

struct bpf_program;
struct load_hook;

/* The hook in use. */
enum load_hook_kind {
        LOAD_HOOK_UPROBE = 0,    /* per-target uprobe on ld.so's _dl_debug_state */
        LOAD_HOOK_UPROBE_LOADER, /* one uprobe per loader file: every process using it traps
                                  * at its (rare) notifications; BPF drops non-targets */
        LOAD_HOOK_SYS_EXIT,      /* tp_btf/sys_exit: every syscall on the host pays */
};

struct load_hook_stats {
        int kind;            /* enum load_hook_kind */
        const char *name;    /* "uprobe", "uprobe-loader", "sys_exit" (a string literal) */
        char why[96];        /* sys_exit: why uprobes are not used ("" for uprobe) */
        uint64_t attached;   /* uprobes attached (targets, exec'ed images) */
        uint64_t active;     /* uprobes attached now */
        uint64_t no_loader;  /* targets without a dynamic loader (static executables) */
        uint64_t errors;     /* targets left without a hook (retried slowly instead) */
        uint64_t elf_cached; /* loader symbol lookups served from the cache */
        uint64_t loaders;    /* uprobe-loader: loader files hooked */
};

/*
 * Probe what the kernel offers (a uprobe on this process's own loader, attached and
 * detached) and pick the hook; with sys_exit, attach it now. CTXPROF_TEST_HOOK=sys_exit
 * forces the fallback (tests). The programs stay owned by the caller's skeleton.
 * NULL with *err = -errno when neither hook can be attached.
 */
struct load_hook *load_hook_new(struct bpf_program *uprobe, struct bpf_program *sys_exit, int *err);
/* Hook process pid (a new target, or one that exec'ed: its old probe is replaced).
 * 0 (hooked, or nothing to hook: static, or the sys_exit fallback), or -errno (counted). A
 * failure of the kernel itself (no permission, no uprobe) switches every target to the
 * sys_exit fallback. -EBUSY (not counted): the parser helper, which reads the loader's
 * symbols, was busy with another thread's request; this never waits for it: try again. */
int load_hook_attach(struct load_hook *, pid_t pid);
/*
 * Before the process gives up CAP_SYS_ADMIN, which opening a uprobe perf event needs (this
 * kernel refuses CAP_PERFMON alone): one uprobe, for every process, on each distinct loader
 * the processes running now use (at most LOAD_HOOK_MAX_LOADERS), replacing the per-target
 * ones. A target whose loader appears later (a new container image) is left to the
 * locator's slow retry. 0, or -errno (the hook is then unchanged).
 */
#define LOAD_HOOK_MAX_LOADERS 16
int load_hook_loader_wide(struct load_hook *);
/* pid is no target any more: its probe goes. */
void load_hook_detach(struct load_hook *, pid_t pid);
void load_hook_stats(const struct load_hook *, struct load_hook_stats *out);
void load_hook_free(struct load_hook *);

#endif
