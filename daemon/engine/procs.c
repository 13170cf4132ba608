/* SPDX-License-Identifier: MIT */
/*
 * procs.c — the sampler's per-process table and its TLS location state machine (see procs.h).
 * Owns the entries and their /proc/PID/maps caches; publishes locations into the BPF map
 * `targets` through the fd it was given. Must never print, never locate, read a process
 * context or look for a perf map on the caller's thread when it has target jobs (they run there,
 * one job per process, with a deadline: engine/target_jobs.h), and never publish a location made
 * for an image the process has exec'ed away from (see proc_locate_tls).
 *
 * States (enum proc_tls_state): SEARCHING → LOCATED when both libctx variables, or the
 * OpenTelemetry thread context pointer, were found;
 * SEARCHING → SEARCHING with a retry time while something is missing (fast while the loader
 * may still be running, slow later: a dlopen may come); any → GAVE_UP when the process is
 * gone, its map entry is, or it failed TLS_MAX_ERRORS times; an exec (proc_new_image) or a
 * file mapped by the process (proc_location_pending, woken by BPF at the mmap/mprotect) puts
 * it back to SEARCHING with a retry due at once.
 *
 * Context from the first sample. While a location is being made (the target was just added,
 * exec'ed, or mapped a library), its map entry is marked pending and every sample BPF takes
 * meanwhile says so; the sampler records such a sample only if it carries context anyway,
 * and counts the others (sampler_stats.ctx_missing.pending). In other words: the TLS
 * location is resolved before the target's samples count. The other choice, holding those
 * samples and completing their context once the location is known, cannot be done right:
 * the context is in the target's memory at the instant of the sample, and read later it is
 * whatever the thread set since, so a held sample would be completed with another request's
 * span. A sample with no context is better than a wrong one, and one not recorded (counted)
 * is better than one shown without the request it belonged to. The window is short: the
 * daemon locates at attach (waiting for the job up to a bound), and at once when BPF reports
 * the mapping; a
 * pending mark that cannot be resolved (ld.so has not relocated, for longer than
 * TLS_PENDING_MAX_NS) is dropped, and its samples are then counted under their own reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "engine/procs.h"
#include "stack/perf_map.h"
#include "tls/tls_locate.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/proc_lines.h"

#define TLS_RETRY_FAST_NS 20000000ull /* 20 ms: just started or exec'ed (loader running) */
/* 2 ms: not relocated yet while the process's samples are held back (pending). Nothing says
 * when ld.so has relocated: the library-load uprobe fires before it does (glibc notifies
 * RT_CONSISTENT first), and only the sys_exit fallback saw its RELRO mprotect. */
#define TLS_RETRY_PENDING_NS 2000000ull
#define TLS_RETRY_SLOW_NS    2000000000ull /* 2 s: nothing found yet (a dlopen may come) */
#define TLS_FAST_WINDOW_NS   3000000000ull /* retry fast for this long after start or exec */
#define TLS_MAX_ERRORS       20
#define PROC_KEEP_DEAD_NS    1000000000ull /* a dead entry's slot is reused after this */
#define NS_PER_MS            1000000ull
#define TLS_PENDING_MAX_NS   200000000ull /* 200 ms: a pending mark outlives no longer */
/* A locating job (maps, ELF files, the loader's slots by process_vm_readv) that has not
 * returned after this is abandoned and its process marked stuck: a real one takes
 * milliseconds (a cold process with hundreds of libraries, a few hundred), a FUSE server can
 * take forever. */
#define TLS_JOB_DEADLINE_NS 2000000000ull /* 2 s */
/* A stuck process whose job came back is given jobs again this many times, then it stays
 * stuck: each time it held a worker past the deadline. */
#define TLS_STUCK_RETURNS_MAX 3

/* The OpenTelemetry process context (engine/otel_process_ctx.h): looked at every
 * PCTX_CHECK_NS, at most every PCTX_RETRY_NS when keys are missing, doubling up to
 * PCTX_CHECK_NS while refreshes find nothing new (a process that names keys it never
 * publishes costs a maps scan a second at most), and up to PCTX_ALONE_NS (50 ms doubled 7
 * times) for a process that has published none yet and whose samples need no key names from
 * it (every sampled process is looked at: OTEP 4719; 1,000 processes with a thread context
 * but no process context would otherwise cost 1,000 maps reads a second). */
#define PCTX_CHECK_NS 1000000000ull
/* ... and with many processes, each one's look comes at most every PCTX_CHECK_SHARE_NS times
 * the live processes: at most 50 routine looks a second over them all (1,000
 * processes: every 20 s each). A sample naming keys its process lacks is looked at within
 * PCTX_CHECK_NS whatever their number. */
