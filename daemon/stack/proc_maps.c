/* SPDX-License-Identifier: MIT */
/*
 * proc_maps.c — reads /proc/PID/maps (util/maps_line.h), registers mapped code files in the
 * modules registry and resolves ips to (module, file offset) by binary search. Owns one
 * process's sorted mapping table. Must never print, never read process memory, never block
 * on a dead pid, never open a mapped file but through util/target_open.h, never open a perf
 * map (the caller looks for it in a target job and hands it over: proc_maps_set_perf_map),
 * never parse one (the symbolizer does, off the sampling path).
 */
#include "stack/proc_maps.h"
#include "stack/maps_budget.h"
#include "stack/perf_map.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/maps_line.h"
#include "util/proc_pin.h"
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
        int deleted;        /* the maps line said " (deleted)" */
        char *path;
};

struct proc_maps {
        struct modules *mods;
        pid_t pid;
        struct proc_pin pin; /* the process, pinned: every read of it is checked to be its */
        struct pm_map *v;
        size_t n;
        uint64_t last_read_ns;
        uint64_t last_cost_ns; /* what that read took (wall time, on the caller's thread) */
        uint32_t jit_id;       /* its perf map's module (a reference held), else UNKNOWN */
        uint64_t jit_tried_ns; /* when its perf map was last looked for */
        int jit_wanted;        /* a sample landed in anonymous code: look for its perf map */
        struct proc_maps_stats st;
};

struct refresh_ctx {
        struct proc_maps *pm;
        int procdir; /* its pinned /proc/PID (util/proc_pin.h) */
        struct pm_map *v;
        size_t n, cap;
};

/* id with one more reference (the new table's entry holds it). */
static uint32_t held(struct proc_maps *pm, uint32_t id)
{
        if (id != CTXPROF_MODULE_UNKNOWN)
                modules_ref(pm->mods, id);
        return id;
}

static const struct pm_map *lookup(const struct pm_map *v, size_t n, uint64_t ip)
{
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (v[mid].end <= ip)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && v[lo].start <= ip ? &v[lo] : NULL;
}

/* Whether the previous table had exactly the same mapping (a binary search: the table is
 * sorted by start); then *id is its module (UNKNOWN too: a file refused is not opened again
 * while it stays mapped), with a reference the new entry holds. */
static int module_kept(struct proc_maps *pm, const struct pm_map *m, uint32_t *id)
{
        const struct pm_map *o = lookup(pm->v, pm->n, m->start);
        if (!o || o->start != m->start || o->end != m->end || o->pgoff != m->pgoff ||
            o->dev != m->dev || o->ino != m->ino || strcmp(o->path, m->path))
                return 0;
        *id = held(pm, o->module_id);
        return 1;
}

/* Open the file of mapping m (util/target_open.h: exactly the mapped file, or nothing), read
 * its build id and register it: its id with a reference, or UNKNOWN. */
static uint32_t module_register(struct proc_maps *pm, int procdir, const struct pm_map *m)
{
        struct module_key key = {.dev = m->dev,
                                 .ino = m->ino,
                                 .path = m->path,
                                 .pid = pm->pid,
                                 .map_start = m->start,
                                 .map_end = m->end};
        unsigned char bid[MODULES_BUILD_ID_MAX];
        uint32_t id = CTXPROF_MODULE_UNKNOWN;
        int fd = -1;
        if (m->path[0] == '/') {
                if (modules_ref_file(pm->mods, &key, &id))
                        return id; /* a file kept open already: processes share libraries */
                struct target_file tf = {.start = m->start,
                                         .end = m->end,
                                         .dev = m->dev,
                                         .ino = m->ino,
                                         .path = m->path,
                                         .deleted = m->deleted};
                fd = target_open_at(procdir, &tf, modules_target_stats(pm->mods));
                if (fd >= 0) {
                        int r = modules_read_build_id(fd, bid, sizeof(bid));
                        if (r > 0) {
                                key.build_id = bid;
                                key.build_id_len = (size_t)r;
                        }
                }
        }
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
        m->deleted = l->deleted;
        m->path = strdup(l->path);
        if (!m->path)
                return -ENOMEM;
        /* Anonymous executable memory (JIT) has no file: its ips stay raw addresses, named
         * by the process's perf map if it writes one (proc_maps_resolve). */
        m->anon = !l->path[0] || !strncmp(l->path, "[anon:", 6);
        m->module_id = CTXPROF_MODULE_UNKNOWN; /* modules_assign */
        rc->n++;
        return 0;
}

