/* SPDX-License-Identifier: MIT */
/*
 * unwind_dwarf.h — CFI (.eh_frame/.debug_frame) unwinding of a copied user stack with elfutils
 * libdwfl, the perf/ddprof model: the sampler copies registers and the bytes from sp upwards;
 * this turns them into return addresses. One Dwfl per process (modules reported from
 * /proc/PID/maps, files opened only through util/target_open.h, debug files only by build id),
 * re-reported when an ip falls outside every known module (rate-limited). Never reads the live
 * process's memory: only the copy. Never prints.
 *
 * Not thread-safe: one thread (the sampler's consumer) owns a dwarf_unwinder.
 * Memory bound: at most UNWIND_MAX_PIDS processes kept (least recently used dropped).
 * Return addresses come back as they are (not minus 1): the caller marks every frame but the
 * first CTXPROF_FRAME_RETADDR and symbolize() subtracts 1 for those.
 * Red zone: elfutils 0.188's memory_read callback has no register number (ddprof patches
 * elfutils for it), so the leaf-epilogue quirk is done by looking the leaf's CFI row up: a read
 * below sp while unwinding the leaf is answered with the current value of the register that
 * row saves at that address (it was just popped from there).
 */
#ifndef CTXPROF_UNWIND_DWARF_H
#define CTXPROF_UNWIND_DWARF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctxprof/sample.h"
#include "util/target_stats.h"

/* enum ctxprof_reg order (DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, rip) */
#define UNWIND_NREGS       CTXPROF_NREGS
#define UNWIND_MAX_PIDS    1024
#define UNWIND_REREPORT_NS 50000000ull /* at most one /proc/PID/maps re-read per 50 ms */

struct dwarf_unwinder;
struct dwarf_unwinder *dwarf_unwinder_new(void);
void dwarf_unwinder_free(struct dwarf_unwinder *);
/* regs in the order above (regs[CTXPROF_REG_IP] = rip); stack = bytes copied from [sp, sp+len).
 * Writes up to max ips, leaf first; *truncated = 1 when it stopped before the outermost frame.
 * Returns the number of ips (>= 1 when rip is non-zero), or -ESRCH (no such process),
 * -EINVAL, -ENOMEM, -EIO (libdwfl could not attach to the process's modules). */
int dwarf_unwind(struct dwarf_unwinder *, pid_t pid, const uint64_t regs[UNWIND_NREGS],
                 const void *stack, size_t len, uint64_t *ips, int max, int *truncated);
void dwarf_unwinder_forget(struct dwarf_unwinder *, pid_t pid); /* process exited */
/* Adds the unwinder's refusals (module files find_elf would not open, maps lines too long)
 * to *sum. */
void dwarf_unwinder_target_stats(const struct dwarf_unwinder *, struct target_stats *sum);
/* How many times the unwinder has read a process's modules (its maps, by pid, and the files
 * they name): a caller that pins its processes checks the pin after a call that read. */
uint64_t dwarf_unwinder_reports(const struct dwarf_unwinder *);

#endif