#define PCTX_CHECK_SHARE_NS 20000000ull /* 20 ms */
#define PCTX_RETRY_NS       50000000ull
#define PCTX_ALONE_NS       6400000000ull
/* A process's first look waits this long at most (for its locating job, then for its own):
 * its first samples are named by the service the context names. */
#define PCTX_FIRST_WAIT_NS 50000000ull /* 50 ms */
/* Those waits hold the consuming thread, so together they take at most half of it: a token
 * bucket refilled at half the wall time, holding at most two waits' worth. Past it a first
 * look does not wait (counted): a thousand processes seen at once cost the loop 100 ms per
 * 200 ms until the bucket refills, not 50-100 ms each (a minute and more of lost samples). */
#define PCTX_FIRST_WAIT_BURST_NS (2 * PCTX_FIRST_WAIT_NS)
#define PCTX_FIRST_WAIT_MIN_NS   1000000ull /* a shorter wait is not made: 1 ms */

/* What a job on a target reads and finds: its own copy of everything (engine/target_jobs.h). */
enum proc_job_kind { PROC_JOB_LOCATE, PROC_JOB_PCTX, PROC_JOB_PERF_MAP };
struct proc_job {
        enum proc_job_kind kind;
        pid_t pid;
        /* p->pin's own copy: the job reads by pid, and what it read is p's only if p still
         * lives once it is done (util/proc_pin.h); unpinned when the dup failed (the job
         * then ends in -ESRCH) */
        struct proc_pin pin;
        uint64_t image; /* p->image at the start */
        /* PROC_JOB_LOCATE */
        uint64_t exec_gen; /* BPF's exec count read before the image was */
        int err;
        struct ctxprof_tls_target loc;
        struct target_stats st; /* the locator's refusals, added to the table's at the end */
        /* PROC_JOB_PCTX: the refreshed context (keys owned by the job until taken) */
        struct otel_pctx pc;
        int ret;
        uint64_t now;
        uint64_t delay_ns; /* tests: t->pctx_delay_ns, slept before the read */
        uint32_t owner;    /* p->owner: whose parser lane decodes its payload */
        struct otel_pctx_stats pst;
        /* PROC_JOB_PERF_MAP: the perf map found (a descriptor owned by the job until taken,
         * -1 when none) and its identity */
        int pmap_fd;
        struct perf_map_file pmap;
};

/* Tests only (fault injection): sleep ns (0: return). */
static void test_delay(uint64_t ns)
{
        struct timespec d = {.tv_sec = (time_t)(ns / 1000000000ull),
                             .tv_nsec = (long)(ns % 1000000000ull)};

        if (ns)
                nanosleep(&d, NULL);
}

/* A job of kind for p, or NULL (-ENOMEM). */
static struct proc_job *proc_job_new(enum proc_job_kind kind, const struct proc *p)
{
        struct proc_job *jb = calloc(1, sizeof(*jb));

        if (!jb)
                return NULL;
        *jb = (struct proc_job){.kind = kind, .pid = p->pid, .image = p->image, .pmap_fd = -1};
        proc_pin_dup(&jb->pin, &p->pin);
        return jb;
}

static void proc_job_drop(void *arg)
{
        struct proc_job *jb = arg;

        otel_pctx_clear(&jb->pc);
        if (jb->pmap_fd >= 0)
                close(jb->pmap_fd);
        proc_pin_close(&jb->pin);
        free(jb);
}

_Static_assert((PROCS_INDEX_SLOTS & (PROCS_INDEX_SLOTS - 1)) == 0 &&
                   PROCS_INDEX_SLOTS >= 2 * PROCS_MAX,
               "the pid index is a power of two, at most half used");

int procs_init(struct procs *t, struct modules *modules)
{
        memset(t, 0, sizeof(*t));
        t->targets_fd = -1;
        t->exec_gens_fd = -1;
        t->modules = modules;
        t->v = calloc(PROCS_MAX, sizeof(*t->v));
        t->index = calloc(PROCS_INDEX_SLOTS, sizeof(*t->index));
        if (t->v && t->index)
                return 0;
        free(t->v);
        free(t->index);
        t->v = NULL;
        t->index = NULL;
        return -ENOMEM;
}

static uint32_t pid_slot(pid_t pid)
{
        return (uint32_t)(hash_mix64((uint32_t)pid) >> 40) & (PROCS_INDEX_SLOTS - 1);
}

/* v[i] is pid's newest entry. The index holds one slot per distinct pid of v (at most
 * PROCS_MAX), so a free slot is always found. */
static void index_put(struct procs *t, pid_t pid, size_t i)
{
        uint32_t k = pid_slot(pid);

        while (t->index[k].idx1 && t->index[k].pid != pid)
                k = (k + 1) & (PROCS_INDEX_SLOTS - 1);
        t->index[k] = (struct proc_slot){.pid = pid, .idx1 = (uint32_t)i + 1};
}

