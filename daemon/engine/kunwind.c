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

/* PENDING: its build job runs (job). RETRY: not built yet, asked again at retry_ns (the parser
 * helper was busy, or failed on it). */
enum table_state { TABLE_UNSEEN = 0, TABLE_LOADED, TABLE_NONE, TABLE_RETRY, TABLE_PENDING };

struct table {
        enum table_state state;
        uint64_t retry_ns;
        uint64_t job;
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

/* A build job not handed back yet (an abandoned one: until its worker returns). */
struct pending {
        uint64_t job;
        uint32_t id;
};

struct kunwind {
        struct modules *mods;
        struct target_jobs *jobs; /* where tables are built (not owned); NULL: in the caller */
        struct pending *pend;
        size_t npend, pend_cap;
        uint64_t gen; /* tables loaded so far */
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
        free(k->pend);
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

/* What a build ended with, applied to tb on the loop: the rows loaded, or the state that says
 * whether and when to ask again (NONE: frame pointers for the module). */
static void table_apply(struct kunwind *k, struct table *tb, int err, const struct cfi_table *t)
{
        int64_t start;

        tb->state = TABLE_NONE;
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
        k->st.build_ns += t->st.build_ns;
        start = t->n ? rows_alloc(k, (uint32_t)t->n) : -ENOSPC;
        if (start < 0) {
                k->st.full++;
        } else if (upload(k, (uint32_t)start, t)) {
                rows_release(k, (uint32_t)start, (uint32_t)t->n);
                k->st.build_errors++;
        } else {
                tb->state = TABLE_LOADED;
                tb->row_start = (uint32_t)start;
                tb->row_count = (uint32_t)t->n;
                tb->unsup = t->st.unsup;
                k->st.tables++;
                k->st.rows += t->n;
                k->st.unsup_rows += t->st.unsup;
                k->gen++;
                if (k->st.tables > k->st.tables_peak)
                        k->st.tables_peak = k->st.tables;
                if (k->st.rows * sizeof(struct ctxprof_cfi_row) > k->st.bytes_peak)
                        k->st.bytes_peak = k->st.rows * sizeof(struct ctxprof_cfi_row);
        }
}

/* A build job's argument: owns the module's descriptor and the table it builds. */
struct build_job {
        int fd, err;
        struct cfi_table t;
};

static void build_run(void *arg)
{
        struct build_job *b = arg;

        b->err = cfi_table_build(b->fd, &b->t);
}

static void build_drop(void *arg)
{
        struct build_job *b = arg;

        close(b->fd);
        cfi_table_free(&b->t);
        free(b);
}

/* Module id's build as a job (fd taken): PENDING until kunwind_job_done, or put off. */
static void build_submit(struct kunwind *k, uint32_t id, struct table *tb, int fd, uint32_t owner)
{
        struct build_job *b = NULL;
        uint64_t job;

        if (k->npend >= KUNWIND_BUILDS_MAX) { /* each holds a descriptor: asked again later */
                close(fd);
                table_apply(k, tb, -EBUSY, NULL);
                return;
        }
        b = calloc(1, sizeof(*b));
        if (!b || grow_array((void **)&k->pend, &k->pend_cap, sizeof(*k->pend), k->npend + 1, 8)) {
                free(b);
                close(fd);
                table_apply(k, tb, -EBUSY, NULL);
                return;
        }
        b->fd = fd;
        job = target_jobs_submit(k->jobs, owner, build_run, build_drop, b, KUNWIND_JOB_DEADLINE_NS);
        if (!job) { /* every worker stuck (b dropped): asked again later */
                table_apply(k, tb, -EBUSY, NULL);
                return;
        }
        k->pend[k->npend++] = (struct pending){.job = job, .id = id};
        tb->state = TABLE_PENDING;
        tb->job = job;
        k->st.build_jobs++;
}

/* Build (or start building) and load module id's table. The state says what happened. */
static void table_load(struct kunwind *k, uint32_t id, struct table *tb, uint32_t owner)
{
        struct module_info mi = {0};
        struct cfi_table t = {0};
        int err, fd;

        tb->state = TABLE_NONE;
        if (modules_info(k->mods, id, &mi))
                mi.path = NULL;
        if (mi.path && !strcmp(mi.path, "[vdso]")) {
                err = cfi_table_build_vdso(&t); /* the same image in every process: ours */
        } else if (mi.path && mi.path[0] == '[') {
                /* Another kernel-made mapping with no file and no .eh_frame, e.g. [uprobes]
                 * (the page where a uprobe runs the instruction it displaced: every process
                 * that met a uprobe has it): frame pointers, and no build error. */
                return;
        } else {
                fd = modules_open(k->mods, id);
                if (fd >= 0 && k->jobs) {
                        build_submit(k, id, tb, fd, owner);
                        return;
                }
                err = fd < 0 ? fd : cfi_table_build(fd, &t);
                if (fd >= 0)
                        close(fd);
        }
        table_apply(k, tb, err, &t);
        cfi_table_free(&t);
}

int kunwind_job_done(struct kunwind *k, uint64_t id, enum target_job_end end, void *arg)
{
        struct build_job *b = arg;
        struct table *tb = NULL;
        size_t i = 0;

        if (!k)
                return 0;
        while (i < k->npend && k->pend[i].job != id)
                i++;
        if (i == k->npend)
                return 0;
        if (k->pend[i].id < k->ntables && k->tables[k->pend[i].id].state == TABLE_PENDING &&
            k->tables[k->pend[i].id].job == id)
                tb = &k->tables[k->pend[i].id]; /* else released (or reused) meanwhile */
        if (end == TARGET_JOB_ABANDONED)
                k->st.build_abandoned++; /* kept until its worker returns */
        else
                k->pend[i] = k->pend[--k->npend];
        if (!tb || end == TARGET_JOB_RETURNED)
                return 1;
        tb->job = 0;
        if (end == TARGET_JOB_FINISHED)
                table_apply(k, tb, b->err, &b->t);
        else /* past its deadline (the helper's own is shorter), or its owner's workers stuck */
                table_apply(k, tb, end == TARGET_JOB_ABANDONED ? -EPROTO : -EBUSY, NULL);
        return 1;
}

/* The table of module id (built on first use), or NULL for none / out of memory. */
static struct table *table_get(struct kunwind *k, uint32_t id, uint32_t owner)
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
                table_load(k, id, &k->tables[id], owner);
                k->tables[id].serial = modules_serial(k->mods, id);
        } else if (k->tables[id].serial != modules_serial(k->mods, id)) {
                /* The registry retired the module and gave its id to another one while a list
                 * not synced since still holds the old table: frame pointers for the new one
                 * until that list lets go (the table is then built again). */
                return NULL;
        } else if (k->tables[id].state == TABLE_RETRY && mono_ns() >= k->tables[id].retry_ns) {
                table_load(k, id, &k->tables[id], owner);
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
        uint32_t owner;
        int incomplete; /* a mapping's table is being built, or to be asked for again */
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
        tb = table_get(f->k, e->module_id, f->owner);
        if (tb && tb->state == TABLE_LOADED) {
                m->row_start = tb->row_start;
                m->row_count = tb->row_count;
        }
        if (tb)
                tb->refs++;
        if (tb && (tb->state == TABLE_RETRY || tb->state == TABLE_PENDING))
                f->incomplete = 1;
        f->mods[f->v->n] = tb ? e->module_id : 0;
        f->v->n++;
        return 0;
}

int kunwind_sync(struct kunwind *k, pid_t pid, uint32_t owner, const struct proc_maps *pm)
{
        struct ctxprof_ku_proc *v = calloc(1, sizeof(*v));
        uint32_t mods[CTXPROF_KU_MAX_MAPS] = {0};
        struct fill f = {k, v, mods, owner, 0};
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

void kunwind_use_jobs(struct kunwind *k, struct target_jobs *jobs)
{
        k->jobs = jobs;
}

uint64_t kunwind_generation(const struct kunwind *k)
{
        return k->gen;
}

void kunwind_get_stats(const struct kunwind *k, struct kunwind_stats *out)
{
        *out = k->st;
        out->bytes = out->rows * sizeof(struct ctxprof_cfi_row);
}
