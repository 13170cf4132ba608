/* SPDX-License-Identifier: MIT */
/*
 * jfr_sink.c — joins ingestion to JFR: every decoded sample's stack goes into the trace
 * table (a 64-bit id), its label set is interned to a per-chunk context id, and the sample is
 * appended to the current batch. When the chunk period ends the consuming thread cuts the
 * chunk: it rotates the trace table, copying out the stacks the batch refers to, and queues
 * the batch for the writer thread, which symbolizes the frames and appends one complete JFR
 * chunk through jfr_writer.
 *
 * Why the cut runs on the consuming thread: a put and the append of its sample happen on
 * that thread, so when the table is rotated between two samples every id held by the batch
 * lives in the table being rotated (ACTIVE of this epoch). The rotation's processor copies
 * those stacks into the chunk job, so no sample can outlive its stack and no liveness checker
 * is needed to carry traces into the next epoch. Conversely, every stack in ACTIVE was put by
 * a sample of this batch (the sink is its table's only producer, and a sample is appended
 * whenever its put ran), so the processor takes every stack it is handed: no per-sample list
 * of ids is built or sorted on the consuming thread. The writer thread only ever touches jobs
 * it was handed; the two threads share the queue and the counters, both under one mutex.
 *
 * Must never: block the consuming thread on I/O or symbolization; hold more than
 * max_samples_per_chunk samples per chunk, more than JOBS_MAX chunks waiting, or more of a
 * per-chunk store (new stacks, label sets, threads, resources) than its bound and the
 * sample's process's share of it (sink/target_share.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* header-only use of libxxhash-dev */
#include <xxhash.h>

#include "sink/blocked_in.h"
#include "sink/host_facts.h"
#include "sink/target_share.h"
#include "engine/context_decode.h"
#include "sink/jfr_sink.h"
#include "stack/symbolize.h"
#include "sink/trace_table.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/grow.h"

#define FIRST_CAP                64 /* elements of a growing array at first growth */
#define JOBS_MAX                 4  /* chunks cut but not yet written; more postpones the cut */
#define SYM_PER_FRAME            16 /* inline chain entries kept per frame */
#define DEFAULT_PERIOD_NS        (60ull * 1000000000ull)
#define DEFAULT_MAX_SAMPLES      1000000u
#define BLOCKED_IN_MAX           96  /* bytes kept of a blocking function's name */
#define TASK_INTERRUPTIBLE_BIT   0x1 /* Linux task states (off-CPU intervals) */
#define TASK_UNINTERRUPTIBLE_BIT 0x2
/* Per-chunk bounds of the stores that grow with what targets send (docs/daemon.md, "Memory
 * bounds"); each is shared among the chunk's processes by sink/target_share.h: one process
 * may hold half of a store, and its top eighth is kept for processes under the LIGHT mark. */
#define LABEL_STORE_BYTES (8u << 20)                    /* label sets per chunk, index too */
#define LABEL_LIGHT_BYTES (64u << 10)                   /* see above */
#define LSET_CHARGE       (4 * sizeof(struct lset_ent)) /* index bytes per set (load 1/4..1/2) */
#define THREADS_MAX       16384u                        /* threads named per chunk */
#define THREADS_LIGHT     64u
#define STACK_LIGHT_DIV   64            /* light: under 1/64 of the trace table */
#define RES_MAX           SHARE_TARGETS /* processes with a resource per chunk */
/* A chunk is cut before its period ends once one of its stores is CUT_EARLY_NUM/DEN full
 * (samples, new stacks, label sets, threads): what would have come after the bound goes to
 * the next chunk instead of being dropped or refused. Not sooner than CUT_EARLY_MIN_NS after
 * the chunk began: meanwhile each process's share of a store holds a flooding one back, so
 * it cannot force a storm of tiny chunks. */
#define CUT_EARLY_NUM    7u
#define CUT_EARLY_DEN    8u
#define CUT_EARLY_MIN_NS 1000000000ull /* 1 s */

struct thread_ent {
        pid_t tid; /* 0 = empty bucket (tid 0 is the idle task, never a target) */
        pid_t pid; /* its process (the JFR thread's pid: a host file is split by it) */
        char comm[CTXPROF_COMM_LEN];
};

struct lset_ent {
        uint64_t hash;
        uint32_t off, len; /* serialized set in batch.arena */
        uint32_t id;       /* context id, 0 = empty bucket */
};

/* A process's OpenTelemetry resource as this chunk writes it (ctxprof.ProcessContext). */
struct res_ent {
        pid_t pid;
        uint64_t version;
        char *service, *attributes; /* owned */
};

/* An off-CPU interval's own fields, kept apart from its sample: a chunk holds up to a million
 * samples, most of them CPU samples, 40 B each (with these inline, 80 B each). In sample
 * order; `sample` is its sample's index in the batch. */
struct batch_off {
        uint64_t duration_ns, runq_ns; /* blocked (run-queue delay included); of it runnable */
        uint32_t sample;
        uint32_t state; /* enum jfr_offcpu_state */
};
_Static_assert(sizeof(struct jfr_sample) == 40, "a buffered sample is 40 bytes");
_Static_assert(sizeof(struct batch_off) == 24, "an off-CPU interval adds 24 bytes");