/* After entries moved: every pid to its newest entry again (newest last, so later wins). */
static void index_rebuild(struct procs *t)
{
        memset(t->index, 0, PROCS_INDEX_SLOTS * sizeof(*t->index));
        for (size_t i = 0; i < t->n; i++)
                index_put(t, t->v[i].pid, i);
}

void procs_free(struct procs *t)
{
        size_t i;

        if (!t->v)
                return;
        for (i = 0; i < t->n; i++) {
                proc_maps_free(t->v[i].maps);
                otel_pctx_clear(&t->v[i].otel);
                proc_pin_close(&t->v[i].pin);
        }
        free(t->v);
        free(t->index);
        t->v = NULL;
        t->index = NULL;
        t->n = 0;
}

struct proc *procs_find(struct procs *t, pid_t pid)
{
        /* A reused pid maps to the latest process: the index keeps its newest entry. */
        for (uint32_t k = pid_slot(pid); t->index[k].idx1; k = (k + 1) & (PROCS_INDEX_SLOTS - 1))
                if (t->index[k].pid == pid)
                        return &t->v[t->index[k].idx1 - 1];
        return NULL;
}

/* The real uid of the process of procdir (its pinned /proc/PID; its status Uid: line, not the
 * owner of /proc/PID: a process that is not dumpable shows root there), PROC_OWNER_UNKNOWN
 * when it cannot be read. */
static uint32_t read_owner(int procdir)
{
        char v[64];
        unsigned long uid;

        if (procdir < 0 || proc_status_value_at(procdir, ".", "Uid", v, sizeof(v), NULL) ||
            sscanf(v, "%lu", &uid) != 1 || uid >= PROC_OWNER_UNKNOWN)
                return PROC_OWNER_UNKNOWN;
        return (uint32_t)uid;
}

uint32_t procs_read_owner(pid_t pid)
{
        int dir = proc_pid_dir(pid);
        uint32_t uid = read_owner(dir);

        if (dir >= 0)
                close(dir);
        return uid;
}

