/* SPDX-License-Identifier: MIT */
/*
 * unwind_dwarf.c — libdwfl unwinding of copied stacks (see unwind_dwarf.h). Owns one Dwfl per
 * process and the per-sample state its callbacks read. Must never read the target's live
 * memory, never print, never keep a sample's buffers after dwarf_unwind returns.
 */
#include "stack/unwind_dwarf.h"
#include "stack/debuginfo_find.h"
#include "util/clock.h"
#include "util/maps_line.h"
#include "util/target_open.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NBUCKETS 256u
#define RED_ZONE 128u

struct pid_state {
        struct pid_state *next;
        struct dwarf_unwinder *u;
        pid_t pid;
        Dwfl *dwfl;
        uint64_t last_report_ns;
        uint64_t last_use;
        /* the sample being unwound */
        const uint64_t *regs;
        const unsigned char *stack;
        size_t len;
        uint64_t *ips;
        int max, n, hit_max;
        int refused_after; /* frames reported when memory_read last refused an address */
};

struct dwarf_unwinder {
        struct pid_state *buckets[NBUCKETS];
        unsigned npids;
        uint64_t tick;
        uint64_t reports;          /* module reports made (each reads the target by pid) */
        struct target_stats topen; /* module files refused (find_elf) */
};

/* find_elf has no user pointer of ours: the state being reported/unwound, set around every
 * libdwfl call (the unwinder is single-threaded by contract, this is per thread anyway). */
static __thread struct pid_state *tl_cur;

struct find_map {
        const char *name;
        uint64_t base;
        struct target_file tf;
        int found;
};

static int find_map_cb(const struct maps_line *l, void *arg)
{
        struct find_map *fm = arg;
        if (strcmp(l->path, fm->name))
                return 0;
        /* libdwfl's base is the start of the file's first mapping. */
        if (!fm->found || l->start == fm->base) {
                fm->tf = target_file_of(l); /* path: the caller's copy (l's is gone) */
                fm->found = 1;
        }
        return l->start == fm->base;
}

/* Open a module's file as the target maps it, only through util/target_open.h (the mapped
 * inode, else its path under the target's root; a regular file with the maps line's
 * dev:inode). Names that are no path ([vdso]) go to elfutils, which reads them from the
 * process's memory; a path that cannot be opened so has no CFI. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *module_name, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
        struct pid_state *st = tl_cur;
        if (!module_name || module_name[0] != '/')
                return module_name && module_name[0] == '['
                           ? dwfl_linux_proc_find_elf(mod, userdata, module_name, base, file_name,
                                                      elfp)
                           : -1;
        if (!st)
                return -1;
        char name[PATH_MAX];
        snprintf(name, sizeof(name), "%s", module_name);
        static const char del[] = " (deleted)";
        size_t nl = strlen(name);
        if (nl >= sizeof(del) - 1 && !strcmp(name + nl - (sizeof(del) - 1), del))
                name[nl - (sizeof(del) - 1)] = 0;
        struct find_map fm = {.name = name, .base = base};
        if (maps_foreach(st->pid, find_map_cb, &fm, &st->u->topen) < 0 || !fm.found)
                return -1;
        fm.tf.path = name;
        int fd = target_open(st->pid, &fm.tf, &st->u->topen);
        if (fd < 0)
                return -1;
        *elfp = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (*elfp && elf_kind(*elfp) == ELF_K_ELF) {
                *file_name = strdup(name);
                return fd; /* libdwfl owns fd and elf from here */
        }
        if (*elfp)
                elf_end(*elfp);
        *elfp = NULL;
        close(fd);
        return -1; /* corrupt file: no CFI for this module */
}

/* Separate debug files (.debug_frame) only by build id (stack/debuginfo_find.h), never by
 * a .gnu_debuglink name relative to the module's path in the daemon's own mount namespace (a
 * target-chosen FIFO there blocks it). */
static const Dwfl_Callbacks proc_cb = {
    .find_elf = find_elf,
    .find_debuginfo = debuginfo_find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
        (void)dwfl;
        struct pid_state *st = dwfl_arg;
        if (*thread_argp)
                return 0;
        *thread_argp = st;
        return st->pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
        (void)dwfl;
        (void)tid;
        *thread_argp = dwfl_arg;
        return true;
}

/* The CFI row of the leaf's pc (.eh_frame, else .debug_frame); caller frees *frame. */
static int leaf_frame(Dwfl *dwfl, uint64_t pc, Dwarf_Frame **frame)
{
        Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
        if (!mod)
                return -1;
        Dwarf_Addr bias = 0;
        Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
        if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, frame) == 0)
                return 0;
        cfi = dwfl_module_dwarf_cfi(mod, &bias);
        if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, frame) == 0)
                return 0;
        return -1;
}