/* One chunk's worth of samples and what they refer to. */
struct batch {
        struct jfr_sample *samples;
        size_t n, cap;
        struct batch_off *offs; /* the off-CPU samples' intervals, in sample order */
        size_t noffs, offs_cap;
        char *arena; /* label sets: per label u32 key_len, key, u32 value_len, value */
        size_t arena_len, arena_cap;
        struct lset_ent *lsets; /* open addressing, power-of-two size */
        uint32_t lset_cap, lset_n;
        struct thread_ent *threads; /* open addressing by tid */
        uint32_t thr_cap, thr_n;
        struct res_ent *res; /* processes with a resource, in order of first sample */
        size_t res_n, res_cap;
        struct jfr_sink_refused refused; /* this chunk's refusals (ctxprof.Statistics) */
        uint64_t start_mono, start_wall;
};

struct stack_rec {
        uint64_t id;
        size_t off; /* into job.frames */
        uint32_t n;
        int truncated;
        char blocked_in[BLOCKED_IN_MAX]; /* off-CPU: the blocking kernel function, "" = none */
};

struct job {
        struct batch b;
        struct stack_rec *stacks;
        size_t nstacks, stacks_cap;
        struct ctxprof_frame *frames;
        size_t nframes, frames_cap;
        int alloc_failed;
        struct jfr_stats stats;
        uint64_t end_mono;
        struct job *next;
};

struct jfr_sink {
        struct jfr_sink_opts o;
        struct trace_table *tt;
        struct jfr_writer *w;
        int snapshot_fd; /* PATH.labels.pb, -1 = none */
        struct modules *modules;
        struct batch cur;
        struct jfr_sink_engine_counters last; /* engine counters at the previous cut */
        uint64_t traces_dropped;              /* consuming thread only */
        struct target_share *share;           /* consuming thread only */
        int cut_early;                        /* a store of cur nears its bound (bounds_near) */

        pthread_t writer;
        int writer_started;
        pthread_mutex_t mu; /* queue, stopping, counters */
        pthread_cond_t cv;
        struct job *head, *tail;
        unsigned queued;
        int stopping;
        struct jfr_sink_counters c;
        int first_error;
        uint64_t writing_start; /* start_mono of the batch the writer writes now, 0 = none */
        int writer_done;        /* the writer thread has returned (joining it cannot wait) */
        int finish_err;         /* jfr_sink_finish_begin's cut, for jfr_sink_finish_end */
};

static void batch_free(struct batch *b)
{
        free(b->samples);
        free(b->offs);
        free(b->arena);
        free(b->lsets);
        free(b->threads);
        for (size_t i = 0; i < b->res_n; i++) {
                free(b->res[i].service);
                free(b->res[i].attributes);
        }
        free(b->res);
        memset(b, 0, sizeof(*b));
}

static int batch_init(struct batch *b)
{
        memset(b, 0, sizeof(*b));
        b->lset_cap = 256;
        b->thr_cap = 64;
        b->lsets = calloc(b->lset_cap, sizeof(*b->lsets));
        b->threads = calloc(b->thr_cap, sizeof(*b->threads));
        if (!b->lsets || !b->threads) {
                batch_free(b);
                return -ENOMEM;
        }
        b->start_mono = mono_ns();
        b->start_wall = wall_ns();
        return 0;
}

/* A thread's name into dst (NULL: ""), cut to fit; once per sample, so not through printf. */
static void copy_comm(char *dst, size_t size, const char *comm)
{
        size_t n = comm ? strnlen(comm, size - 1) : 0;

        if (n)
                memcpy(dst, comm, n);
        dst[n] = '\0';
}

/* Remembers the latest name of tid in this chunk: SAMPLE_SINK_THREAD_REFUSED when tid is
 * new and its process has used its share of the thread table (the sample then goes to the
 * process's main thread, *tid_out), 0, or -ENOMEM. */
static int batch_thread(struct batch *b, struct target_share *sh, pid_t pid, pid_t tid,
                        const char *comm, pid_t *tid_out)
{
        uint32_t h = (uint32_t)tid * 2654435761u & (b->thr_cap - 1);

        *tid_out = tid;
        while (b->threads[h].tid && b->threads[h].tid != tid)
                h = (h + 1) & (b->thr_cap - 1);
        if (!b->threads[h].tid) {
                if (!share_allows(sh, pid, SHARE_THREADS, b->thr_n, 1)) {
                        b->refused.threads++;
                        *tid_out = pid;
                        return SAMPLE_SINK_THREAD_REFUSED;
                }
                share_add(sh, pid, SHARE_THREADS, 1);
        }
        if (2 * (b->thr_n + 1) > b->thr_cap) {
                uint32_t ncap = b->thr_cap * 2;
                struct thread_ent *nt = calloc(ncap, sizeof(*nt));
                if (!nt)
                        return -ENOMEM;
                for (uint32_t i = 0; i < b->thr_cap; i++) {
                        if (!b->threads[i].tid)
                                continue;
                        uint32_t h = (uint32_t)b->threads[i].tid * 2654435761u & (ncap - 1);
                        while (nt[h].tid)
                                h = (h + 1) & (ncap - 1);
                        nt[h] = b->threads[i];
                }
                free(b->threads);
                b->threads = nt;
                b->thr_cap = ncap;
        }
        h = (uint32_t)tid * 2654435761u & (b->thr_cap - 1);
        while (b->threads[h].tid && b->threads[h].tid != tid)
                h = (h + 1) & (b->thr_cap - 1);
        if (!b->threads[h].tid) {
                b->threads[h].tid = tid;
                b->thr_n++;
        }
        b->threads[h].pid = pid;
        copy_comm(b->threads[h].comm, sizeof(b->threads[h].comm), comm);
        return 0;
}

