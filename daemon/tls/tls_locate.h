/* SPDX-License-Identifier: MIT */
/*
 * tls_locate.h — finds where the thread-local context variables (custom_labels_current_set,
 * ctx_span_context_v1, and OTEP 4947's otel_thread_ctx_v1) live in another process, as a struct
 * ctxprof_tls_target the BPF sampler can follow from a thread pointer, and the user-space twin of
 * that BPF walk. x86-64 only (TLS variant II). Never prints; negative errno.
 */
#ifndef CTXPROF_TLS_LOCATE_H
#define CTXPROF_TLS_LOCATE_H

#include <stdint.h>
#include <sys/types.h>

#include "ctxprof/tls_target.h"
#include "util/target_stats.h"

/*
 * Find custom_labels_current_set, ctx_span_context_v1 and otel_thread_ctx_v1 (8-byte TLS
 * pointer) in live process pid (any module:
 * executable, DT_NEEDED library, dlopen'ed library). 0 = *out filled (a variable not found
 * has mode CTXPROF_TLS_NONE; all NONE is still 0), -EAGAIN = found in a shared object the
 * loader has not relocated yet (retry later; an executable's variables are located from
 * the file even before the loader ran), -EBUSY = the parser helper could not be asked now
 * (elf_tls.h: retry soon, nothing is wrong with the target), -ESRCH = process gone, other -errno
 * (-EPROTO: the loader's data for a variable makes no sense; -ENOTSUP: defined in a shared object
 * without any TLS relocation naming it). *out is always written; a variable that failed is
 * CTXPROF_TLS_NONE, the other one may still be usable. Files are opened only through
 * util/target_open.h; what it refuses, and maps lines too long to parse, are counted in st (may be
 * NULL). The process's memory (the loader's slots, and addresses found there) is read with
 * tls_vm_read, never through /proc/PID/mem. It may still block on a page whose file never answers:
 * run it where a deadline can abandon it (engine/target_jobs.h). A labels variable whose object
 * exports custom_labels_abi_version != 1 is NONE (not this ABI); likewise the span record with
 * ctx_span_context_abi_version != 1. out->generation and out->exec_gen are left 0: the caller owns
 * them.
 */
int tls_locate(pid_t pid, struct ctxprof_tls_target *out, struct target_stats *st);

/*
 * Whether a module of live process pid defines one of those variables (as TLS, the OTel one
 * of its size): the ELF files only, through util/target_open.h, never the process's memory,
 * whose pages the process chooses (one of a FUSE file whose server never answers would block
 * the reader), and no DWARF (ELF_TLS_NO_DWARF). It waits for the parser helper like
 * tls_locate (up to its deadline): run it off the sampling loop (the daemon's selection jobs,
 * service/select_jobs.h); tls_locate then says whether the variables are usable. -EBUSY when
 * the helper stayed busy with other requests. 1 = defined, 0 = not, -ESRCH = process gone,
 * other -errno.
 */
int tls_declares_context(pid_t pid, struct target_stats *st);

/*
 * The address of the variable for one thread, given its thread pointer, reading the target's
 * memory through /proc/PID/mem (user-space twin of what the BPF program does).
 * 0 = *addr set; -ENOENT = no storage for this thread (mode NONE, tp 0, DTV too short, block
 * not allocated yet: the thread never touched a dynamically loaded module); -EFAULT = a read
 * failed; -ESRCH = process gone.
 */
int tls_var_address(int mem_fd, const struct ctxprof_tls_target *t, const struct ctxprof_tls_var *v,
                    uint64_t tp, uint64_t *addr);

/* Exactly len bytes at addr of the process behind mem_fd: 0, -EFAULT (unmapped or short),
 * -ESRCH (address space gone). Shared by the locator and the user-space context reader. */
int tls_mem_read(int mem_fd, uint64_t addr, void *buf, size_t len);
/* The same through process_vm_readv: where the page is a file's and its read waits (a FUSE
 * server that never answers), the wait does not hold the target's mmap lock, as a read of
 * /proc/PID/mem does (which would stall every reader of its maps and every uprobe
 * (un)registration on a file it maps). 0, -EFAULT, -ESRCH, -EPERM. */
int tls_vm_read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
