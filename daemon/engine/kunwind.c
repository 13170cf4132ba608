/* SPDX-License-Identifier: MIT */
/*
 * kunwind.c — unwind tables and mapping lists in the BPF maps (see kunwind.h). Owns the row
 * allocator (first fit over free extents), the per-module table states and the per-process
 * lists of modules referenced. Must never print, never keep rows in user space, never leave a
 * `ku_procs` entry pointing at a released slice (the entry is rewritten or deleted before the
 * references it held are dropped).
 */
#include "engine/kunwind.h"
#include "stack/cfi_table.h"
#include "util/clock.h"
#include "util/grow.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctxprof/cfi.h"

/* RETRY: not built yet, asked again at retry_ns (the parser helper was busy, or failed on it) */
enum table_state { TABLE_UNSEEN = 0, TABLE_LOADED, TABLE_NONE, TABLE_RETRY };

struct table {
        enum table_state state;
        uint64_t retry_ns;
        uint32_t failures; /* the helper's failures on the module (-EPROTO) */
        uint32_t row_start, row_count;
        uint32_t refs; /* mapping entries of live lists that point at the slice */
        uint32_t unsup;
        uint64_t serial; /* modules_serial of the module it was built for */
};

struct extent {
        uint32_t start, count;
};

struct ku_pid {
        pid_t pid;
        uint32_t n;
        uint32_t mods[CTXPROF_KU_MAX_MAPS]; /* module id per mapping entry written */
};

struct kunwind {
        struct modules *mods;
        int rows_fd, procs_fd;
        uint32_t row_cap;
        struct table *tables; /* indexed by module id */
        size_t ntables;
        struct extent *free_ext; /* sorted by start, coalesced */
        size_t nfree, free_cap;
        struct ku_pid *pids;
        size_t npids, pids_cap;
        struct kunwind_stats st;
};

struct kunwind *kunwind_new(struct modules *mods, int rows_fd, int procs_fd, uint32_t row_cap)
{
        struct kunwind *k = calloc(1, sizeof(*k));

        if (!k)
                return NULL;
        k->mods = mods;
        k->rows_fd = rows_fd;
        k->procs_fd = procs_fd;
        k->row_cap = row_cap;
        k->st.row_cap = row_cap;
        if (grow_array((void **)&k->free_ext, &k->free_cap, sizeof(*k->free_ext), 1, 16)) {
                free(k);
                return NULL;
        }
        k->free_ext[0] = (struct extent){0, row_cap};
        k->nfree = row_cap ? 1 : 0;
        return k;
}

void kunwind_free(struct kunwind *k)
{
        if (!k)
                return;
        free(k->tables);
        free(k->free_ext);
        free(k->pids);
        free(k);
}

/* First fit: the start of count free rows, or -ENOSPC. */
static int64_t rows_alloc(struct kunwind *k, uint32_t count)
{
        for (size_t i = 0; i < k->nfree; i++) {
                struct extent *e = &k->free_ext[i];
                uint32_t start = e->start;

                if (e->count < count)
                        continue;
                e->start += count;
                e->count -= count;
                if (!e->count) {
                        memmove(e, e + 1, (k->nfree - i - 1) * sizeof(*e));
                        k->nfree--;
                }
                return start;
        }
        return -ENOSPC;
}

/* Give [start, start+count) back, merging with its neighbours. */
static void rows_release(struct kunwind *k, uint32_t start, uint32_t count)
{
        size_t i = 0;

        while (i < k->nfree && k->free_ext[i].start < start)
                i++;
        if (i && k->free_ext[i - 1].start + k->free_ext[i - 1].count == start) {
                k->free_ext[i - 1].count += count;
                if (i < k->nfree && start + count == k->free_ext[i].start) {
                        k->free_ext[i - 1].count += k->free_ext[i].count;
                        memmove(&k->free_ext[i], &k->free_ext[i + 1],
                                (k->nfree - i - 1) * sizeof(*k->free_ext));
                        k->nfree--;
                }
                return;
        }
        if (i < k->nfree && start + count == k->free_ext[i].start) {
                k->free_ext[i].start = start;
                k->free_ext[i].count += count;
                return;
        }
        if (grow_array((void **)&k->free_ext, &k->free_cap, sizeof(*k->free_ext), k->nfree + 1, 16))
                return; /* out of memory: the rows leak, the bound still holds */
        memmove(&k->free_ext[i + 1], &k->free_ext[i], (k->nfree - i) * sizeof(*k->free_ext));
        k->free_ext[i] = (struct extent){start, count};
        k->nfree++;
}