static int arena_put(struct batch *b, const void *p, size_t n)
{
        int err = grow_array((void **)&b->arena, &b->arena_cap, 1, b->arena_len + n, FIRST_CAP);
        if (err)
                return err;
        memcpy(b->arena + b->arena_len, p, n);
        b->arena_len += n;
        return 0;
}

#define RES_TEXT_MAX 1024 /* resource attributes kept per process, as "key=value" lines */

/* The resource as "key=value\n" lines (malloc'ed), service.name's value in *service. */
static char *resource_text(const struct decoded_resource *r, char **service)
{
        char *t = malloc(RES_TEXT_MAX);
        size_t n = 0;

        *service = NULL;
        if (!t)
                return NULL;
        t[0] = '\0';
        for (unsigned i = 0; i < r->n; i++) {
                if (!r->keys[i] || !r->values[i])
                        continue;
                if (!*service && !strcmp(r->keys[i], "service.name"))
                        *service = strdup(r->values[i]);
                int k = snprintf(t + n, RES_TEXT_MAX - n, "%s=%s\n", r->keys[i], r->values[i]);
                if (k < 0 || (size_t)k >= RES_TEXT_MAX - n) {
                        t[n] = '\0'; /* the rest does not fit */
                        break;
                }
                n += (size_t)k;
        }
        return t;
}

/* Remember the sample's process resource for this chunk (the latest version wins). */
static int batch_resource(struct batch *b, const struct decoded_sample *ds)
{
        const struct decoded_resource *r = ds->resource;
        struct res_ent *e = NULL;

        if (!r)
                return 0;
        for (size_t i = b->res_n; i-- > 0;)
                if (b->res[i].pid == ds->pid) {
                        e = &b->res[i];
                        break;
                }
        if (e && e->version == r->version)
                return 0;
        if (!e && b->res_n >= RES_MAX) {
                b->refused.processes++;
                return 0; /* written without its resource (ctxprof.ProcessContext) */
        }
        if (!e) {
                if (grow_array((void **)&b->res, &b->res_cap, sizeof(*b->res), b->res_n + 1,
                               FIRST_CAP))
                        return -ENOMEM;
                e = &b->res[b->res_n++];
                memset(e, 0, sizeof(*e));
                e->pid = ds->pid;
        }
        free(e->service);
        free(e->attributes);
        e->version = r->version;
        e->attributes = resource_text(r, &e->service);
        return e->attributes ? 0 : -ENOMEM;
}

/* What the label store holds, measured against LABEL_STORE_BYTES: arena bytes of the
 * interned sets and LSET_CHARGE index bytes per set. */
static uint64_t label_store_used(size_t arena_len, uint32_t nsets)
{
        return arena_len + (uint64_t)nsets * LSET_CHARGE;
}

/* Context id of the sample's label set in this chunk (0 = no labels): 0,
 * SAMPLE_SINK_LABELS_REFUSED (a new set its process has no share left for: id 0) or
 * -ENOMEM. A set already interned costs nothing and is never refused. */
static int batch_labels(struct batch *b, struct target_share *sh, const struct decoded_sample *ds,
                        uint32_t *id)
{
        size_t start = b->arena_len;
        int err = 0;

        *id = 0;
        for (unsigned i = 0; i < ds->n_labels && !err; i++) {
                if (context_is_span_mirror(ds, &ds->labels[i]))
                        continue;
                uint32_t kl = (uint32_t)ds->labels[i].key_len,
                         vl = (uint32_t)ds->labels[i].value_len;
                err = arena_put(b, &kl, 4);
                if (!err)
                        err = arena_put(b, ds->labels[i].key, kl);
                if (!err)
                        err = arena_put(b, &vl, 4);
                if (!err)
                        err = arena_put(b, ds->labels[i].value, vl);
        }
        if (err) {
                b->arena_len = start;
                return err;
        }
        if (b->arena_len == start)
                return 0; /* nothing but span mirrors */
        uint32_t len = (uint32_t)(b->arena_len - start);
        uint64_t hash = XXH3_64bits(b->arena + start, len);

        if (2 * (b->lset_n + 1) > b->lset_cap) {
                uint32_t ncap = b->lset_cap * 2;
                struct lset_ent *nl = calloc(ncap, sizeof(*nl));
                if (!nl) {
                        b->arena_len = start;
                        return -ENOMEM;
                }
                for (uint32_t i = 0; i < b->lset_cap; i++) {
                        if (!b->lsets[i].id)
                                continue;
                        uint32_t h = (uint32_t)b->lsets[i].hash & (ncap - 1);
                        while (nl[h].id)
                                h = (h + 1) & (ncap - 1);
                        nl[h] = b->lsets[i];
                }
                free(b->lsets);
                b->lsets = nl;
                b->lset_cap = ncap;
        }
        uint32_t h = (uint32_t)hash & (b->lset_cap - 1);
        for (;; h = (h + 1) & (b->lset_cap - 1)) {
                struct lset_ent *e = &b->lsets[h];
                if (!e->id) {
                        uint64_t charge = len + LSET_CHARGE;
                        /* the arena below start holds exactly the interned sets */
                        uint64_t used = label_store_used(start, b->lset_n);
                        if (!share_allows(sh, ds->pid, SHARE_LABEL_BYTES, used, charge)) {
                                b->arena_len = start;
                                b->refused.label_sets++;
                                return SAMPLE_SINK_LABELS_REFUSED;
                        }
                        share_add(sh, ds->pid, SHARE_LABEL_BYTES, charge);
                        e->hash = hash;
                        e->off = (uint32_t)start;
                        e->len = len;
                        e->id = ++b->lset_n;
                        *id = e->id;
                        return 0;
                }
                if (e->hash == hash && e->len == len &&
                    !memcmp(b->arena + e->off, b->arena + start, len)) {
                        b->arena_len = start; /* already interned: drop the copy */
                        *id = e->id;
                        return 0;
                }
        }
}