/* ddprof's red-zone quirk, without the register number elfutils 0.188 does not pass:
 * compilers emit no DW_CFA_restore after the pops of an epilogue, so in a leaf stopped between
 * `pop %reg` and `ret` the CFI still says "reg saved at CFA-N", below sp, outside the copy.
 * The popped register already holds that value: find which register the CFI row saves at addr
 * and answer with its current value. */
static bool red_zone_read(Dwfl *dwfl, const struct pid_state *st, uint64_t addr, Dwarf_Word *result)
{
        Dwarf_Frame *frame = NULL;
        if (leaf_frame(dwfl, st->regs[CTXPROF_REG_IP], &frame) != 0)
                return false;
        bool ok = false;
        Dwarf_Op *ops;
        size_t nops;
        if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1)
                goto out;
        /* libdw hands a register+offset CFA out as DW_OP_bregx reg, offset */
        uint64_t reg, cfa;
        if (ops[0].atom == DW_OP_bregx) {
                reg = ops[0].number;
                cfa = ops[0].number2;
        } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
                reg = ops[0].atom - DW_OP_breg0;
                cfa = ops[0].number;
        } else {
                goto out;
        }
        if (reg >= CTXPROF_REG_IP)
                goto out;
        cfa += st->regs[reg];
        for (int r = 0; r < CTXPROF_REG_IP && !ok; r++) {
                Dwarf_Op mem[3], *rops;
                size_t rn;
                /* offset(N) comes back as the address: call_frame_cfa [plus_uconst N]
                 * (val_offset would end in DW_OP_stack_value) */
                if (dwarf_frame_register(frame, r, mem, &rops, &rn) != 0 || rn < 1 || rn > 2 ||
                    rops[0].atom != DW_OP_call_frame_cfa ||
                    (rn == 2 && rops[1].atom != DW_OP_plus_uconst))
                        continue;
                uint64_t off = rn == 2 ? rops[1].number : 0;
                if (cfa + off == addr) {
                        *result = st->regs[r];
                        ok = true;
                }
        }
out:
        free(frame);
        return ok;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
        struct pid_state *st = dwfl_arg;
        if (!st->regs)
                return false;
        uint64_t sp = st->regs[CTXPROF_REG_SP];
        if (addr >= sp && addr + sizeof(*result) > addr && addr + sizeof(*result) - sp <= st->len) {
                memcpy(result, st->stack + (addr - sp), sizeof(*result));
                return true;
        }
        /* Unwinding the leaf (only its frame has been reported) and reading below sp. */
        if (addr < sp && sp - addr <= RED_ZONE && st->n == 1 &&
            red_zone_read(dwfl, st, addr, result))
                return true;
        st->refused_after = st->n;
        return false; /* beyond the copy: not available */
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
        struct pid_state *st = thread_arg;
        Dwarf_Word r[UNWIND_NREGS];
        for (int i = 0; i < UNWIND_NREGS; i++)
                r[i] = st->regs[i];
        if (!dwfl_thread_state_registers(thread, 0, UNWIND_NREGS, r))
                return false;
        dwfl_thread_state_register_pc(thread, st->regs[CTXPROF_REG_IP]);
        return true;
}

static const Dwfl_Thread_Callbacks thread_cb = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

static int report(struct pid_state *st)
{
        st->u->reports++;
        st->last_report_ns = mono_ns();
        dwfl_report_begin(st->dwfl);
        int r = dwfl_linux_proc_report(st->dwfl, st->pid);
        if (dwfl_report_end(st->dwfl, NULL, NULL) != 0 && r == 0)
                r = EIO;
        if (r == ENOENT)
                return -ESRCH;
        return r > 0 ? -r : (r < 0 ? -EIO : 0);
}

struct dwarf_unwinder *dwarf_unwinder_new(void)
{
        return calloc(1, sizeof(struct dwarf_unwinder));
}

static void state_free(struct pid_state *st)
{
        if (st->dwfl) {
                tl_cur = st;
                dwfl_end(st->dwfl);
                tl_cur = NULL;
        }
        free(st);
}

void dwarf_unwinder_free(struct dwarf_unwinder *u)
{
        if (!u)
                return;
        for (unsigned i = 0; i < NBUCKETS; i++) {
                struct pid_state *st = u->buckets[i];
                while (st) {
                        struct pid_state *nx = st->next;
                        state_free(st);
                        st = nx;
                }
        }
        free(u);
}

static struct pid_state **slot_of(struct dwarf_unwinder *u, pid_t pid)
{
        struct pid_state **pp = &u->buckets[(unsigned)pid % NBUCKETS];
        while (*pp && (*pp)->pid != pid)
                pp = &(*pp)->next;
        return pp;
}