/* Write rows into `ku_rows` at start: one batch, element by element if batches fail. */
static int upload(struct kunwind *k, uint32_t start, const struct cfi_table *t)
{
        uint32_t *keys = malloc(t->n * sizeof(*keys)), count = (uint32_t)t->n;
        int err = 0;

        if (!keys)
                return -ENOMEM;
        for (uint32_t i = 0; i < count; i++)
                keys[i] = start + i;
        if (bpf_map_update_batch(k->rows_fd, keys, t->rows, &count, NULL)) {
                for (uint32_t i = 0; i < t->n && !err; i++)
                        if (bpf_map_update_elem(k->rows_fd, &keys[i], &t->rows[i], BPF_ANY))
                                err = -errno;
        }
        free(keys);
        return err;
}

/* Build and load module id's table. The state says what happened (NONE: frame pointers). */
static void table_load(struct kunwind *k, uint32_t id, struct table *tb)
{
        struct module_info mi = {0};
        struct cfi_table t;
        int64_t start;
        int err, fd = -1;

        tb->state = TABLE_NONE;
        if (modules_info(k->mods, id, &mi))
                mi.path = NULL;
        if (mi.path && !strcmp(mi.path, "[vdso]")) {
                err = cfi_table_build_vdso(&t); /* the same image in every process */
        } else if (mi.path && mi.path[0] == '[') {
                /* Another kernel-made mapping with no file and no .eh_frame, e.g. [uprobes]
                 * (the page where a uprobe runs the instruction it displaced: every process
                 * that met a uprobe has it): frame pointers, and no build error. */
                return;
        } else {
                fd = modules_open(k->mods, id);
                err = fd < 0 ? fd : cfi_table_build(fd, &t);
                if (fd >= 0)
                        close(fd);
        }
        if (err == -EBUSY || (err == -EPROTO && ++tb->failures < KUNWIND_HELPER_FAILURES_MAX)) {
                /* Not the file's fault, or maybe not: the helper was busy, or stalled or died
                 * on it (the host may have stopped it). Asked again after 1 s, or 10 s, 20 s. */
                tb->state = TABLE_RETRY;
                tb->retry_ns =
                    mono_ns() + (err == -EBUSY ? KUNWIND_RETRY_NS
                                               : KUNWIND_HELPER_RETRY_NS << (tb->failures - 1));
                k->st.build_deferred++;
                return;
        }
        if (err) {
                k->st.build_errors++;
                return;
        }
        k->st.builds++;
        k->st.build_ns += t.st.build_ns;
        start = t.n ? rows_alloc(k, (uint32_t)t.n) : -ENOSPC;
        if (start < 0) {
                k->st.full++;
        } else if (upload(k, (uint32_t)start, &t)) {
                rows_release(k, (uint32_t)start, (uint32_t)t.n);
                k->st.build_errors++;
        } else {
                tb->state = TABLE_LOADED;
                tb->row_start = (uint32_t)start;
                tb->row_count = (uint32_t)t.n;
                tb->unsup = t.st.unsup;
                k->st.tables++;
                k->st.rows += t.n;
                k->st.unsup_rows += t.st.unsup;
                if (k->st.tables > k->st.tables_peak)
                        k->st.tables_peak = k->st.tables;
                if (k->st.rows * sizeof(struct ctxprof_cfi_row) > k->st.bytes_peak)
                        k->st.bytes_peak = k->st.rows * sizeof(struct ctxprof_cfi_row);
        }
        cfi_table_free(&t);
}

/* The table of module id (built on first use), or NULL for none / out of memory. */
static struct table *table_get(struct kunwind *k, uint32_t id)
{
        if (id < CTXPROF_MODULE_FIRST)
                return NULL;
        if (id >= k->ntables) {
                size_t cap = k->ntables, old = k->ntables;

                if (grow_array((void **)&k->tables, &cap, sizeof(*k->tables), (size_t)id + 1, 64))
                        return NULL;
                memset(k->tables + old, 0, (cap - old) * sizeof(*k->tables));
                k->ntables = cap;
        }
        if (k->tables[id].state == TABLE_UNSEEN) {
                table_load(k, id, &k->tables[id]);
                k->tables[id].serial = modules_serial(k->mods, id);
        } else if (k->tables[id].serial != modules_serial(k->mods, id)) {
                /* The registry retired the module and gave its id to another one while a list
                 * not synced since still holds the old table: frame pointers for the new one
                 * until that list lets go (the table is then built again). */
                return NULL;
        } else if (k->tables[id].state == TABLE_RETRY && mono_ns() >= k->tables[id].retry_ns) {
                table_load(k, id, &k->tables[id]);
        }
        return &k->tables[id];
}