/* The JFR thread state of an off-CPU interval from the Linux task state. */
static enum jfr_offcpu_state offcpu_state(uint32_t task_state)
{
        if (task_state & TASK_UNINTERRUPTIBLE_BIT)
                return JFR_OFFCPU_UNINTERRUPTIBLE;
        if (task_state & TASK_INTERRUPTIBLE_BIT)
                return JFR_OFFCPU_SLEEPING;
        return JFR_OFFCPU_OTHER;
}

/* The sample's trace id: a stack already stored, or a new one while its process has a share
 * of the table left (else TRACE_DROPPED_ID, and *refused set). */
static uint64_t put_stack(struct jfr_sink *s, const struct decoded_sample *ds, int *refused)
{
        bool inserted;
        bool may = share_allows(s->share, ds->pid, SHARE_STACKS, trace_table_fill(s->tt), 1);
        uint64_t id = trace_table_put_share(s->tt, ds->frames, ds->n_frames, ds->truncated != 0,
                                            may, &inserted);

        if (inserted)
                share_add(s->share, ds->pid, SHARE_STACKS, 1);
        if (id == TRACE_DROPPED_ID) {
                s->traces_dropped++; /* the sample stays, with an "[unknown stack]" */
                if (!may) {
                        s->cur.refused.stacks++;
                        *refused = SAMPLE_SINK_STACK_REFUSED;
                }
        }
        return id;
}

static int store_near(uint64_t used, uint64_t bound)
{
        return used * CUT_EARLY_DEN >= bound * CUT_EARLY_NUM;
}

/* 1 when a store of the current chunk nears its bound: the chunk is cut early. */
static int bounds_near(struct jfr_sink *s)
{
        const struct batch *b = &s->cur;

        return store_near(b->n, s->o.max_samples_per_chunk) ||
               store_near(trace_table_fill(s->tt), trace_table_capacity(s->tt)) ||
               store_near(label_store_used(b->arena_len, b->lset_n), LABEL_STORE_BYTES) ||
               store_near(b->thr_n, THREADS_MAX);
}

static int sink_sample(void *ctx, const struct decoded_sample *ds)
{
        struct jfr_sink *s = ctx;
        struct batch *b = &s->cur;
        uint32_t ctx_id = 0;
        pid_t tid = ds->tid;
        int err, refused = 0;

        if (b->n >= s->o.max_samples_per_chunk ||
            grow_array((void **)&b->samples, &b->cap, sizeof(*b->samples), b->n + 1, FIRST_CAP) ||
            (ds->off_cpu && grow_array((void **)&b->offs, &b->offs_cap, sizeof(*b->offs),
                                       b->noffs + 1, FIRST_CAP))) {
                pthread_mutex_lock(&s->mu);
                s->c.samples_dropped++;
                pthread_mutex_unlock(&s->mu);
                return -ENOSPC;
        }
        uint64_t id = put_stack(s, ds, &refused);
        err = batch_labels(b, s->share, ds, &ctx_id);
        if (err > 0)
                refused |= err;
        if (err >= 0)
                err = batch_thread(b, s->share, ds->pid, ds->tid, ds->comm, &tid);
        if (err > 0)
                refused |= err;
        if (err >= 0)
                err = batch_resource(b, ds);
        if (ds->off_cpu)
                b->offs[b->noffs++] = (struct batch_off){.duration_ns = ds->duration_ns,
                                                         .runq_ns = ds->runq_ns,
                                                         .sample = (uint32_t)b->n,
                                                         .state = offcpu_state(ds->off_state)};
        b->samples[b->n++] = (struct jfr_sample){
            .ticks = ds->time_ns,
            .trace_id = id,
            .span_id = ds->has_span ? ds->span_id : 0,
            .root_span_id = ds->has_span ? ds->root_span_id : 0,
            .context_id = ctx_id,
            .tid = tid,
        };
        if (!s->cut_early && bounds_near(s))
                s->cut_early = 1;
        return err < 0 ? err : refused;
}

