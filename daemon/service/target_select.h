/* SPDX-License-Identifier: MIT */
/*
 * target_select.h — which processes the daemon samples: all, those that publish context
 * (Custom Labels v1 / ctxprof span / OTel thread context variables defined by a module it
 * maps, tls_declares_context, or an OTel process context mapping), or those matching
 * selectors (process name glob — /proc/PID/comm or the executable's base name cut to 15
 * characters —, executable path glob, cgroup v2 path prefix, container id
 * prefix; any selector matching selects). Reads /proc/PID/{comm,exe,cgroup,maps} and the ELF
 * files the process maps (util/target_open.h), never its memory (the daemon's loop calls this);
 * never prints and never changes the process or the BPF maps (the caller adds the target).
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

/* 1 = sample pid, 0 = do not, TARGET_SELECT_LATER = mode context and nothing published yet
 * (libraries may still be loading: ask again a little later), TARGET_SELECT_BUSY = mode
 * context and the parser helper was busy with another thread's request (this runs on the
 * sampling loop, which never waits for it: ask again soon), -ESRCH gone, other -errno.
 * comm may be NULL (read from /proc). Kernel threads never match. */
#define TARGET_SELECT_LATER 2
#define TARGET_SELECT_BUSY  3
int target_select_match(const struct target_select *t, pid_t pid, const char *comm);

/* mode selectors: the cgroup path prefixes (the kernel can test them itself, see
 * sampler_set_cgroups); *paths stays valid while t lives. Other modes: 0. */
unsigned target_select_cgroups(const struct target_select *t, const char *const **paths);

/* Exposed for tests: the container ids (runs of >= 12 hex digits) in a cgroup path that
 * start with prefix. 1 = match. */
int target_select_container_match(const char *cgroup_path, const char *prefix);

#endif