void dwarf_unwinder_forget(struct dwarf_unwinder *u, pid_t pid)
{
        if (!u)
                return;
        struct pid_state **pp = slot_of(u, pid);
        struct pid_state *st = *pp;
        if (!st)
                return;
        *pp = st->next;
        u->npids--;
        state_free(st);
}

static void evict_lru(struct dwarf_unwinder *u)
{
        struct pid_state *old = NULL;
        for (unsigned i = 0; i < NBUCKETS; i++)
                for (struct pid_state *st = u->buckets[i]; st; st = st->next)
                        if (!old || st->last_use < old->last_use)
                                old = st;
        if (old)
                dwarf_unwinder_forget(u, old->pid);
}

static int state_get(struct dwarf_unwinder *u, pid_t pid, struct pid_state **out)
{
        struct pid_state **pp = slot_of(u, pid);
        if (*pp) {
                *out = *pp;
                return 0;
        }
        if (u->npids >= UNWIND_MAX_PIDS)
                evict_lru(u);
        struct pid_state *st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        st->u = u;
        st->pid = pid;
        st->dwfl = dwfl_begin(&proc_cb);
        if (!st->dwfl) {
                free(st);
                return -ENOMEM;
        }
        tl_cur = st;
        int r = report(st);
        if (r == 0 && !dwfl_attach_state(st->dwfl, NULL, pid, &thread_cb, st))
                r = -EIO;
        tl_cur = NULL;
        if (r < 0) {
                state_free(st);
                return r;
        }
        pp = slot_of(u, pid); /* eviction may have changed the chain */
        st->next = *pp;
        *pp = st;
        u->npids++;
        *out = st;
        return 0;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
        struct pid_state *st = arg;
        Dwarf_Addr pc;
        if (!dwfl_frame_pc(state, &pc, NULL))
                return DWARF_CB_ABORT;
        if (st->n >= st->max) {
                st->hit_max = 1;
                return DWARF_CB_ABORT;
        }
        st->ips[st->n++] = pc;
        return DWARF_CB_OK;
}

static int has_unknown_ip(struct pid_state *st)
{
        for (int i = 0; i < st->n; i++)
                if (!dwfl_addrmodule(st->dwfl, st->ips[i] - (i > 0)))
                        return 1;
        return 0;
}

/* 0 = unwound to the outermost frame; otherwise it stopped early. libdwfl ends without an
 * error when the step from the last frame needs memory beyond the copy (a stack deeper than
 * the copy, a garbage frame pointer): a read refused after the last frame was reported is
 * what tells that stop from the outermost frame (whose CFI marks the return address
 * undefined and reads nothing). */
static int run(struct pid_state *st)
{
        int ret;

        st->n = 0;
        st->hit_max = 0;
        st->refused_after = -1;
        ret = dwfl_getthread_frames(st->dwfl, st->pid, frame_cb, st);
        if (!ret && st->n > 0 && st->refused_after == st->n)
                ret = 1;
        return ret;
}

int dwarf_unwind(struct dwarf_unwinder *u, pid_t pid, const uint64_t regs[UNWIND_NREGS],
                 const void *stack, size_t len, uint64_t *ips, int max, int *truncated)
{
        if (!u || pid <= 0 || !regs || (!stack && len) || !ips || max < 1 || !truncated)
                return -EINVAL;
        *truncated = 1;
        struct pid_state *st;
        int r = state_get(u, pid, &st);
        if (r < 0)
                return r;
        st->last_use = ++u->tick;
        st->regs = regs;
        st->stack = stack;
        st->len = len;
        st->ips = ips;
        st->max = max;
        tl_cur = st;
        int ret = run(st);
        /* Failed with an ip that no module covers: the mappings changed (dlopen, JIT, exec).
         * Any ip counts, not only the last: without a module libdwfl falls back to a frame
         * pointer step and the bad ip is the one before the garbage. */
        if (ret != 0 && !st->hit_max && has_unknown_ip(st) &&
            mono_ns() - st->last_report_ns >= UNWIND_REREPORT_NS) {
                if (report(st) == 0)
                        ret = run(st);
        }
        tl_cur = NULL;
        st->regs = NULL;
        st->stack = NULL;
        st->ips = NULL;
        int n = st->n;
        if (n == 0 && regs[CTXPROF_REG_IP]) {
                ips[0] = regs[CTXPROF_REG_IP]; /* never lose the leaf */
                n = 1;
        }
        *truncated = ret != 0;
        return n;
}

uint64_t dwarf_unwinder_reports(const struct dwarf_unwinder *u)
{
        return u->reports;
}

void dwarf_unwinder_target_stats(const struct dwarf_unwinder *u, struct target_stats *sum)
{
        if (u && sum)
                target_stats_add(sum, &u->topen);
}