/* Rotation processor: copy a stack of this chunk (each was put by one of its samples). */
static void collect_stack(void *ctx, uint64_t id, const struct ctxprof_frame *frames, uint32_t n,
                          bool truncated)
{
        struct job *j = ctx;

        if (grow_array((void **)&j->stacks, &j->stacks_cap, sizeof(*j->stacks), j->nstacks + 1,
                       FIRST_CAP) ||
            grow_array((void **)&j->frames, &j->frames_cap, sizeof(*j->frames), j->nframes + n,
                       FIRST_CAP)) {
                j->alloc_failed = 1; /* those samples get "[unknown stack]" */
                return;
        }
        memcpy(j->frames + j->nframes, frames, (size_t)n * sizeof(*frames));
        j->stacks[j->nstacks++] =
            (struct stack_rec){.id = id, .off = j->nframes, .n = n, .truncated = truncated};
        j->nframes += n;
}

static const char *module_name(struct modules *m, const struct ctxprof_frame *f, char *buf,
                               size_t bufsz, const char **build_id)
{
        struct module_info mi;

        *build_id = "";
        if (f->module_id == CTXPROF_MODULE_KERNEL || (f->flags & CTXPROF_FRAME_KERNEL))
                return "[kernel]";
        if (f->module_id == CTXPROF_MODULE_UNKNOWN || !m || modules_info(m, f->module_id, &mi))
                return "[unknown]";
        const char *slash = strrchr(mi.path, '/');
        snprintf(buf, bufsz, "%s", slash ? slash + 1 : mi.path);
        *build_id = mi.build_id_hex ? mi.build_id_hex : "";
        return buf;
}

/* Writer thread state for symbolizing one stack. */
struct symctx {
        struct symbolizer *sym;
        struct modules *modules;
        struct jfr_frame *jf; /* CTXPROF_MAX_FRAMES * SYM_PER_FRAME */
        char (*modname)[64];  /* per ctxprof frame */
        char (*fallback)[192];
};

/* The stack's blocking kernel function (off-CPU intervals), from its symbolized frames. */
static void note_blocked_in(struct stack_rec *st, const struct jfr_frame *jf, size_t nj)
{
        const char *names[CTXPROF_MAX_KSTACK];
        size_t nk = 0;
        const char *b;

        for (size_t i = 0; i < nj && nk < CTXPROF_MAX_KSTACK && jf[i].type == JFR_FRAME_KERNEL; i++)
                names[nk++] = jf[i].function;
        b = blocked_in_pick(names, nk);
        snprintf(st->blocked_in, sizeof(st->blocked_in), "%s", b ? b : "");
}

static int add_stack(struct jfr_writer *w, struct symctx *sc, struct stack_rec *st,
                     const struct ctxprof_frame *frames)
{
        size_t nj = 0;
        struct sym_frame sf[SYM_PER_FRAME];

        for (uint32_t i = 0; i < st->n && i < CTXPROF_MAX_FRAMES; i++) {
                const struct ctxprof_frame *f = &frames[i];
                const char *bid;
                const char *mod =
                    module_name(sc->modules, f, sc->modname[i], sizeof(sc->modname[i]), &bid);
                int kernel =
                    f->module_id == CTXPROF_MODULE_KERNEL || (f->flags & CTXPROF_FRAME_KERNEL);
                int k = sc->sym ? symbolize(sc->sym, f, sf, SYM_PER_FRAME) : 0;

                if (k <= 0) {
                        k = 1;
                        sf[0] = (struct sym_frame){.function = NULL, .file = NULL, .line = -1};
                }
                for (int e = 0; e < k; e++) {
                        const char *fn = sf[e].function;
                        if (!fn) {
                                /* Never drop a frame: module+0xOFFSET, and the build id. */
                                snprintf(sc->fallback[i], sizeof(sc->fallback[i]),
                                         "%s+0x%llx%s%s%s", mod, (unsigned long long)f->offset,
                                         *bid ? " [" : "", bid, *bid ? "]" : "");
                                fn = sc->fallback[i];
                        }
                        sc->jf[nj++] = (struct jfr_frame){
                            .function = fn,
                            .module = mod,
                            .line = sf[e].line > 0 ? sf[e].line : -1,
                            .type = jfr_frame_type_for(fn, kernel),
                        };
                }
        }
        note_blocked_in(st, sc->jf, nj);
        return jfr_writer_add_stack(w, st->id, sc->jf, nj, st->truncated);
}

static int cmp_stack_id(const void *a, const void *b)
{
        uint64_t x = ((const struct stack_rec *)a)->id, y = ((const struct stack_rec *)b)->id;
        return (x > y) - (x < y);
}

/* A sample of the job; an off-CPU one (off, else NULL) with the blocking function of its
 * stack (the job's stacks are sorted by id). */
