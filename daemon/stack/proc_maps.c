/* SPDX-License-Identifier: MIT */
/*
 * proc_maps.c — reads /proc/PID/maps (util/maps_line.h), registers mapped code files in the
 * modules registry and resolves ips to (module, file offset) by binary search. Owns one
 * process's sorted mapping table. Must never print, never read process memory, never block
 * on a dead pid, never open a mapped file but through util/target_open.h, never open a perf
 * map but through perf_map_open (util/target_named_open.h), never parse one (the symbolizer
 * does, off the sampling path).
 */
#include "stack/proc_maps.h"
#include "stack/perf_map.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/maps_line.h"
#include "util/target_open.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define MAPS_FIRST_CAP 32 /* executable mappings at first growth */

struct pm_map {
        uint64_t start, end, pgoff;
        dev_t dev;
        ino_t ino;
        uint32_t module_id; /* UNKNOWN for anonymous executable regions */
        int anon;           /* anonymous (no file, or [anon:NAME]): a JIT's code */
        char *path;
};

struct proc_maps {
        struct modules *mods;
        pid_t pid;
        struct pm_map *v;
        size_t n;
        uint64_t last_read_ns;
        uint32_t jit_id;       /* its perf map's module (a reference held), else UNKNOWN */
        uint64_t jit_tried_ns; /* when its perf map was last looked for */
        struct proc_maps_stats st;
};

struct refresh_ctx {
        struct proc_maps *pm;
        struct pm_map *v;
        size_t n, cap;
        int err;
};

/* id with one more reference (the new table's entry holds it). */
static uint32_t held(struct proc_maps *pm, uint32_t id)
{
        if (id != CTXPROF_MODULE_UNKNOWN)
                modules_ref(pm->mods, id);
        return id;
}

/* A module id for the file of mapping l, with a reference the table entry holds: reuse what
 * the previous table knew about the same mapping, else open the file and register it (at
 * most PROC_MAPS_MAX_MODULES mappings of one process, then UNKNOWN, counted). */
static uint32_t module_for(struct proc_maps *pm, const struct refresh_ctx *rc,
                           const struct maps_line *l)
{
        for (size_t i = 0; i < pm->n; i++) {
                const struct pm_map *o = &pm->v[i];
                if (o->start == l->start && o->end == l->end && o->pgoff == l->pgoff &&
                    o->dev == l->dev && o->ino == l->ino && !strcmp(o->path, l->path))
                        return held(pm, o->module_id);
        }
        for (size_t i = 0; i < rc->n; i++) /* same file mapped twice in this pass */
                if (rc->v[i].dev == l->dev && rc->v[i].ino == l->ino &&
                    !strcmp(rc->v[i].path, l->path) && l->ino)
                        return held(pm, rc->v[i].module_id);
        if (rc->n >= PROC_MAPS_MAX_MODULES) {
                modules_count_target_full(pm->mods);
                return CTXPROF_MODULE_UNKNOWN;
        }

        struct module_key key = {.dev = l->dev,
                                 .ino = l->ino,
                                 .path = l->path,
                                 .pid = pm->pid,
                                 .map_start = l->start,
                                 .map_end = l->end};
        unsigned char bid[MODULES_BUILD_ID_MAX];
        int fd = -1;
        if (l->path[0] == '/') {
                /* exactly the mapped file, or nothing (util/target_open.h) */
                struct target_file tf = target_file_of(l);
                fd = target_open(pm->pid, &tf, modules_target_stats(pm->mods));
                if (fd >= 0) {
                        int r = modules_read_build_id(fd, bid, sizeof(bid));
                        if (r > 0) {
                                key.build_id = bid;
                                key.build_id_len = (size_t)r;
                        }
                }
        }
        uint32_t id = CTXPROF_MODULE_UNKNOWN;
        if (modules_intern(pm->mods, &key, fd, &id) < 0)
                id = CTXPROF_MODULE_UNKNOWN;
        if (fd >= 0)
                close(fd);
        return id;
}

static int refresh_cb(const struct maps_line *l, void *arg)
{
        struct refresh_ctx *rc = arg;
        if (l->perms[2] != 'x')
                return 0;
        if (!strcmp(l->path, "[vsyscall]"))
                return 0; /* fixed legacy page, no file */
        int err = grow_array((void **)&rc->v, &rc->cap, sizeof(*rc->v), rc->n + 1, MAPS_FIRST_CAP);
        if (err)
                return err;
        struct pm_map *m = &rc->v[rc->n];
        m->start = l->start;
        m->end = l->end;
        m->pgoff = l->pgoff;
        m->dev = l->dev;
        m->ino = l->ino;
        m->path = strdup(l->path);
        if (!m->path)
                return -ENOMEM;
        /* Anonymous executable memory (JIT) has no file: its ips stay raw addresses, named
         * by the process's perf map if it writes one (proc_maps_resolve). */
        m->anon = !l->path[0] || !strncmp(l->path, "[anon:", 6);
        m->module_id = l->path[0] && !m->anon ? module_for(rc->pm, rc, l) : CTXPROF_MODULE_UNKNOWN;
        rc->n++;
        return 0;
}

/* Free a table and drop the references its entries hold. */
static void free_table(struct modules *mods, struct pm_map *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(v[i].path);
                if (v[i].module_id != CTXPROF_MODULE_UNKNOWN)
                        modules_unref(mods, v[i].module_id);
        }
        free(v);
}

