/* SPDX-License-Identifier: MIT */
/*
 * modules.h — process-independent registry of the files that hold code (executables, shared
 * libraries, [vdso]). One id per distinct file: files with a GNU build id are the same module
 * wherever and by whichever process they are mapped; files without one are keyed by
 * dev:inode + path. Ids start at CTXPROF_MODULE_FIRST and are never reused or removed.
 * A process's perf map (stack/perf_map.h) is registered as a module too, path PERF_MAP_MODULE
 * ("[perf-map]"), keyed by the map file's dev:inode, pid 0 (read only through its kept
 * descriptor). Never prints, never reads process memory; proc_maps.c feeds it, symbolize.c
 * reads it.
 *
 * Thread safety: every function may be called from any thread concurrently.
 * Lifetime: a module is referenced by the proc_maps table entries that map it (modules_intern
 * takes a reference, modules_ref/modules_unref add and drop one). When the last goes it is
 * dead but kept, id, path and descriptor, because frames sampled before still name it in
 * chunks not written yet; modules_reap(before) retires the modules dead since before that
 * time (the daemon passes the start of the oldest batch no JFR writer has finished): the id
 * goes back to a free list and is reused, and modules_generation changes so that caches
 * keyed by id (symbolize.c) drop what they knew of ids whose modules_serial changed. Nobody reaping
 * (record) keeps every module. Memory bound: at most MODULES_MAX entries alive or dead (then
 * registering fails with -ENOSPC, counted, and the caller uses CTXPROF_MODULE_UNKNOWN; proc_maps.c
 * also bounds what one process registers); at most MODULES_MAX_FDS open file descriptors (files
 * registered after that are reopened through a process that maps them, see modules_open;
 * never by path).
 * The files are the targets' own, read (and mapped, by elfutils) while the target may change
 * them: modules_new installs the process-wide SIGBUS guard (sigbus_guard.h) so a file
 * truncated under a reader becomes a corrupt module, never a crash.
 */
#ifndef CTXPROF_MODULES_H
#define CTXPROF_MODULES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

#define MODULES_MAX          65536
#define MODULES_MAX_FDS      512
#define MODULES_BUILD_ID_MAX 64 /* bytes; GNU build ids are 20 (sha1) or 16 (md5/uuid) */

struct modules;

struct module_info {
        const char *path;         /* path in the target's mount namespace, as in its maps */
        const char *build_id_hex; /* lowercase hex, "" if the file has none */
};

/* NULL on allocation failure (or when the SIGBUS guard cannot be installed). */
struct modules *modules_new(void);
void modules_free(struct modules *);
/* Strings in *out stay valid until the module is reaped (modules_free at the latest).
 * -ENOENT for an unknown or retired id. */
int modules_info(struct modules *, uint32_t module_id, struct module_info *out);

/* What proc_maps.c knows about a mapped file when it registers it. */
struct module_key {
        const unsigned char *build_id; /* NULL/0 if none */
        size_t build_id_len;
        dev_t dev;
        ino_t ino;
        const char *path; /* as shown in /proc/PID/maps, without " (deleted)" */
        /* the mapping it was seen in (pid 0: none): modules_open reopens through it */
        pid_t pid;
        uint64_t map_start, map_end;
};

/* Find or add the module for key; *id receives its id, with a reference the caller drops
 * with modules_unref. fd (may be -1) is an open descriptor of the file; the registry dup()s
 * it when it keeps one, the caller still owns fd.
 * -ENOSPC when MODULES_MAX is reached, -ENOMEM, -EINVAL. */
int modules_intern(struct modules *, const struct module_key *key, int fd, uint32_t *id);
/* The module of a file the registry keeps open, without opening or reading it: 1 and *id
 * (with a reference, as modules_intern) when key's device and inode are those of a kept
 * file whose size, modification and change times have not changed since; 0 otherwise (the
 * caller opens the file and interns it). */
int modules_ref_file(struct modules *, const struct module_key *key, uint32_t *id);

/* A new read-only descriptor of the module's file for symbolization (caller closes it), or
 * -errno: -ENOENT unknown id or file no longer reachable, -ESTALE the mapping now holds another
 * file (or build id). The registry's kept descriptor if it has one (then it works after the
 * process that mapped the file exited), else the file is reopened only through the mapping it
 * was last seen in (util/target_open.h), never by path. */
int modules_open(struct modules *, uint32_t module_id);

/* One more reference on a module / one less (a proc_maps table entry pointing at it). */
void modules_ref(struct modules *, uint32_t module_id);
void modules_unref(struct modules *, uint32_t module_id);

/* Retire the modules without references since before before_ns (CLOCK_MONOTONIC): descriptor
 * closed, id free for reuse. Call only with a time before which every frame naming them has
 * been written. Returns how many were retired. */
unsigned modules_reap(struct modules *, uint64_t before_ns);
/* Changes whenever an id was retired (and may name another file from now on). */
uint64_t modules_generation(struct modules *);
/* The module behind id now, unique over the registry's life (0: no such id): a cache keyed
 * by id compares it to tell a reused id from the module it knew. */
uint64_t modules_serial(struct modules *, uint32_t module_id);

struct modules_stats {
        uint64_t live;        /* modules alive or dead (not yet reaped): at most MODULES_MAX */
        uint64_t dead;        /* of those, no longer mapped by any process */
        uint64_t retired;     /* modules reaped (ids freed) */
        uint64_t full;        /* registrations refused: MODULES_MAX reached */
        uint64_t target_full; /* refused: one process over PROC_MAPS_MAX_MODULES */
        uint64_t reused;      /* registrations by modules_ref_file: no open, no ELF read */
};
void modules_get_stats(struct modules *, struct modules_stats *out);
/* proc_maps.c: a process registered more than its bound (counted here). */
void modules_count_target_full(struct modules *);

/* The registry's refusal counters (files its callers would not open, maps lines too long):
 * proc_maps.c counts into them. Valid until modules_free. */
struct target_stats *modules_target_stats(struct modules *);

/* The time its callers may spend reading /proc/PID/maps (stack/maps_budget.h): proc_maps.c
 * asks it before every read. Valid until modules_free. */
struct maps_budget;
struct maps_budget *modules_maps_budget(struct modules *);

/* Read the NT_GNU_BUILD_ID note of the ELF file open at fd into buf. Returns its length,
 * 0 when the file has no build id, -errno (-EINVAL not an ELF file). */
int modules_read_build_id(int fd, unsigned char *buf, size_t bufsz);

#endif