static int add_job_sample(struct jfr_writer *w, const struct job *j, const struct jfr_sample *smp,
                          const struct batch_off *off)
{
        struct stack_rec key = {.id = smp->trace_id};
        const struct stack_rec *st;
        struct jfr_offcpu o;

        if (!off)
                return jfr_writer_add_sample(w, smp);
        st = bsearch(&key, j->stacks, j->nstacks, sizeof(*j->stacks), cmp_stack_id);
        o = (struct jfr_offcpu){.duration_ns = off->duration_ns,
                                .runq_ns = off->runq_ns,
                                .state = (enum jfr_offcpu_state)off->state,
                                .blocked_in = st && st->blocked_in[0] ? st->blocked_in : NULL};
        return jfr_writer_add_offcpu(w, smp, &o);
}

static int write_labels(struct jfr_writer *w, const struct batch *b, const struct lset_ent *e)
{
        struct jfr_label l[JFR_MAX_LABELS_PER_SET];
        size_t n = 0, p = e->off, end = (size_t)e->off + e->len;

        while (p + 8 <= end && n < JFR_MAX_LABELS_PER_SET) {
                uint32_t kl, vl;
                memcpy(&kl, b->arena + p, 4);
                l[n].key = b->arena + p + 4;
                l[n].key_len = kl;
                p += 4 + (size_t)kl;
                memcpy(&vl, b->arena + p, 4);
                l[n].value = b->arena + p + 4;
                l[n].value_len = vl;
                p += 4 + (size_t)vl;
                n++;
        }
        return jfr_writer_add_labels(w, e->id, l, n);
}

/* The chunk's label sets, appended to PATH.labels.pb (messages concatenate into one). */
static int append_snapshot(struct jfr_sink *s)
{
        size_t len;
        const char *p = jfr_writer_labels_snapshot(s->w, &len);
        return s->snapshot_fd >= 0 && len ? write_all(s->snapshot_fd, p, len) : 0;
}

static int write_job(struct jfr_sink *s, struct symctx *sc, struct job *j, size_t *bytes)
{
        struct batch *b = &j->b;
        int err = jfr_writer_begin_chunk(s->w, b->start_wall, b->start_mono);

        for (uint32_t i = 0; !err && i < b->thr_cap; i++)
                if (b->threads[i].tid)
                        err = jfr_writer_add_thread_of(s->w, b->threads[i].tid, b->threads[i].pid,
                                                       b->threads[i].comm, b->threads[i].comm);
        for (size_t i = 0; !err && i < b->res_n; i++)
                err = jfr_writer_add_process(s->w, b->res[i].pid, b->res[i].service,
                                             b->res[i].attributes);
        if (j->nstacks)
                qsort(j->stacks, j->nstacks, sizeof(*j->stacks), cmp_stack_id);
        for (size_t i = 0; !err && i < j->nstacks; i++)
                err = add_stack(s->w, sc, &j->stacks[i], j->frames + j->stacks[i].off);
        for (uint32_t i = 0; !err && i < b->lset_cap; i++)
                if (b->lsets[i].id)
                        err = write_labels(s->w, b, &b->lsets[i]);
        for (size_t i = 0, k = 0; !err && i < b->n; i++) {
                const struct batch_off *off =
                    k < b->noffs && b->offs[k].sample == i ? &b->offs[k++] : NULL;

                err = add_job_sample(s->w, j, &b->samples[i], off);
        }
        if (err) {
                jfr_writer_abort_chunk(s->w);
                return err;
        }
        jfr_writer_set_stats(s->w, &j->stats);
        err = jfr_writer_finish_chunk(s->w, j->end_mono, bytes);
        return err ? err : append_snapshot(s);
}

static void job_free(struct job *j)
{
        if (!j)
                return;
        batch_free(&j->b);
        free(j->stacks);
        free(j->frames);
        free(j);
}

static void *writer_main(void *arg)
{
        struct jfr_sink *s = arg;
        struct symctx sc = {0};

        sc.jf = calloc((size_t)CTXPROF_MAX_FRAMES * SYM_PER_FRAME, sizeof(*sc.jf));
        sc.modname = calloc(CTXPROF_MAX_FRAMES, sizeof(*sc.modname));
        sc.fallback = calloc(CTXPROF_MAX_FRAMES, sizeof(*sc.fallback));

        pthread_mutex_lock(&s->mu);
        for (;;) {
                while (!s->head && !s->stopping)
                        pthread_cond_wait(&s->cv, &s->mu);
                struct job *j = s->head;
                if (!j)
                        break; /* stopping and drained */
                s->head = j->next;
                if (!s->head)
                        s->tail = NULL;
                s->writing_start = j->b.start_mono;
                if (!sc.sym && s->modules) {
                        sc.modules = s->modules;
                        sc.sym = s->o.symbolizer ? s->o.symbolizer : symbolizer_new(s->modules);
                }
                pthread_mutex_unlock(&s->mu);

                size_t bytes = 0;
                int err =
                    (sc.jf && sc.modname && sc.fallback) ? write_job(s, &sc, j, &bytes) : -ENOMEM;

                pthread_mutex_lock(&s->mu);
                s->queued--;
                s->writing_start = 0;
                s->c.latest_error = err;
                if (err) {
                        s->c.chunks_failed++;
                        s->c.samples_dropped += j->b.n;
                        s->c.last_error = err;
                        if (!s->first_error)
                                s->first_error = err;
                } else {
                        s->c.chunks_written++;
                        s->c.bytes_written += bytes;
                        s->c.samples_written += j->b.n;
                }
                pthread_cond_broadcast(&s->cv);
                pthread_mutex_unlock(&s->mu);
                job_free(j);
                pthread_mutex_lock(&s->mu);
        }
        pthread_mutex_unlock(&s->mu);
        if (sc.sym != s->o.symbolizer)
                symbolizer_free(sc.sym);
        free(sc.jf);
        free(sc.modname);
        free(sc.fallback);
        pthread_mutex_lock(&s->mu);
        s->writer_done = 1;
        pthread_mutex_unlock(&s->mu);
        return NULL;
}