static void read_comm(int procdir, char *buf, size_t len)
{
        ssize_t n;
        int fd;

        buf[0] = '\0';
        fd = procdir < 0 ? -1 : openat(procdir, "comm", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        n = read(fd, buf, len - 1);
        close(fd);
        if (n <= 0) {
                buf[0] = '\0';
                return;
        }
        buf[n] = '\0';
        if (buf[n - 1] == '\n')
                buf[n - 1] = '\0';
}

struct proc *procs_new(struct procs *t, pid_t pid, const char *comm, uint64_t now)
{
        struct proc *p;

        if (t->n == PROCS_MAX)
                procs_compact(t, now);
        if (t->n == PROCS_MAX)
                return NULL;
        p = &t->v[t->n++];
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        index_put(t, pid, t->n - 1);
        /* pinned first: everything read of it below and later is checked to be its own (a
         * pin that fails, the process gone already, fails every read) */
        proc_pin_open(&p->pin, pid);
        int dir = proc_pin_dir(&p->pin, &t->target);
        p->alive = 1;
        p->tls_state = PROC_TLS_SEARCHING;
        p->tls_since_ns = now;
        if (comm && comm[0])
                snprintf(p->name, sizeof(p->name), "%s", comm);
        else
                read_comm(dir, p->name, sizeof(p->name));
        if (!p->name[0])
                snprintf(p->name, sizeof(p->name), "pid-%d", (int)pid);
        p->owner = read_owner(dir);
        if (dir >= 0)
                close(dir);
        proc_maps_open_pinned(t->modules, &p->pin,
                              &p->maps); /* may fail: retried on first sample */
        t->processes++;
        return p;
}

void proc_mark_dead(struct proc *p, int forget, uint64_t now)
{
        p->alive = 0;
        p->dead_since_ns = now;
        if (forget)
                p->forget_pending = 1;
}

/* Keeps the order (newest last) so a reused pid finds its latest process. */
void procs_compact(struct procs *t, uint64_t now)
{
        size_t i, j = 0;

        for (i = 0; i < t->n; i++) {
                struct proc *p = &t->v[i];

                if (!p->alive && !p->forget_pending && now - p->dead_since_ns > PROC_KEEP_DEAD_NS) {
                        proc_maps_free(p->maps);
                        otel_pctx_clear(&p->otel);
                        proc_pin_close(&p->pin);
                        continue;
                }
                if (i != j)
                        t->v[j] = *p;
                j++;
        }
        if (j != t->n) {
                t->n = j;
                index_rebuild(t);
        }
}

void proc_new_image(struct procs *t, struct proc *p, uint64_t now)
{
        p->image++; /* a job in flight read the old image: its result is discarded */
        proc_maps_free(p->maps);
        p->maps = NULL;
        proc_maps_open_pinned(t->modules, &p->pin, &p->maps);
        otel_pctx_clear(&p->otel); /* the new image publishes its own */
        p->tls_state = PROC_TLS_SEARCHING;
        p->tls_errors = 0;
        p->tls_next_ns = 0;
        p->tls_since_ns = now;
        memset(&p->published, 0, sizeof(p->published));
        proc_location_pending(p, now); /* BPF marked the entry at the exec */
        if (p->stuck)
                p->tls_state = PROC_TLS_GAVE_UP;
}

void proc_location_pending(struct proc *p, uint64_t now)
{
        /* Even after giving up: one more attempt clears the mark (with TLS_MAX_ERRORS
         * reached, the next error gives up again at once). */
        if (!p->alive)
                return;
        if (!p->pending_since_ns)
                p->pending_since_ns = now;
        if (p->stuck)
                return; /* no more jobs: procs_locate_due ends the mark */
        if (p->job_id)
                p->locate_again = 1; /* the job may have read the maps before the mapping */
        p->tls_state = PROC_TLS_SEARCHING;
        p->tls_next_ns = 0;
}

/* 1 if p's entry in BPF says a location is pending. */
static int bpf_pending(const struct procs *t, const struct proc *p)
{
        struct ctxprof_tls_target cur;
        __u32 key = (__u32)p->pid;

        return !bpf_map_lookup_elem(t->targets_fd, &key, &cur) &&
               (cur.flags & CTXPROF_TLS_F_PENDING);
}

void proc_mapped(struct procs *t, struct proc *p, uint64_t now)
{
        struct ctxprof_tls_target cur;
        __u32 key = (__u32)p->pid;

        if (p->alive && !p->pending_since_ns && !p->stuck &&
            !bpf_map_lookup_elem(t->targets_fd, &key, &cur) &&
            !(cur.flags & CTXPROF_TLS_F_PENDING)) {
                /* BPF only ever ORs the flag in, or resets the entry at an exec: an update
                 * landing after such a reset carries the old exec count, which BPF refuses */
                cur.flags |= CTXPROF_TLS_F_PENDING;
                bpf_map_update_elem(t->targets_fd, &key, &cur, BPF_EXIST);
        }
        proc_location_pending(p, now);
}

/* Write loc into the map (clearing the pending mark). 0, or -errno (the entry is gone). */
static int proc_publish(struct procs *t, struct proc *p, struct ctxprof_tls_target *loc)
{
        __u32 key = (__u32)p->pid;

        loc->generation = ++p->generation;
        loc->flags = 0;
        if (bpf_map_update_elem(t->targets_fd, &key, loc, BPF_EXIST))
                return -errno;
        p->published = *loc;
        p->pending_since_ns = 0;
        return 0;
}

/* libctx's two variables, an OpenTelemetry thread context writer (OTEP 4947) or a Go
 * program's goroutine labels: nothing more to look for. */
static int location_complete(const struct ctxprof_tls_target *loc)
{
        return (loc->labels.mode != CTXPROF_TLS_NONE && loc->span.mode != CTXPROF_TLS_NONE) ||
               loc->otel.mode != CTXPROF_TLS_NONE || loc->go.kind != CTXPROF_GO_LABELS_NONE;
}

/* Nothing new to publish, but the pending mark must not outlive the attempt: the last
 * location again (the entry may have changed since only by BPF's exec reset, which its
 * exec_gen check covers). */
static void proc_end_pending(struct procs *t, struct proc *p)
{
        struct ctxprof_tls_target loc = p->published;

        if (p->pending_since_ns && proc_publish(t, p, &loc))
                p->tls_state = PROC_TLS_GAVE_UP;
}

/* The process's exec count as BPF keeps it (see ctxprof/tls_target.h): no entry = 0. */
static uint64_t proc_exec_gen(const struct procs *t, pid_t pid)
{
        __u32 key = (__u32)pid;
        __u64 gen;

        if (bpf_map_lookup_elem(t->exec_gens_fd, &key, &gen))
                return 0;
        return gen;
}

/*
 * A location of p was made (err, loc: what tls_locate returned, exec_gen: BPF's exec count read
 * before it started): publish it. An exec can come at any point: the location is tagged with
 * the exec count read before anything of the image was, so if the update lands after BPF's
 * reset for a newer image, BPF refuses it (and the exec event brings a new location).
 */
static void proc_located(struct procs *t, struct proc *p, uint64_t now, uint64_t exec_gen, int err,
                         struct ctxprof_tls_target *loc)
{
        if (err == -ESRCH) {
                p->tls_state = PROC_TLS_GAVE_UP;
                return;
        }
        if (err == -EAGAIN || err == -EBUSY) {
                /* ld.so has not relocated yet, or the parser helper could not be asked (busy
                 * with another thread's request, or restarting): look again soon, sooner
                 * while samples wait; nothing is published, nothing counted against p */
                p->tls_next_ns =
                    now + (p->pending_since_ns ? TLS_RETRY_PENDING_NS : TLS_RETRY_FAST_NS);
                if (p->pending_since_ns && now - p->pending_since_ns > TLS_PENDING_MAX_NS)
                        proc_end_pending(t, p);
                return;
        }
        if (err) {
                /* One variable may still be usable (tls_locate leaves the failed one NONE). */
                t->tls_errors++;
                if (++p->tls_errors >= TLS_MAX_ERRORS)
                        p->tls_state = PROC_TLS_GAVE_UP;
                if (!ctxprof_tls_target_any(loc)) {
                        p->tls_next_ns = now + TLS_RETRY_SLOW_NS;
                        proc_end_pending(t, p);
                        return;
                }
        }
        loc->exec_gen = exec_gen;
        int go_new = loc->go.kind != p->published.go.kind; /* counted once per image */
        /* Tests: the daemon preempted between reading the image and publishing. */
        test_delay(t->locate_delay_ns);
        if (proc_publish(t, p, loc)) {
                /* The process is gone (or never made it into the map): nothing to sample. */
                p->tls_state = PROC_TLS_GAVE_UP;
                return;
        }
        t->tls_located++;
        if (go_new && loc->go.kind == CTXPROF_GO_LABELS_HMAP)
                t->go_located++;
        else if (go_new && loc->go.kind == CTXPROF_GO_LABELS_UNKNOWN)
                t->go_layout_unknown++;
        if (location_complete(loc)) {
                p->tls_state = PROC_TLS_LOCATED;
                return;
        }
        /* Something is missing: a library may still be loading or be dlopen'ed later. */
        p->tls_next_ns = now + (now - p->tls_since_ns < TLS_FAST_WINDOW_NS ? TLS_RETRY_FAST_NS
                                                                           : TLS_RETRY_SLOW_NS);
}

/* What a job read by pid is its process's only if that process still lives now: while it
 * lives nothing else can hold the pid. Otherwise the pid may have gone to another process
 * (another user's) midway, and everything the job found is dropped (-ESRCH). */
static void proc_job_pinned(struct proc_job *jb)
{
        if (!proc_pin_check(&jb->pin, &jb->st))
                return;
        if (jb->kind == PROC_JOB_LOCATE) {
                memset(&jb->loc, 0, sizeof(jb->loc));
                jb->err = -ESRCH;
        } else if (jb->kind == PROC_JOB_PCTX) {
                uint64_t published = jb->pc.published_ns;

                otel_pctx_clear(&jb->pc);
                jb->pc.published_ns = published;
                jb->ret = -ESRCH;
        } else if (jb->pmap_fd >= 0) {
                close(jb->pmap_fd);
                jb->pmap_fd = -1;
        }
}

static void proc_job_run(void *arg)
{
        struct proc_job *jb = arg;

        if (jb->kind == PROC_JOB_LOCATE) {
                jb->err = tls_locate(jb->pid, &jb->loc, &jb->st);
        } else if (jb->kind == PROC_JOB_PCTX) {
                test_delay(jb->delay_ns); /* tests: a slow read (a loaded host, a busy pool) */
                jb->ret = otel_pctx_refresh(jb->pid, jb->owner, &jb->pc, jb->now, &jb->pst);
        } else {
                jb->pmap_fd = perf_map_find(jb->pid, &jb->pmap, &jb->st);
        }
        proc_job_pinned(jb);
}

/* *dst += *src, counter by counter (all uint64_t). */
static void pctx_stats_add(struct otel_pctx_stats *dst, const struct otel_pctx_stats *src)
{
        const uint64_t *s = (const uint64_t *)src;
        uint64_t *d = (uint64_t *)dst;

        for (unsigned i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
                d[i] += s[i];
}

/* A process-context refresh of p ended with ret (otel_pctx_refresh's): take what it read,
 * and set when to look next. */
static void pctx_applied(struct proc *p, struct otel_pctx *pc, int ret, uint64_t now)
{
        uint64_t next = p->otel.next_ns, backoff = p->otel.backoff_ns;
        int keys_wanted = p->otel_keys_wanted;

        if (ret == 1) {
                otel_pctx_clear(&p->otel);
                p->otel = *pc;
                memset(pc, 0, sizeof(*pc));
        } else {
                p->otel.published_ns = pc->published_ns; /* a payload that did not decode */
                p->otel.at = pc->at;
                p->otel.quick_checks = pc->quick_checks;
        }
        p->otel.checked_ns = now;
        p->otel.next_ns = next;
        p->otel.backoff_ns = backoff;
        if (ret == 1 || !p->otel.backoff_ns)
                p->otel.backoff_ns = PCTX_RETRY_NS;
        else if (p->otel.backoff_ns < PCTX_CHECK_NS ||
                 (p->otel.backoff_ns < PCTX_ALONE_NS && !p->otel.published_ns && !keys_wanted))
                p->otel.backoff_ns *= 2;
        p->otel_keys_wanted = 0;
        p->otel.next_ns = now + p->otel.backoff_ns;
}

/* p's job, or NULL (a process the table dropped since: its result is of no use). */
static struct proc *proc_of_job(struct procs *t, uint64_t id)
{
        for (size_t i = 0; i < t->n; i++)
                if (t->v[i].job_id == id)
                        return &t->v[i];
        return NULL;
}

/* The worker of stuck job id came back (what it waited on was answered, or failed): its
 * process gets jobs again, located anew after a pause, unless it has stalled a worker
 * TLS_STUCK_RETURNS_MAX times already. */
static void proc_job_returned(struct procs *t, uint64_t id, uint64_t now)
{
        struct proc *p = NULL;

        for (size_t i = 0; i < t->n && !p; i++)
                if (t->v[i].stuck_job == id)
                        p = &t->v[i];
        if (!p)
                return;
        p->stuck_job = 0;
        if (!p->alive || !p->stuck || ++p->stuck_returns > TLS_STUCK_RETURNS_MAX)
                return;
        p->stuck = 0;
        t->stuck_returned++;
        if (p->tls_errors >= TLS_MAX_ERRORS)
                p->tls_state = PROC_TLS_GAVE_UP;
        else
                p->tls_state =
                    location_complete(&p->published) ? PROC_TLS_LOCATED : PROC_TLS_SEARCHING;
        p->tls_next_ns = now + TLS_RETRY_SLOW_NS;
        if (p->otel.next_ns < now + TLS_RETRY_SLOW_NS)
                p->otel.next_ns = now + TLS_RETRY_SLOW_NS;
}

/* p's perf-map job ended: the perf map it found becomes p's module for anonymous code. */
static void perf_map_applied(struct proc *p, struct proc_job *jb)
{
        if (jb->pmap_fd < 0 || !p->maps)
                return;
        /* taken, also on failure (registry full: its frames stay unknown) */
        proc_maps_set_perf_map(p->maps, jb->pmap_fd, &jb->pmap);
        jb->pmap_fd = -1;
}

void procs_job_done(void *ctx, uint64_t id, enum target_job_end end, void *arg)
{
        struct proc_job *lj = arg;
        struct procs *t = ctx;
        struct proc *p;
        uint64_t now = mono_ns();

        if (end == TARGET_JOB_RETURNED) {
                proc_job_returned(t, id, now);
                return;
        }
        p = proc_of_job(t, id);
        if (lj) {
                target_stats_add(&t->target, &lj->st);
                if (t->pctx_stats)
                        pctx_stats_add(t->pctx_stats, &lj->pst);
        }
        if (!p)
                return;
        p->job_id = 0;
        if (!lj) {
                /* Past its deadline (or refused: its owner's workers are stuck): the process
                 * is marked, its samples go on without context (the pending mark must not
                 * hold them back) until the job's worker comes back, if ever. */
                p->stuck = 1;
                p->stuck_job = end == TARGET_JOB_ABANDONED ? id : 0;
                t->stuck++;
                p->tls_state = PROC_TLS_GAVE_UP;
                proc_end_pending(t, p);
                return;
        }
        if (!p->alive || lj->image != p->image)
                return; /* gone, or exec'ed since: the new image is located anew */
        if (lj->kind == PROC_JOB_PCTX) {
                pctx_applied(p, &lj->pc, lj->ret, lj->now);
                return;
        }
        if (lj->kind == PROC_JOB_PERF_MAP) {
                perf_map_applied(p, lj);
                return;
        }
        /* A file was mapped after the job read the maps: the event was read meanwhile
         * (locate_again), or BPF marked the entry and the event is still in the ring. The
         * location publishes what the job found and clears the mark; the samples of the new
         * file's code would go unlabelled until the next location, so the mark is set again
         * and the process located again at once. */
        int again = p->locate_again || (!p->pending_since_ns && bpf_pending(t, p));
        p->locate_again = 0;
        proc_located(t, p, now, lj->exec_gen, lj->err, &lj->loc);
        if (again && p->alive && p->tls_state != PROC_TLS_GAVE_UP)
                proc_mapped(t, p, now);
}

/* Locate the TLS variables of a target already in the map and publish the result (at the
 * end of its job, when locating runs on t->jobs). */
void proc_locate_tls(struct procs *t, struct proc *p, uint64_t now)
{
        struct proc_job *lj;
        uint64_t exec_gen;

        if (!p->alive || p->stuck || p->job_id || p->tls_state == PROC_TLS_GAVE_UP ||
            now < p->tls_next_ns)
                return;
        exec_gen = proc_exec_gen(t, p->pid);
        lj = proc_job_new(PROC_JOB_LOCATE, p);
        if (!lj) {
                p->tls_next_ns = now + TLS_RETRY_FAST_NS;
                return;
        }
        lj->exec_gen = exec_gen;
        if (!t->jobs) { /* no pool: the job runs here */
                proc_job_run(lj);
                target_stats_add(&t->target, &lj->st);
                proc_located(t, p, now, exec_gen, lj->err, &lj->loc);
                proc_job_drop(lj);
                return;
        }
        p->locate_again = 0;
        p->job_id = target_jobs_submit(t->jobs, p->owner, proc_job_run, proc_job_drop, lj,
                                       TLS_JOB_DEADLINE_NS);
        if (!p->job_id) {
                /* every worker stuck in another target's job: retried later, no samples
                 * held back meanwhile */
                p->tls_next_ns = now + TLS_RETRY_SLOW_NS;
                proc_end_pending(t, p);
        }
}

void proc_locate_wait(struct procs *t, struct proc *p, uint64_t until_ns)
{
        if (!t->jobs || !p->job_id || !target_jobs_wait(t->jobs, p->job_id, until_ns))
                return;
        target_jobs_collect(t->jobs, mono_ns(), procs_job_done, t);
}

/* A process with a job in flight, or NULL. */
static struct proc *proc_with_job(struct procs *t)
{
        for (size_t i = 0; i < t->n; i++)
                if (t->v[i].job_id)
                        return &t->v[i];
        return NULL;
}

void procs_jobs_wait(struct procs *t, uint64_t idle_ns, uint64_t until_ns)
{
        uint64_t progress = mono_ns();
        struct proc *p;

        if (!t->jobs)
                return;
        while ((p = proc_with_job(t))) {
                uint64_t stop = progress + idle_ns < until_ns ? progress + idle_ns : until_ns;

                if (mono_ns() >= stop || !target_jobs_wait(t->jobs, p->job_id, stop))
                        return;
                target_jobs_collect(t->jobs, mono_ns(), procs_job_done, t);
                progress = mono_ns();
        }
}

/* The time a first look may wait now, the bucket refilled to now. */
static uint64_t first_wait_allowed(struct procs *t, uint64_t now)
{
        if (!t->first_wait_at_ns) {
                t->first_wait_tokens_ns = PCTX_FIRST_WAIT_BURST_NS;
        } else if (now > t->first_wait_at_ns) {
                t->first_wait_tokens_ns += (now - t->first_wait_at_ns) / 2;
                if (t->first_wait_tokens_ns > PCTX_FIRST_WAIT_BURST_NS)
                        t->first_wait_tokens_ns = PCTX_FIRST_WAIT_BURST_NS;
        }
        t->first_wait_at_ns = now;
        return t->first_wait_tokens_ns < PCTX_FIRST_WAIT_NS ? t->first_wait_tokens_ns
                                                            : PCTX_FIRST_WAIT_NS;
}

/* A first look waits for p's job in flight, within the bucket (see PCTX_FIRST_WAIT_BURST_NS). */
static void first_look_wait(struct procs *t, struct proc *p)
{
        uint64_t start, allowed, took;

        if (!t->jobs || !p->job_id)
                return;
        start = mono_ns();
        allowed = first_wait_allowed(t, start);
        if (allowed < PCTX_FIRST_WAIT_MIN_NS) {
                t->first_wait_skips++;
                return;
        }
        proc_locate_wait(t, p, start + allowed);
        took = mono_ns() - start;
        t->first_wait_tokens_ns -= took < t->first_wait_tokens_ns ? took : t->first_wait_tokens_ns;
}

/* The least time between two routine looks at one process's context (PCTX_CHECK_SHARE_NS):
 * by the live processes (dead entries stay in the table until it is full). */
static uint64_t pctx_check_interval(const struct procs *t)
{
        uint64_t shared = (uint64_t)t->live * PCTX_CHECK_SHARE_NS;

        return shared > PCTX_CHECK_NS ? shared : PCTX_CHECK_NS;
}

void proc_pctx_refresh(struct procs *t, struct proc *p, uint64_t now, int keys_missing)
{
        int first = !p->otel.checked_ns;
        struct proc_job *jb;

        if (keys_missing && !p->otel_keys_wanted) {
                p->otel_keys_wanted = 1; /* looked at within PCTX_CHECK_NS, whatever the backoff */
                if (p->otel.next_ns > p->otel.checked_ns + PCTX_CHECK_NS)
                        p->otel.next_ns = p->otel.checked_ns + PCTX_CHECK_NS;
        }
        if (!p->alive || p->stuck || now < p->otel.next_ns)
                return;
        if (now - p->otel.checked_ns < pctx_check_interval(t) && !keys_missing)
                return;
        if (first)
                first_look_wait(t, p); /* for its locating job */
        if (p->job_id || p->stuck)
                return; /* one job per target: looked at again at a later sample */
        jb = proc_job_new(PROC_JOB_PCTX, p);
        if (!jb)
                return;
        jb->now = now;
        jb->delay_ns = t->pctx_delay_ns;
        jb->owner = p->owner;
        jb->pc.published_ns = p->otel.published_ns;
        jb->pc.at = p->otel.at;
        jb->pc.quick_checks = p->otel.quick_checks;
        if (!t->jobs) {
                proc_job_run(jb);
                target_stats_add(&t->target, &jb->st);
                if (t->pctx_stats)
                        pctx_stats_add(t->pctx_stats, &jb->pst);
                pctx_applied(p, &jb->pc, jb->ret, now);
                proc_job_drop(jb);
                return;
        }
        p->job_id = target_jobs_submit(t->jobs, p->owner, proc_job_run, proc_job_drop, jb,
                                       TLS_JOB_DEADLINE_NS);
        p->otel.checked_ns = now; /* (every worker stuck: not again before PCTX_CHECK_NS) */
        if (first)
                first_look_wait(t, p); /* for its own */
}

void proc_perf_map_due(struct procs *t, struct proc *p, uint64_t now)
{
        struct proc_job *jb;

        if (!p->alive || p->stuck || p->job_id || !proc_maps_perf_map_wanted(p->maps))
                return; /* one job per target: asked again at a later sample */
        proc_maps_perf_map_looked(p->maps, now);
        jb = proc_job_new(PROC_JOB_PERF_MAP, p);
        if (!jb)
                return;
        if (!t->jobs) {
                proc_job_run(jb);
                target_stats_add(&t->target, &jb->st);
                perf_map_applied(p, jb);
                proc_job_drop(jb);
                return;
        }
        p->job_id = target_jobs_submit(t->jobs, p->owner, proc_job_run, proc_job_drop, jb,
                                       TLS_JOB_DEADLINE_NS);
}

void procs_locate_due(struct procs *t, uint64_t now)
{
        size_t i, live = 0;

        for (i = 0; i < t->n; i++) {
                struct proc *p = &t->v[i];

                live += p->alive;
                /* A located process is located again only when it changes: exec, or a file
                 * mapped (proc_location_pending). */
                if (p->alive && p->stuck && p->pending_since_ns)
                        proc_end_pending(t, p); /* no job will: samples go on without */
                /* Its job still waits for a worker (every thread stuck in other targets'
                 * jobs) after the time a job may take: samples go on without context. */
                if (p->alive && p->job_id && p->pending_since_ns &&
                    now - p->pending_since_ns > TLS_JOB_DEADLINE_NS)
                        proc_end_pending(t, p);
                if (p->alive && p->tls_state == PROC_TLS_SEARCHING && !p->job_id)
                        proc_locate_tls(t, p, now);
        }
        t->live = live;
}

int procs_retry_timeout(const struct procs *t, uint64_t now, int timeout_ms)
{
        size_t i;

        for (i = 0; i < t->n; i++) {
                const struct proc *p = &t->v[i];
                int64_t ms;

                if (!p->alive || p->tls_state != PROC_TLS_SEARCHING || p->job_id || p->stuck)
                        continue;
                /* rounded up: a retry less than 1 ms away is no reason to spin */
                ms = p->tls_next_ns > now
                         ? (int64_t)((p->tls_next_ns - now + NS_PER_MS - 1) / NS_PER_MS)
                         : 0;
                if (ms < timeout_ms)
                        timeout_ms = (int)ms;
        }
        return timeout_ms;
}

int proc_exited(const struct proc *p)
{
        if (p->pin.pidfd < 0)
                return proc_gone(p->pid);
        return proc_pin_check(&p->pin, NULL) == -ESRCH;
}

int proc_gone(pid_t pid)
{
        char path[64], buf[512], *rp;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 1;
        buf[n] = '\0';
        rp = strrchr(buf, ')');
        return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X' || rp[2] == 'x');
}

#define PROC_TASK_DIR_LINKS 2 /* /proc/PID/task: "." and "..", then one per thread */

unsigned proc_threads(struct proc *p, uint64_t now)
{
        char path[48];
        struct stat st;

        uint64_t life =
            PROC_THREADS_STALE_NS - hash_mix64((uint64_t)p->pid) % PROC_THREADS_SPREAD_NS;

        if (p->threads_ns && now - p->threads_ns < life)
                return p->threads;
        p->threads_ns = now;
        snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
        p->threads = stat(path, &st) || st.st_nlink < PROC_TASK_DIR_LINKS
                         ? 0
                         : (unsigned)(st.st_nlink - PROC_TASK_DIR_LINKS);
        return p->threads;
}
