/* SPDX-License-Identifier: MIT */
/*
 * target_select.h — which processes the daemon samples: all, those that publish context
 * (Custom Labels v1 / ctxprof span / OTel thread context variables defined by a module it
 * maps, tls_declares_context, or an OTel process context mapping), or those matching
 * selectors (process name glob — /proc/PID/comm or the executable's base name cut to 15
 * characters —, executable path glob, cgroup v2 path prefix, container id
 * prefix; any selector matching selects). target_select_match reads /proc/PID/{comm,exe,cgroup}
 * only (the daemon's loop calls it); target_select_context, for mode context, reads
 * /proc/PID/maps and the ELF files the process maps (util/target_open.h, through the parser
 * helper, whose answer it waits for): a target job's work (service/select_jobs.h), never the
 * loop's. Neither reads the process's memory, prints, or changes the process or the BPF maps
 * (the caller adds the target).
 */
#ifndef CTXPROF_TARGET_SELECT_H
#define CTXPROF_TARGET_SELECT_H

#include <sys/types.h>

#include "service/config.h"
#include "util/target_stats.h"

struct target_select;

/* Copies the [targets] settings of c. NULL on out of memory. */
struct target_select *target_select_new(const struct daemon_config *c);
void target_select_free(struct target_select *t);
int target_select_mode(const struct target_select *t);
/* Adds what mode context's locator refused (maps lines too long, files not opened) to *sum. */
void target_select_target_stats(const struct target_select *t, struct target_stats *sum);

/* 1 = sample pid, 0 = do not, TARGET_SELECT_ASK = mode context: target_select_context
 * answers, off the loop; -ESRCH gone, other -errno. comm may be NULL (read from /proc).
 * Kernel threads never match. */
#define TARGET_SELECT_LATER 2
#define TARGET_SELECT_BUSY  3
#define TARGET_SELECT_ASK   4
int target_select_match(const struct target_select *t, pid_t pid, const char *comm);

/* Mode context: whether pid publishes context, from its ELF files and maps (may block up to
 * the parser helper's deadline: run it on a target job). 1 = it does, TARGET_SELECT_LATER =
 * nothing published yet (libraries may still be loading: ask again a little later),
 * TARGET_SELECT_BUSY = the parser helper was busy with other requests (ask again soon),
 * -ESRCH gone. st counts what the reads refused (atomically: any thread). */
int target_select_context(pid_t pid, struct target_stats *st);

/* mode selectors: the cgroup path prefixes (the kernel can test them itself, see
 * sampler_set_cgroups); *paths stays valid while t lives. Other modes: 0. */
unsigned target_select_cgroups(const struct target_select *t, const char *const **paths);

/* Exposed for tests: the container ids (runs of >= 12 hex digits) in a cgroup path that
 * start with prefix. 1 = match. */
int target_select_container_match(const char *cgroup_path, const char *prefix);

#endif