static int cmp_map(const void *a, const void *b)
{
        const struct pm_map *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static int refresh(struct proc_maps *pm)
{
        struct refresh_ctx rc = {.pm = pm};
        pm->last_read_ns = mono_ns();
        int r = maps_foreach(pm->pid, refresh_cb, &rc, modules_target_stats(pm->mods));
        if (r < 0) {
                free_table(pm->mods, rc.v, rc.n);
                return r;
        }
        if (rc.n) /* none executable (a process mid-exec, a zombie): rc.v is NULL, and
                   * qsort's pointer must be valid even for 0 elements */
                qsort(rc.v, rc.n, sizeof(*rc.v), cmp_map);
        free_table(pm->mods, pm->v, pm->n);
        pm->v = rc.v;
        pm->n = rc.n;
        return 0;
}

int proc_maps_open(struct modules *mods, pid_t pid, struct proc_maps **out)
{
        if (!mods || pid <= 0 || !out)
                return -EINVAL;
        struct proc_maps *pm = calloc(1, sizeof(*pm));
        if (!pm)
                return -ENOMEM;
        pm->mods = mods;
        pm->pid = pid;
        pm->jit_id = CTXPROF_MODULE_UNKNOWN;
        int r = refresh(pm);
        if (r < 0) {
                free(pm);
                return r;
        }
        *out = pm;
        return 0;
}

static const struct pm_map *lookup(const struct proc_maps *pm, uint64_t ip)
{
        size_t lo = 0, hi = pm->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (pm->v[mid].end <= ip)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < pm->n && pm->v[lo].start <= ip ? &pm->v[lo] : NULL;
}

/* The module of pid's perf map (perf_map.h), registered once found: looked for at most every
 * PROC_MAPS_PERF_MAP_RETRY_NS while samples land in anonymous code and none is known. Only
 * the open happens here (a few syscalls on the consumer thread); the symbolizer reads it. */
static uint32_t jit_module(struct proc_maps *pm)
{
        if (pm->jit_id != CTXPROF_MODULE_UNKNOWN)
                return pm->jit_id;
        uint64_t now = mono_ns();
        if (pm->jit_tried_ns && now - pm->jit_tried_ns < PROC_MAPS_PERF_MAP_RETRY_NS)
                return CTXPROF_MODULE_UNKNOWN;
        pm->jit_tried_ns = now;
        int fd = perf_map_open(pm->pid, modules_target_stats(pm->mods));
        if (fd < 0)
                return CTXPROF_MODULE_UNKNOWN;
        struct stat sb;
        uint32_t id = CTXPROF_MODULE_UNKNOWN;
        /* keyed by the file (dev:inode), read later only through the kept descriptor (pid 0:
         * never reopened through a mapping) */
        struct module_key key = {.path = PERF_MAP_MODULE};
        if (!fstat(fd, &sb)) {
                key.dev = sb.st_dev;
                key.ino = sb.st_ino;
                if (modules_intern(pm->mods, &key, fd, &id) < 0)
                        id = CTXPROF_MODULE_UNKNOWN;
        }
        close(fd);
        pm->jit_id = id;
        return id;
}

int proc_maps_resolve(struct proc_maps *pm, uint64_t ip, struct ctxprof_frame *out)
{
        if (!pm || !out)
                return -EINVAL;
        const struct pm_map *m = lookup(pm, ip);
        if (!m && mono_ns() - pm->last_read_ns >= PROC_MAPS_REFRESH_NS) {
                if (refresh(pm) == 0) {
                        pm->st.refreshes++;
                        m = lookup(pm, ip);
                }
        }
        out->flags = 0;
        if (m && m->anon) {
                out->module_id = jit_module(pm);
                out->offset = ip;
                if (out->module_id == CTXPROF_MODULE_UNKNOWN)
                        pm->st.misses++;
                return 0;
        }
        if (!m || m->module_id == CTXPROF_MODULE_UNKNOWN) {
                pm->st.misses++;
                out->module_id = CTXPROF_MODULE_UNKNOWN;
                out->offset = ip;
                return 0;
        }
        out->module_id = m->module_id;
        out->offset = ip - m->start + m->pgoff;
        return 0;
}

void proc_maps_stats(const struct proc_maps *pm, struct proc_maps_stats *out)
{
        if (pm && out)
                *out = pm->st;
}

int proc_maps_refresh(struct proc_maps *pm)
{
        return pm ? refresh(pm) : -EINVAL;
}

int proc_maps_foreach(const struct proc_maps *pm, int (*cb)(const struct proc_maps_entry *, void *),
                      void *arg)
{
        if (!pm || !cb)
                return -EINVAL;
        for (size_t i = 0; i < pm->n; i++) {
                struct proc_maps_entry e = {pm->v[i].start, pm->v[i].end, pm->v[i].pgoff,
                                            pm->v[i].module_id};
                int r = cb(&e, arg);
                if (r)
                        return r;
        }
        return 0;
}

void proc_maps_free(struct proc_maps *pm)
{
        if (!pm)
                return;
        free_table(pm->mods, pm->v, pm->n);
        if (pm->jit_id != CTXPROF_MODULE_UNKNOWN)
                modules_unref(pm->mods, pm->jit_id);
        free(pm);
}