/* The per-chunk bounds of the stores, and each process's share of them (one_target: the
 * whole of each, still bounded). */
static int share_init(struct jfr_sink *s)
{
        uint64_t cap = trace_table_capacity(s->tt);
        struct share_limit l[SHARE_STORES] = {
            [SHARE_STACKS] = {cap, cap / 2, cap / 8, cap / STACK_LIGHT_DIV},
            [SHARE_LABEL_BYTES] = {LABEL_STORE_BYTES, LABEL_STORE_BYTES / 2, LABEL_STORE_BYTES / 8,
                                   LABEL_LIGHT_BYTES},
            [SHARE_THREADS] = {THREADS_MAX, THREADS_MAX / 2, THREADS_MAX / 8, THREADS_LIGHT},
        };

        for (int i = 0; s->o.one_target && i < SHARE_STORES; i++)
                l[i] = (struct share_limit){l[i].total, l[i].total, 0, l[i].total};
        s->share = share_new(l);
        return s->share ? 0 : -ENOMEM;
}

int jfr_sink_new(const struct jfr_sink_opts *o, struct jfr_sink **out)
{
        struct jfr_sink *s = calloc(1, sizeof(*s));
        int err;

        *out = NULL;
        if (!s) {
                if (o->use_fd)
                        close(o->fd);
                if (o->use_fd && o->labels_snapshot)
                        close(o->labels_fd);
                return -ENOMEM;
        }
        s->o = *o;
        s->snapshot_fd = o->use_fd && o->labels_snapshot ? o->labels_fd : -1;
        if (!s->o.chunk_period_ns)
                s->o.chunk_period_ns = DEFAULT_PERIOD_NS;
        if (!s->o.max_samples_per_chunk)
                s->o.max_samples_per_chunk = DEFAULT_MAX_SAMPLES;
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, NULL);

        /* the file first: it owns the descriptor from here on, whatever fails later */
        struct host_facts host;
        struct jfr_recording_info info = o->info;
        if (!info.host) {
                host_facts_probe(&host);
                info.host = &host.info;
        }
        err = o->use_fd ? jfr_writer_open_fd(&s->w, o->fd, o->path, (int)o->file_flags, &info)
                        : jfr_writer_open(&s->w, o->path, (int)o->file_flags, &info);
        if (err)
                goto fail;
        struct trace_table_config tc = {.capacity = o->table_capacity};
        s->tt = trace_table_new(&tc);
        if (!s->tt) {
                err = errno ? -errno : -ENOMEM;
                goto fail;
        }
        err = share_init(s);
        if (err)
                goto fail;
        if (o->labels_snapshot && !o->use_fd) {
                char sp[4096];
                if (snprintf(sp, sizeof(sp), "%s.labels.pb", o->path) >= (int)sizeof(sp)) {
                        err = -ENAMETOOLONG;
                        goto fail;
                }
                s->snapshot_fd = open(sp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (s->snapshot_fd < 0) {
                        err = -errno;
                        goto fail;
                }
        }
        err = batch_init(&s->cur);
        if (err)
                goto fail;
        err = -pthread_create(&s->writer, NULL, writer_main, s);
        if (err)
                goto fail;
        s->writer_started = 1;
        *out = s;
        return 0;
fail:
        jfr_sink_free(s);
        return err;
}

struct sample_sink jfr_sink_as_sink(struct jfr_sink *s)
{
        return (struct sample_sink){.ctx = s, .sample = sink_sample};
}

void jfr_sink_set_modules(struct jfr_sink *s, struct modules *m)
{
        pthread_mutex_lock(&s->mu);
        s->modules = m;
        pthread_mutex_unlock(&s->mu);
}

