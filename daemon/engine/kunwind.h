/* SPDX-License-Identifier: MIT */
/*
 * kunwind.h — the user-space half of in-kernel .eh_frame unwinding: keeps the BPF maps
 * `ku_rows` (every module's compact CFI rows, ctxprof/cfi.h) and `ku_procs` (each target's
 * executable mappings with the slice of rows that covers them) current. A module's table is
 * built (stack/cfi_table.c) the first time a target maps it, once per module id (modules.c
 * gives one id per build id, so a library shared by many processes is converted and loaded
 * once), and its rows are released when no target maps it any more. Never prints.
 *
 * Tables are built on target jobs (engine/target_jobs.h) once kunwind_use_jobs named the pool:
 * the loop only opens the module (util/target_open.h: never a FIFO or a FUSE file) and loads
 * the rows; a crafted .eh_frame costs a worker its deadline, never the sampling loop its
 * samples. A list written while a table of it is being built says so (kunwind_sync returns 1)
 * and is to be written again once kunwind_generation moved (the sampler does at once): its
 * process's samples in the new module meanwhile take frame-pointer steps (libc's table takes
 * ~10 ms to build).
 *
 * Memory bound: the row array has a fixed capacity (chosen before the BPF load); a table that
 * does not fit is not loaded (its frames take frame-pointer steps) and counted. User space
 * keeps no copy of the rows.
 *
 * Not thread-safe: the sampler's consumer thread owns a struct kunwind.
 */
#ifndef CTXPROF_KUNWIND_H
#define CTXPROF_KUNWIND_H

#include <stdint.h>
#include <sys/types.h>

#include "engine/target_jobs.h"
#include "stack/modules.h"
#include "stack/proc_maps.h"

struct kunwind_stats {
        uint64_t tables;                  /* tables loaded now */
        uint64_t rows, row_cap;           /* rows used now / capacity of the BPF array */
        uint64_t bytes;                   /* rows * row size: kernel memory the tables use */
        uint64_t tables_peak, bytes_peak; /* the most at any time */
        uint64_t builds;                  /* tables built (cfi_table_build calls that succeeded) */
        uint64_t build_errors;    /* modules without a table: no .eh_frame_hdr, corrupt CFI */
        uint64_t full;            /* tables that did not fit in the row array */
        uint64_t build_deferred;  /* builds put off: the parser helper busy, or it failed on
                                   * the file (asked again, KUNWIND_HELPER_FAILURES_MAX times) */
        uint64_t build_jobs;      /* builds run as target jobs */
        uint64_t build_abandoned; /* ... past KUNWIND_JOB_DEADLINE_NS (put off as failures) */
        uint64_t build_ns;        /* total time spent building tables */
        uint64_t unsup_rows;      /* loaded rows BPF cannot express (frame-pointer steps) */
        uint64_t syncs;           /* mapping lists written to `ku_procs` */
        uint64_t procs;           /* processes with a mapping list now */
};

/* A table the parser helper could not build now (cfi_table_build: -EBUSY) is asked for again
 * KUNWIND_RETRY_NS later, at the next sync of a process that maps it; one the helper failed
 * on (-EPROTO: stalled, died) after KUNWIND_HELPER_RETRY_NS, then twice that, and never after
 * the KUNWIND_HELPER_FAILURES_MAX-th failure (frame-pointer steps for that module). */
#define KUNWIND_RETRY_NS            1000000000ull
#define KUNWIND_HELPER_RETRY_NS     10000000000ull
#define KUNWIND_HELPER_FAILURES_MAX 3
/* A build job's deadline: past the parser helper's worst case (its lock wait, its 2 s request
 * deadline and up to 2.5 s for a helper of another uid to end itself). */
#define KUNWIND_JOB_DEADLINE_NS 5000000000ull
/* Builds submitted and not handed back (abandoned ones included): each holds its module's
 * descriptor, so a user mapping thousands of new modules at once gets the rest put off
 * (KUNWIND_RETRY_NS), not thousands of descriptors and queued jobs. */
#define KUNWIND_BUILDS_MAX 16

struct kunwind;

/* rows_fd/procs_fd: the loaded BPF maps (not owned); row_cap: entries of `ku_rows`. */
struct kunwind *kunwind_new(struct modules *mods, int rows_fd, int procs_fd, uint32_t row_cap);
void kunwind_free(struct kunwind *);
/* Write pid's mapping list from pm (the caller refreshed it), building and loading the tables
 * of modules seen for the first time (as jobs of owner, the process's real uid, when a pool is
 * named). 0; 1 when a table of the list is being built or was put off (sync again once
 * kunwind_generation moved, or after KUNWIND_RETRY_NS); or -errno (-ENOMEM; a BPF map update
 * failure). */
int kunwind_sync(struct kunwind *, pid_t pid, uint32_t owner, const struct proc_maps *pm);
/* pid stopped being a target (exit, exec away): its list is dropped, and tables no target
 * maps any more are released. */
void kunwind_forget(struct kunwind *, pid_t pid);
void kunwind_get_stats(const struct kunwind *, struct kunwind_stats *out);
/* Build tables on jobs of this pool from now on (not owned; NULL: in the caller). Every job
 * end the pool hands back must then reach kunwind_job_done first. */
void kunwind_use_jobs(struct kunwind *, struct target_jobs *jobs);
/* A job the pool handed back (target_job_done's arguments): 1 if it was a build of ours (its
 * rows are loaded, or the table put off), 0 if not ours. */
int kunwind_job_done(struct kunwind *, uint64_t id, enum target_job_end end, void *arg);
/* Moves each time a table is loaded. */
uint64_t kunwind_generation(const struct kunwind *);

#endif