static void table_unref(struct kunwind *k, uint32_t id)
{
        struct table *tb;

        if (id < CTXPROF_MODULE_FIRST || id >= k->ntables)
                return;
        tb = &k->tables[id];
        if (!tb->refs || --tb->refs)
                return;
        if (tb->state == TABLE_LOADED) {
                rows_release(k, tb->row_start, tb->row_count);
                k->st.tables--;
                k->st.rows -= tb->row_count;
                k->st.unsup_rows -= tb->unsup;
        }
        /* Loaded again (or retried, for a file that had none) when a target maps it. */
        memset(tb, 0, sizeof(*tb));
}

static struct ku_pid *pid_find(struct kunwind *k, pid_t pid)
{
        for (size_t i = 0; i < k->npids; i++)
                if (k->pids[i].pid == pid)
                        return &k->pids[i];
        return NULL;
}

struct fill {
        struct kunwind *k;
        struct ctxprof_ku_proc *v;
        uint32_t *mods;
        int incomplete; /* a mapping's table is to be asked for again */
};

static int fill_cb(const struct proc_maps_entry *e, void *arg)
{
        struct fill *f = arg;
        struct ctxprof_ku_map *m;
        struct table *tb;

        if (f->v->n >= CTXPROF_KU_MAX_MAPS)
                return 1; /* ips above the last entry take frame-pointer steps */
        m = &f->v->m[f->v->n];
        m->start = e->start;
        m->end = e->end;
        m->bias = e->start - e->pgoff;
        tb = table_get(f->k, e->module_id);
        if (tb && tb->state == TABLE_LOADED) {
                m->row_start = tb->row_start;
                m->row_count = tb->row_count;
        }
        if (tb)
                tb->refs++;
        if (tb && tb->state == TABLE_RETRY)
                f->incomplete = 1;
        f->mods[f->v->n] = tb ? e->module_id : 0;
        f->v->n++;
        return 0;
}

int kunwind_sync(struct kunwind *k, pid_t pid, const struct proc_maps *pm)
{
        struct ctxprof_ku_proc *v = calloc(1, sizeof(*v));
        uint32_t mods[CTXPROF_KU_MAX_MAPS] = {0};
        struct fill f = {k, v, mods, 0};
        struct ku_pid *p;
        __u32 key = (__u32)pid;
        uint32_t n;
        int err;

        if (!v)
                return -ENOMEM;
        p = pid_find(k, pid);
        if (!p) {
                err =
                    grow_array((void **)&k->pids, &k->pids_cap, sizeof(*k->pids), k->npids + 1, 16);
                if (err) {
                        free(v);
                        return err;
                }
                p = &k->pids[k->npids++];
                memset(p, 0, sizeof(*p));
                p->pid = pid;
                k->st.procs++;
        }
        proc_maps_foreach(pm, fill_cb, &f);
        n = v->n;
        err = bpf_map_update_elem(k->procs_fd, &key, v, BPF_ANY) ? -errno : 0;
        free(v);
        /* The new list holds its references: drop the old list's. */
        for (uint32_t i = 0; i < p->n; i++)
                table_unref(k, p->mods[i]);
        memcpy(p->mods, mods, sizeof(mods));
        p->n = n;
        k->st.syncs++;
        return err ? err : f.incomplete;
}

void kunwind_forget(struct kunwind *k, pid_t pid)
{
        struct ku_pid *p = pid_find(k, pid);
        __u32 key = (__u32)pid;

        if (!p)
                return;
        bpf_map_delete_elem(k->procs_fd, &key);
        for (uint32_t i = 0; i < p->n; i++)
                table_unref(k, p->mods[i]);
        *p = k->pids[--k->npids];
        k->st.procs--;
}

void kunwind_get_stats(const struct kunwind *k, struct kunwind_stats *out)
{
        *out = k->st;
        out->bytes = out->rows * sizeof(struct ctxprof_cfi_row);
}