/* Order of the mappings the previous table did not know: by file, so that one file mapped
 * many times is opened and registered once per read. */
static int cmp_file(const void *a, const void *b, void *arg)
{
        const struct pm_map *v = arg;
        const struct pm_map *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        if (x->ino != y->ino)
                return x->ino < y->ino ? -1 : 1;
        int c = strcmp(x->path, y->path);
        if (c)
                return c;
        return *(const size_t *)a < *(const size_t *)b ? -1 : 1; /* maps order in a file */
}

static int same_file(const struct pm_map *x, const struct pm_map *y)
{
        return x->dev == y->dev && x->ino == y->ino && !strcmp(x->path, y->path);
}

/* Module ids for the mappings of a read, in O(n log n) whatever a target maps: the previous
 * table's id for an unchanged mapping; else one registration per file (with an inode), at
 * most PROC_MAPS_MAX_MODULES per read (the rest UNKNOWN, counted). */
static int modules_assign(struct proc_maps *pm, int procdir, struct pm_map *v, size_t n)
{
        size_t *fresh = NULL, nf = 0, registered = 0;
        if (n && !(fresh = malloc(n * sizeof(*fresh))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (!v[i].path[0] || v[i].anon)
                        continue;
                if (!module_kept(pm, &v[i], &v[i].module_id))
                        fresh[nf++] = i;
                else if (v[i].module_id != CTXPROF_MODULE_UNKNOWN)
                        registered++;
        }
        if (nf)
                qsort_r(fresh, nf, sizeof(*fresh), cmp_file, v);
        for (size_t i = 0; i < nf; i++) {
                struct pm_map *m = &v[fresh[i]];
                if (i && m->ino && same_file(m, &v[fresh[i - 1]])) {
                        m->module_id = held(pm, v[fresh[i - 1]].module_id);
                        continue;
                }
                if (registered >= PROC_MAPS_MAX_MODULES) {
                        modules_count_target_full(pm->mods);
                        continue;
                }
                m->module_id = module_register(pm, procdir, m);
                registered++;
        }
        free(fresh);
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

/* May a read of pm's maps start now? Its own share first: a process whose last read was not
 * cheap reads at most every PROC_MAPS_COST_RATIO times what that read took; then the
 * registry's budget. A read put off is counted. */
static int read_allowed(struct modules *mods, const struct proc_maps *pm, uint64_t now)
{
        if (pm && pm->last_cost_ns > (uint64_t)MAPS_BUDGET_CHEAP_NS &&
            now - pm->last_read_ns < pm->last_cost_ns * PROC_MAPS_COST_RATIO)
                goto deferred;
        if (maps_budget_allow(modules_maps_budget(mods), now, pm ? pm->last_cost_ns : 0))
                return 1;
deferred:
        target_stats_count(TARGET_STATS_FIELD(modules_target_stats(mods), maps_deferred));
        return 0;
}

static int cmp_map(const void *a, const void *b)
{
        const struct pm_map *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* Read /proc/PID/maps into a new table (its time charged to the loop's maps budget) and
 * swap it in; the old one stays on failure. */
static int refresh(struct proc_maps *pm)
{
        struct refresh_ctx rc = {.pm = pm};
        uint64_t t0 = mono_ns();
        pm->last_read_ns = t0;
        struct target_stats *st = modules_target_stats(pm->mods);
        int r = rc.procdir = proc_pin_dir(&pm->pin, st);
        if (r >= 0)
                r = maps_foreach_at(rc.procdir, refresh_cb, &rc, st);
        if (r >= 0)
                r = modules_assign(pm, rc.procdir, rc.v, rc.n);
        if (rc.procdir >= 0)
                close(rc.procdir);
        pm->last_cost_ns = mono_ns() - t0;
        maps_budget_charge(modules_maps_budget(pm->mods), pm->last_read_ns, pm->last_cost_ns);
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

/* A table for the process pin pins (pm owns the pin from here on, also on failure). */
static int open_pinned(struct modules *mods, struct proc_pin *pin, struct proc_maps **out)
{
        struct proc_maps *pm = calloc(1, sizeof(*pm));
        if (!pm) {
                proc_pin_close(pin);
                return -ENOMEM;
        }
        pm->mods = mods;
        pm->pid = pin->pid;
        pm->pin = *pin;
        pm->jit_id = CTXPROF_MODULE_UNKNOWN;
        int r = read_allowed(mods, NULL, mono_ns()) ? refresh(pm) : -EAGAIN;
        if (r < 0) {
                proc_pin_close(&pm->pin);
                free(pm);
                return r;
        }
        *out = pm;
        return 0;
}

int proc_maps_open(struct modules *mods, pid_t pid, struct proc_maps **out)
{
        if (!mods || pid <= 0 || !out)
                return -EINVAL;
        struct proc_pin pin;
        int r = proc_pin_open(&pin, pid);
        return r ? r : open_pinned(mods, &pin, out);
}

int proc_maps_open_pinned(struct modules *mods, const struct proc_pin *pin, struct proc_maps **out)
{
        if (!mods || !pin || !out)
                return -EINVAL;
        struct proc_pin own;
        int r = proc_pin_dup(&own, pin);
        return r ? r : open_pinned(mods, &own, out);
}

/* The module of pid's perf map (perf_map.h) once found, else UNKNOWN; samples landing in
 * anonymous code while none is known ask for it (jit_wanted) at most every
 * PROC_MAPS_PERF_MAP_RETRY_NS. Nothing is opened here: a perf map is a path the target
 * names (its /tmp may be a FUSE mount whose lookup never ends), so the caller looks for it
 * off the sampling loop (perf_map_find, in a target job) and hands it to
 * proc_maps_set_perf_map. */
static uint32_t jit_module(struct proc_maps *pm)
{
        if (pm->jit_id != CTXPROF_MODULE_UNKNOWN)
                return pm->jit_id;
        if (!pm->jit_tried_ns || mono_ns() - pm->jit_tried_ns >= PROC_MAPS_PERF_MAP_RETRY_NS)
                pm->jit_wanted = 1;
        return CTXPROF_MODULE_UNKNOWN;
}

int proc_maps_perf_map_wanted(const struct proc_maps *pm)
{
        return pm && pm->jit_wanted && pm->jit_id == CTXPROF_MODULE_UNKNOWN;
}

void proc_maps_perf_map_looked(struct proc_maps *pm, uint64_t now)
{
        if (!pm)
                return;
        pm->jit_wanted = 0;
        pm->jit_tried_ns = now ? now : 1;
}

int proc_maps_set_perf_map(struct proc_maps *pm, int fd, const struct perf_map_file *f)
{
        uint32_t id = CTXPROF_MODULE_UNKNOWN;
        int r;

        if (!pm || fd < 0 || !f) {
                if (fd >= 0)
                        close(fd);
                return -EINVAL;
        }
        if (pm->jit_id != CTXPROF_MODULE_UNKNOWN) {
                close(fd);
                return 0;
        }
        /* opened (in a job) by a pid: still the pinned process's only if that lives now */
        r = proc_pin_check(&pm->pin, modules_target_stats(pm->mods));
        if (r) {
                close(fd);
                return r;
        }
        /* keyed by the file (dev:inode), read later only through the kept descriptor (pid 0:
         * never reopened through a mapping) */
        struct module_key key = {.path = PERF_MAP_MODULE, .dev = f->dev, .ino = f->ino};
        r = modules_intern(pm->mods, &key, fd, &id);
        close(fd);
        if (r < 0)
                return r;
        pm->jit_id = id;
        return 0;
}

int proc_maps_resolve(struct proc_maps *pm, uint64_t ip, struct ctxprof_frame *out)
{
        if (!pm || !out)
                return -EINVAL;
        const struct pm_map *m = lookup(pm->v, pm->n, ip);
        if (!m && mono_ns() - pm->last_read_ns >= PROC_MAPS_REFRESH_NS) {
                if (read_allowed(pm->mods, pm, mono_ns()) && refresh(pm) == 0) {
                        pm->st.refreshes++;
                        m = lookup(pm->v, pm->n, ip);
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
        if (!pm)
                return -EINVAL;
        return read_allowed(pm->mods, pm, mono_ns()) ? refresh(pm) : -EAGAIN;
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
        proc_pin_close(&pm->pin);
        free(pm);
}