/* Cuts the current batch into a job and queues it. Consuming thread only. */
static int cut(struct jfr_sink *s, uint64_t now, const struct jfr_sink_engine_counters *c)
{
        struct job *j = calloc(1, sizeof(*j));
        struct batch next;
        struct trace_table_stats ts;

        if (!j)
                return -ENOMEM;
        if (batch_init(&next)) {
                free(j);
                return -ENOMEM;
        }
        j->b = s->cur;
        s->cur = next;
        j->end_mono = now;
        if (s->cut_early && now - j->b.start_mono < s->o.chunk_period_ns) {
                pthread_mutex_lock(&s->mu);
                s->c.chunks_cut_early++;
                pthread_mutex_unlock(&s->mu);
        }
        s->cut_early = 0;

        trace_table_stats(s->tt, &ts);
        /* Every id in the batch came from this epoch's ACTIVE (see the file comment). */
        trace_table_rotate(s->tt, collect_stack, j);

        j->stats = (struct jfr_stats){
            .samples = c ? c->samples - s->last.samples : j->b.n,
            .lost = c ? c->lost - s->last.lost : 0,
            .torn_span_reads = c ? c->torn_span_reads - s->last.torn_span_reads : 0,
            .label_faults = c ? c->label_faults - s->last.label_faults : 0,
            .unwind_errors = c ? c->unwind_errors - s->last.unwind_errors : 0,
            .table_used = ts.active_fill,
            .table_capacity = ts.capacity,
            .bpf_ns_per_sample = c ? c->bpf_ns_per_sample : 0,
        };
        j->stats.filtered = c ? c->filtered - s->last.filtered : 0;
        for (size_t i = 0; c && i < JFR_CTX_MISSING_N; i++)
                j->stats.ctx_missing[i] = c->ctx_missing[i] - s->last.ctx_missing[i];
        if (c)
                s->last = *c;
        j->stats.stacks_refused = j->b.refused.stacks;
        j->stats.label_sets_refused = j->b.refused.label_sets;
        j->stats.threads_refused = j->b.refused.threads;
        share_new_chunk(s->share);

        pthread_mutex_lock(&s->mu);
        s->c.refused.stacks += j->b.refused.stacks;
        s->c.refused.label_sets += j->b.refused.label_sets;
        s->c.refused.threads += j->b.refused.threads;
        s->c.refused.processes += j->b.refused.processes;
        s->c.traces_dropped = s->traces_dropped;
        s->c.table_memory_bytes = ts.memory_bytes;
        if (s->tail)
                s->tail->next = j;
        else
                s->head = j;
        s->tail = j;
        s->queued++;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        return 0;
}

int jfr_sink_tick(struct jfr_sink *s, uint64_t now, const struct jfr_sink_engine_counters *c)
{
        unsigned queued;

        if (now < jfr_sink_next_cut(s))
                return 0;
        pthread_mutex_lock(&s->mu);
        queued = s->queued;
        pthread_mutex_unlock(&s->mu);
        if (queued >= JOBS_MAX)
                return 0; /* the writer is behind: this chunk grows until it catches up */
        return cut(s, now, c) ? 0 : 1;
}

uint64_t jfr_sink_next_cut(const struct jfr_sink *s)
{
        uint64_t period = s->o.chunk_period_ns;

        if (s->cut_early && period > CUT_EARLY_MIN_NS)
                period = CUT_EARLY_MIN_NS;
        return s->cur.start_mono + period;
}

void jfr_sink_finish_begin(struct jfr_sink *s, const struct jfr_sink_engine_counters *c)
{
        int err = cut(s, mono_ns(), c);

        pthread_mutex_lock(&s->mu);
        s->finish_err = err;
        s->stopping = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
}

int jfr_sink_finish_done(struct jfr_sink *s)
{
        int done;

        pthread_mutex_lock(&s->mu);
        done = !s->writer_started || s->writer_done;
        pthread_mutex_unlock(&s->mu);
        return done;
}

int jfr_sink_finish_end(struct jfr_sink *s)
{
        int err;

        if (s->writer_started) {
                pthread_join(s->writer, NULL);
                s->writer_started = 0;
        }
        pthread_mutex_lock(&s->mu);
        err = s->finish_err ? s->finish_err : s->first_error;
        pthread_mutex_unlock(&s->mu);
        return err;
}

int jfr_sink_finish(struct jfr_sink *s, const struct jfr_sink_engine_counters *c)
{
        jfr_sink_finish_begin(s, c);
        return jfr_sink_finish_end(s);
}

uint64_t jfr_sink_written_before(struct jfr_sink *s)
{
        uint64_t t;

        pthread_mutex_lock(&s->mu);
        t = s->writing_start ? s->writing_start
            : s->head        ? s->head->b.start_mono
                             : s->cur.start_mono;
        pthread_mutex_unlock(&s->mu);
        return t;
}

void jfr_sink_get_counters(struct jfr_sink *s, struct jfr_sink_counters *out)
{
        pthread_mutex_lock(&s->mu);
        *out = s->c;
        out->traces_dropped = s->traces_dropped;
        pthread_mutex_unlock(&s->mu);
}

void jfr_sink_free(struct jfr_sink *s)
{
        if (!s)
                return;
        if (s->writer_started) {
                pthread_mutex_lock(&s->mu);
                s->stopping = 1;
                pthread_cond_broadcast(&s->cv);
                pthread_mutex_unlock(&s->mu);
                pthread_join(s->writer, NULL);
        }
        while (s->head) {
                struct job *j = s->head;
                s->head = j->next;
                job_free(j);
        }
        batch_free(&s->cur);
        if (s->w)
                jfr_writer_close(s->w);
        if (s->snapshot_fd >= 0)
                close(s->snapshot_fd);
        trace_table_free(s->tt);
        share_free(s->share);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
}
