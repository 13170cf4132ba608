/* SPDX-License-Identifier: MIT */
/*
 * jfr_writer.c — builds JFR chunks in memory and hands each one, complete, to jfr_file
 * (see jfr_writer.h for the contract and docs/jfr.md for the event design). Owns the
 * encoding and the per-file key spaces. Must never: print, touch the file other than
 * through jfr_file, probe the host, reuse a constant-pool key for another value within a
 * file, or emit a varint longer than 9 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jfr/jfr_buf.h"
#include "jfr/jfr_context_pool.h"
#include "jfr/jfr_dict.h"
#include "jfr/jfr_file.h"
#include "jfr/jfr_metadata.h"
#include "jfr/jfr_writer.h"
#include "util/grow.h"

/* File ticks are 40 µs: with the 10 s slack, every sample of a chunk of up to 73 s (the
 * default is 60 s) has a startTime below 2^21 ticks, a 3-byte varint (1 µs ticks took 4):
 * one byte less per sample. At the usual 99-999 Hz that loses nothing; at rates above
 * 25 kHz per CPU, samples of one CPU less than 40 µs apart share a tick. */
#define TICKS_PER_SECOND 25000ull
#define NS_PER_TICK      (1000000000ull / TICKS_PER_SECOND)
/* CPU samples are STATE_DEFAULT, as async-profiler writes them: its converter's --cpu keeps
 * exactly those (STATE_RUNNABLE counted as wall clock); Pyroscope counts any state but
 * STATE_SLEEPING as CPU. */
#define STATE_CPU_KEY     1u
#define PID_MAX_LIMIT     4194304u /* no tid reaches it (Linux's 2^22): synthetic keys start there */
#define KEY_LIMIT         0x7fffffffu /* keys stay < 2^31 (grafana reads them as uint32) */
#define FIRST_CAP         64          /* elements of a key-indexed array at first growth */
#define SAMPLES_FIRST_CAP 1024        /* samples of a chunk at first growth */

/* A chunk's sample until the chunk is encoded: 48 B (a chunk holds up to a million). An
 * off-CPU interval's own fields are stored apart (most samples are CPU samples). */
struct stored_sample {
        uint64_t ticks, trace_id;
        uint64_t span_id, root_span_id;
        uint32_t context_id, thread_key; /* thread_key 0: resolve by tid */
        pid_t tid;
        uint32_t off; /* off-CPU: index in offs + 1; 0 = a CPU sample */
};
struct stored_off {
        uint64_t duration_ns, runq_ns;
        uint32_t state, blocked_in; /* blocked_in: index in offcpu_strs + 1, 0 = none */
};
_Static_assert(sizeof(struct stored_sample) == 48, "a stored sample is 48 bytes");
_Static_assert(sizeof(struct stored_off) == 24, "an off-CPU interval adds 24 bytes");

struct jfr_writer {
        struct jfr_file *file;
        char *rec_name, *rec_event, *rec_callgraph, *destination, *os_version, *cpu_name, *cpu_desc;
        char *rec_filter; /* the context filter's text, NULL = none */
        uint32_t freq_hz, sockets, cores, hw_threads;
        uint64_t rec_start_wall_ns;
        struct jfr_writer_counters c;

        /* per file: next fresh key of each per-chunk pool, and thread identities */
        uint32_t next_sym, next_class, next_method, next_stack, next_value, next_context;
        struct jfr_strtab thread_ids;    /* identity bytes -> identity index */
        struct jfr_u64map thread_idx_of; /* thread key -> identity index */
        struct jfr_u64map thread_key_of; /* identity index -> thread key */

        /* per chunk */
        int in_chunk;
        uint64_t seq, start_wall_ns, start_ticks;
        uint32_t sym_base, class_base, method_base, stack_base, value_base;
        struct jfr_strtab syms;
        struct jfr_strtab offcpu_strs;     /* blockedIn strings of this chunk's intervals */
        struct jfr_context_pool *contexts; /* label sets; value_base: snapshot string ids */
        struct jfr_buf snapshot;           /* the last finished chunk's LabelsSnapshot */
        struct jfr_u64map classes, methods, stacks, sets, tids, chunk_threads;
        uint32_t nclasses, nmethods, nstacks;
        struct jfr_buf class_pool, method_pool, stack_pool, scratch, tail, out;
        uint32_t *thread_list, nthreads, thread_cap; /* thread keys used in this chunk */
        struct stored_sample *samples;               /* those not encoded when added (encode_now) */
        size_t nsamples, sample_cap;
        size_t nencoded;         /* CPU samples of this chunk encoded into out when added */
        struct stored_off *offs; /* the off-CPU samples' intervals */
        size_t noffs, offs_cap;
        uint32_t unknown_stack_key; /* 0 = not created yet */
        uint64_t chunk_dropped_keys, chunk_unknown_stacks, chunk_threads_refused;
        struct jfr_buf proc_events; /* this chunk's ctxprof.ProcessContext events */
        uint64_t chunk_offcpu;      /* off-CPU intervals stored in this chunk */
        struct jfr_stats stats;
        uint32_t thread_base; /* synthetic thread keys: thread_base + identity index + 1 */
        uint32_t key_floor;   /* APPEND: every key and metadata id of the old chunks is <= */
};

enum jfr_frame_type jfr_frame_type_for(const char *function, int kernel)
{
        if (kernel)
                return JFR_FRAME_KERNEL;
        return function && strstr(function, "::") ? JFR_FRAME_CPP : JFR_FRAME_NATIVE;
}

/* Arrays indexed by keys never grow past KEY_LIMIT. */
static int grow(void **p, uint32_t *cap, size_t elem, size_t need)
{
        return need > KEY_LIMIT ? -EOVERFLOW : grow_array_u32(p, cap, elem, need, FIRST_CAP);
}

static char *xstrdup(const char *s)
{
        char t[JFR_MAX_STRING];
        jfr_utf8_sanitize(s ? s : "", s ? strlen(s) : 0, t, sizeof(t));
        return strdup(t);
}

/* A writer on a file already opened by jfr_file (taken over, closed on failure). */
static int writer_new(struct jfr_writer **out, struct jfr_file *file, uint64_t floor,
                      const char *path, const struct jfr_recording_info *info)
{
        struct jfr_writer *w = calloc(1, sizeof(*w));
        if (!w) {
                jfr_file_close(file);
                return -ENOMEM;
        }
        w->file = file;
        if (floor > KEY_LIMIT / 4) {
                jfr_writer_close(w);
                return -EFBIG; /* keys would not stay below 2^31: start a new file */
        }
        const struct jfr_host_info *h = info->host ? info->host : &(struct jfr_host_info){0};
        w->rec_name = xstrdup(info->name ? info->name : "ctxprof");
        w->rec_event = xstrdup(info->event ? info->event : "cpu-clock");
        w->rec_callgraph = xstrdup(info->callgraph ? info->callgraph : "fp");
        w->rec_filter = info->filter && *info->filter ? xstrdup(info->filter) : NULL;
        w->destination = xstrdup(path);
        w->freq_hz = info->frequency_hz;
        w->rec_start_wall_ns = info->start_wall_ns;
        w->os_version = xstrdup(h->os_version ? h->os_version : "unknown");
        w->cpu_name = xstrdup(h->cpu_name ? h->cpu_name : "unknown");
        w->cpu_desc = xstrdup(h->cpu_description ? h->cpu_description : "unknown");
        w->sockets = h->sockets;
        w->cores = h->cores;
        w->hw_threads = h->hw_threads;
        w->key_floor = (uint32_t)floor;
        uint32_t kf = w->key_floor;
        w->next_sym = w->next_class = w->next_method = w->next_stack = w->next_value = kf + 1;
        w->next_context = kf + 1;
        w->thread_base = kf > PID_MAX_LIMIT ? kf : PID_MAX_LIMIT;
        w->seq = kf;
        jfr_strtab_init(&w->thread_ids);
        jfr_strtab_init(&w->syms);
        jfr_strtab_init(&w->offcpu_strs);
        w->contexts = jfr_context_pool_new();
        jfr_buf_init(&w->snapshot);
        if (!w->contexts || !w->rec_name || !w->rec_event || !w->rec_callgraph || !w->destination ||
            !w->os_version || !w->cpu_name || !w->cpu_desc ||
            (info->filter && *info->filter && !w->rec_filter)) {
                jfr_writer_close(w);
                return -ENOMEM;
        }
        *out = w;
        return 0;
}

int jfr_writer_open(struct jfr_writer **out, const char *path, int flags,
                    const struct jfr_recording_info *info)
{
        struct jfr_file *file;
        uint64_t floor;
        int err;

        *out = NULL;
        if (!path || !info)
                return -EINVAL;
        err = jfr_file_open(&file, path, flags, &floor);
        return err ? err : writer_new(out, file, floor, path, info);
}

int jfr_writer_open_fd(struct jfr_writer **out, int fd, const char *path, int flags,
                       const struct jfr_recording_info *info)
{
        struct jfr_file *file;
        uint64_t floor;
        int err;

        *out = NULL;
        if (!info) {
                close(fd);
                return -EINVAL;
        }
        err = jfr_file_open_fd(&file, fd, path, flags, &floor);
        return err ? err : writer_new(out, file, floor, path, info);
}

void jfr_writer_close(struct jfr_writer *w)
{
        if (!w)
                return;
        jfr_writer_abort_chunk(w);
        jfr_file_close(w->file);
        free(w->rec_name);
        free(w->rec_event);
        free(w->rec_callgraph);
        free(w->rec_filter);
        free(w->destination);
        free(w->os_version);
        free(w->cpu_name);
        free(w->cpu_desc);
        jfr_strtab_free(&w->thread_ids);
        jfr_u64map_free(&w->thread_idx_of);
        jfr_u64map_free(&w->thread_key_of);
        jfr_strtab_free(&w->syms);
        jfr_strtab_free(&w->offcpu_strs);
        jfr_context_pool_free(w->contexts);
        jfr_buf_free(&w->snapshot);
        struct jfr_u64map *maps[] = {&w->classes, &w->methods, &w->stacks,
                                     &w->sets,    &w->tids,    &w->chunk_threads};
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                jfr_u64map_free(maps[i]);
        struct jfr_buf *bufs[] = {&w->class_pool, &w->method_pool, &w->stack_pool, &w->scratch,
                                  &w->tail,       &w->out,         &w->proc_events};
        for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
                jfr_buf_free(bufs[i]);
        free(w->thread_list);
        free(w->samples);
        free(w->offs);
        free(w);
}

const void *jfr_writer_labels_snapshot(const struct jfr_writer *w, size_t *len)
{
        *len = w->snapshot.len;
        return w->snapshot.data;
}

void jfr_writer_counters(const struct jfr_writer *w, struct jfr_writer_counters *out)
{
        struct jfr_file_counters fc = {0};
        if (w->file)
                jfr_file_counters(w->file, &fc);
        *out = w->c;
        out->append_errors = fc.append_errors;
        out->trimmed_bytes = fc.trimmed_bytes;
        out->trim_errors = fc.trim_errors;
}

/* ---- chunk state ---- */

void jfr_writer_abort_chunk(struct jfr_writer *w)
{
        if (!w->in_chunk)
                return;
        w->in_chunk = 0;
        jfr_strtab_clear(&w->syms);
        jfr_strtab_clear(&w->offcpu_strs);
        struct jfr_u64map *maps[] = {&w->classes, &w->methods, &w->stacks,
                                     &w->sets,    &w->tids,    &w->chunk_threads};
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                jfr_u64map_clear(maps[i]);
        struct jfr_buf *bufs[] = {&w->class_pool, &w->method_pool, &w->stack_pool};
        for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
                jfr_buf_reset(bufs[i]);
        w->nclasses = w->nmethods = w->nstacks = 0;
        w->nthreads = 0;
        w->nsamples = 0;
        w->nencoded = 0;
        jfr_buf_reset(&w->out);
        w->noffs = 0;
        w->unknown_stack_key = 0;
        w->chunk_dropped_keys = w->chunk_unknown_stacks = w->chunk_threads_refused = 0;
        jfr_buf_reset(&w->proc_events);
        w->chunk_offcpu = 0;
}

/* The chunk's header, its offsets and times patched by jfr_writer_end_chunk: the chunk is
 * built in out from its start, its CPU samples encoded there as they come (encode_now). */
static void chunk_header(struct jfr_buf *o)
{
        jfr_buf_reset(o);
        jfr_buf_put(o, "FLR\0", 4);
        jfr_buf_be16(o, 2);
        jfr_buf_be16(o, 1);
        for (int i = 0; i < 7; i++)
                jfr_buf_be64(o, 0); /* patched at the chunk's end */
        jfr_buf_be32(o, 1);         /* state 0 (finished), flags: compressed integers */
}

int jfr_writer_begin_chunk(struct jfr_writer *w, uint64_t start_wall_ns, uint64_t start_ticks)
{
        if (w->in_chunk)
                return -EBUSY;
        if (w->next_sym > KEY_LIMIT / 2 || w->next_stack > KEY_LIMIT / 2 ||
            w->next_method > KEY_LIMIT / 2 || w->next_value > KEY_LIMIT / 2 ||
            w->next_class > KEY_LIMIT / 2 || w->next_context > KEY_LIMIT / 2)
                return -EOVERFLOW; /* start a new file */
        w->in_chunk = 1;
        w->seq++;
        w->start_wall_ns = start_wall_ns;
        w->start_ticks = start_ticks;
        w->sym_base = w->next_sym;
        w->class_base = w->next_class;
        w->method_base = w->next_method;
        w->stack_base = w->next_stack;
        w->value_base = w->next_value;
        jfr_context_pool_begin(w->contexts, w->next_context, w->next_value);
        memset(&w->stats, 0, sizeof(w->stats));
        chunk_header(&w->out);
        return 0;
}

static uint64_t file_ticks(const struct jfr_writer *w, uint64_t ns)
{
        int64_t d = (int64_t)(ns - w->start_ticks);
        if (d < -(int64_t)JFR_TICK_SLACK_NS)
                d = -(int64_t)JFR_TICK_SLACK_NS;
        return (uint64_t)((d + (int64_t)JFR_TICK_SLACK_NS) / (int64_t)NS_PER_TICK);
}

static int symbol(struct jfr_writer *w, const char *s, size_t len, uint32_t *key)
{
        char t[JFR_MAX_STRING];
        size_t n = jfr_utf8_sanitize(s ? s : "", s ? len : 0, t, sizeof(t));
        uint32_t i;
        int err = jfr_strtab_intern(&w->syms, t, n, &i, NULL);
        if (err)
                return err;
        *key = w->sym_base + i;
        return 0;
}

static int mark_thread(struct jfr_writer *w, uint32_t key)
{
        uint32_t v;
        if (jfr_u64map_get(&w->chunk_threads, key, &v))
                return 0;
        int err = grow((void **)&w->thread_list, &w->thread_cap, sizeof(uint32_t), w->nthreads + 1);
        if (!err)
                err = jfr_u64map_put(&w->chunk_threads, key, 1);
        if (!err)
                w->thread_list[w->nthreads++] = key;
        return err;
}

/* The pool key of thread identity idx: the OS tid itself for the first identity of a tid in
 * the file (readers that show the key as the thread id, like async-profiler's converter
 * with -t, then show the tid); a renamed thread or a reused tid, and every thread of a file
 * continued by APPEND (whose old keys are unknown), gets a key above every tid, because a
 * key never changes meaning within a file. */
static int thread_key(struct jfr_writer *w, uint32_t tid, uint32_t idx, uint32_t *key)
{
        uint32_t other;
        if (jfr_u64map_get(&w->thread_key_of, idx, key))
                return 0;
        *key = !w->key_floor && tid && tid < PID_MAX_LIMIT &&
                       !jfr_u64map_get(&w->thread_idx_of, tid, &other)
                   ? tid
                   : w->thread_base + idx + 1;
        if (*key > KEY_LIMIT)
                return -EOVERFLOW;
        int err = jfr_u64map_put(&w->thread_key_of, idx, *key);
        return err ? err : jfr_u64map_put(&w->thread_idx_of, *key, idx);
}

/* Identity bytes: 4-byte tid, 4-byte pid, os name, NUL, java name (names sanitized: no NUL
 * inside). */
#define THREAD_ID_HEAD 8
int jfr_writer_add_thread_of(struct jfr_writer *w, pid_t tid, pid_t pid, const char *os_name,
                             const char *java_name)
{
        if (!w->in_chunk)
                return -EINVAL;
        char id[THREAD_ID_HEAD + 2 * 256];
        uint32_t t = (uint32_t)tid, p = (uint32_t)pid;
        memcpy(id, &t, 4);
        memcpy(id + 4, &p, 4);
        size_t n = THREAD_ID_HEAD + jfr_utf8_sanitize(os_name ? os_name : "",
                                                      os_name ? strlen(os_name) : 0,
                                                      id + THREAD_ID_HEAD, 256);
        id[n++] = 0;
        const char *jn = java_name ? java_name : os_name;
        n += jfr_utf8_sanitize(jn ? jn : "", jn ? strlen(jn) : 0, id + n, 256);
        uint32_t idx, key;
        if (w->thread_ids.n >= JFR_THREAD_IDENTITIES_MAX - 1 &&
            !jfr_strtab_find(&w->thread_ids, id, n, &idx)) {
                static const char full[] = "[thread identities full]";
                /* tid 0: the placeholder's key is above every tid; pid 0: no process */
                memset(id, 0, THREAD_ID_HEAD);
                memcpy(id + THREAD_ID_HEAD, full, sizeof(full));
                memcpy(id + THREAD_ID_HEAD + sizeof(full), full, sizeof(full) - 1);
                n = THREAD_ID_HEAD + 2 * sizeof(full) - 1;
                w->c.thread_identities_refused++;
                w->chunk_threads_refused++;
        }
        int err = jfr_strtab_intern(&w->thread_ids, id, n, &idx, NULL);
        if (!err)
                err = thread_key(w, t, idx, &key);
        if (!err)
                err = jfr_u64map_put(&w->tids, t, key);
        if (!err)
                err = mark_thread(w, key);
        return err;
}

int jfr_writer_add_thread(struct jfr_writer *w, pid_t tid, const char *os_name,
                          const char *java_name)
{
        return jfr_writer_add_thread_of(w, tid, 0, os_name, java_name);
}

static int class_key(struct jfr_writer *w, const char *module, uint32_t *key)
{
        uint32_t sym, idx;
        int err = symbol(w, module, module ? strlen(module) : 0, &sym);
        if (err)
                return err;
        if (jfr_u64map_get(&w->classes, sym, &idx)) {
                *key = w->class_base + idx;
                return 0;
        }
        idx = w->nclasses;
        if ((err = jfr_u64map_put(&w->classes, sym, idx)))
                return err;
        w->nclasses++;
        /* key, classLoader (null), name, package (null), modifiers */
        jfr_buf_varint(&w->class_pool, w->class_base + idx);
        jfr_buf_varint(&w->class_pool, 0);
        jfr_buf_varint(&w->class_pool, sym);
        jfr_buf_varint(&w->class_pool, 0);
        jfr_buf_varint(&w->class_pool, 0);
        *key = w->class_base + idx;
        return w->class_pool.err;
}

static int method_key(struct jfr_writer *w, const struct jfr_frame *f, uint32_t *key)
{
        uint32_t cls, name, desc, idx;
        int err = class_key(w, f->module, &cls);
        if (!err)
                err = f->function ? symbol(w, f->function, strlen(f->function), &name)
                                  : symbol(w, "[unknown]", 9, &name);
        if (!err)
                err = symbol(w, "()L;", 4, &desc);
        if (err)
                return err;
        uint64_t mk = (uint64_t)(cls - w->class_base) << 32 | (name - w->sym_base);
        if (jfr_u64map_get(&w->methods, mk, &idx)) {
                *key = w->method_base + idx;
                return 0;
        }
        idx = w->nmethods;
        if ((err = jfr_u64map_put(&w->methods, mk, idx)))
                return err;
        w->nmethods++;
        jfr_buf_varint(&w->method_pool, w->method_base + idx);
        jfr_buf_varint(&w->method_pool, cls);
        jfr_buf_varint(&w->method_pool, name);
        jfr_buf_varint(&w->method_pool, desc);
        jfr_buf_varint(&w->method_pool, 0x100); /* ACC_NATIVE */
        jfr_buf_u8(&w->method_pool, 0);         /* hidden */
        *key = w->method_base + idx;
        return w->method_pool.err;
}

/* Encodes the stack pool entry right away (keys are final at add time). */
static int put_stack(struct jfr_writer *w, const struct jfr_frame *frames, size_t n, int truncated,
                     uint32_t *key)
{
        if (w->stack_base + w->nstacks >= KEY_LIMIT)
                return -EOVERFLOW;
        if (n > 1024) {
                n = 1024;
                truncated = 1;
        }
        /* An empty stack gets one frame: readers that skip empty stacks (async-profiler's
         * converter) would otherwise lose the sample from their totals. */
        static const struct jfr_frame no_stack = {"[no stack]", "", -1, JFR_FRAME_NATIVE};
        if (!n)
                frames = &no_stack, n = 1;
        struct jfr_buf *b = &w->scratch;
        jfr_buf_reset(b);
        jfr_buf_varint(b, w->stack_base + w->nstacks);
        jfr_buf_u8(b, truncated ? 1 : 0);
        jfr_buf_varint(b, n);
        for (size_t i = 0; i < n; i++) {
                uint32_t m;
                int err = method_key(w, &frames[i], &m);
                if (err)
                        return err;
                enum jfr_frame_type t = frames[i].type;
                if (t != JFR_FRAME_NATIVE && t != JFR_FRAME_CPP && t != JFR_FRAME_KERNEL)
                        t = JFR_FRAME_NATIVE;
                jfr_buf_varint(b, m);
                jfr_buf_varint_i32(b, frames[i].line > 0 ? frames[i].line : -1);
                jfr_buf_varint(b, 0); /* bytecodeIndex */
                jfr_buf_varint(b, (uint64_t)t);
        }
        if (b->err)
                return b->err;
        jfr_buf_put(&w->stack_pool, b->data, b->len);
        if (w->stack_pool.err)
                return w->stack_pool.err;
        *key = w->stack_base + w->nstacks++;
        return 0;
}

int jfr_writer_add_stack(struct jfr_writer *w, uint64_t trace_id, const struct jfr_frame *frames,
                         size_t n, int truncated)
{
        uint32_t key;
        if (!w->in_chunk || (n && !frames))
                return -EINVAL;
        if (jfr_u64map_get(&w->stacks, trace_id, &key))
                return -EEXIST;
        int err = put_stack(w, frames, n, truncated, &key);
        if (!err)
                err = jfr_u64map_put(&w->stacks, trace_id, key);
        return err;
}

int jfr_writer_add_labels(struct jfr_writer *w, uint32_t context_id, const struct jfr_label *l,
                          size_t n)
{
        uint32_t v;
        if (!w->in_chunk || !context_id || (n && !l))
                return -EINVAL;
        if (jfr_u64map_get(&w->sets, context_id, &v))
                return -EEXIST;
        struct jfr_context_label set[JFR_MAX_LABELS_PER_SET];
        char text[JFR_MAX_LABELS_PER_SET][2][JFR_MAX_STRING];
        size_t ns = 0;
        for (size_t i = 0; i < n; i++) {
                if (!l[i].key || !l[i].key_len)
                        continue;
                size_t kn = jfr_utf8_sanitize(l[i].key, l[i].key_len, text[ns][0], 256);
                int dup = 0;
                for (size_t j = 0; j < ns && !dup; j++)
                        dup = set[j].key_len == kn && !memcmp(set[j].key, text[ns][0], kn);
                if (dup)
                        continue; /* the first of duplicate keys wins */
                if (ns == JFR_MAX_LABELS_PER_SET) {
                        w->c.dropped_label_keys++;
                        w->chunk_dropped_keys++;
                        continue;
                }
                size_t vn =
                    jfr_utf8_sanitize(l[i].value ? l[i].value : "", l[i].value ? l[i].value_len : 0,
                                      text[ns][1], JFR_MAX_STRING);
                set[ns] = (struct jfr_context_label){text[ns][0], text[ns][1], kn, vn};
                ns++;
        }
        uint32_t key;
        int err = jfr_context_pool_add(w->contexts, set, ns, &key);
        return err ? err : jfr_u64map_put(&w->sets, context_id, key);
}

static void put_cpu_sample(struct jfr_writer *w, uint64_t ticks, uint32_t th, uint32_t st,
                           uint32_t ctx, uint64_t span_id, uint64_t root_span_id);

/* A CPU sample whose thread, stack and label set the chunk knows already is encoded into the
 * chunk at once: 48 B less per buffered sample than its stored copy (a chunk holds up to a
 * million). jfr_sink adds them before their samples; a caller that does not gets the stored
 * copy, resolved at the chunk's end. 1 when encoded, 0 when it is to be stored. */
static int encode_now(struct jfr_writer *w, const struct jfr_sample *s)
{
        uint32_t th, st, ctx = 0;

        if (!jfr_u64map_get(&w->tids, (uint32_t)s->tid, &th) ||
            !jfr_u64map_get(&w->stacks, s->trace_id, &st) ||
            (s->context_id && !jfr_u64map_get(&w->sets, s->context_id, &ctx)) || mark_thread(w, th))
                return 0;
        put_cpu_sample(w, s->ticks, th, st, ctx, s->span_id, s->root_span_id);
        w->nencoded++;
        return 1;
}

/* The stored copy of s (and of o, for an off-CPU interval; NULL for a CPU sample), or s
 * encoded at once (encode_now). */
static int store_sample(struct jfr_writer *w, const struct jfr_sample *s,
                        const struct jfr_offcpu *off)
{
        if (!w->in_chunk)
                return -EINVAL;
        if (!off && encode_now(w, s))
                return w->out.err;
        int err = grow_array((void **)&w->samples, &w->sample_cap, sizeof(*w->samples),
                             w->nsamples + 1, SAMPLES_FIRST_CAP);
        if (!err && off)
                err = grow_array((void **)&w->offs, &w->offs_cap, sizeof(*w->offs), w->noffs + 1,
                                 SAMPLES_FIRST_CAP);
        if (err)
                return err;
        struct stored_sample *o = &w->samples[w->nsamples];
        memset(o, 0, sizeof(*o));
        o->span_id = s->span_id;
        o->root_span_id = s->root_span_id;
        o->ticks = s->ticks;
        o->trace_id = s->trace_id;
        o->context_id = s->context_id;
        o->tid = s->tid;
        if (off) {
                struct stored_off *so = &w->offs[w->noffs];

                *so = (struct stored_off){
                    .duration_ns = off->duration_ns, .runq_ns = off->runq_ns, .state = off->state};
                if (off->blocked_in) {
                        char t[JFR_MAX_STRING];
                        size_t n = jfr_utf8_sanitize(off->blocked_in, strlen(off->blocked_in), t,
                                                     sizeof(t));
                        uint32_t idx;

                        if ((err = jfr_strtab_intern(&w->offcpu_strs, t, n, &idx, NULL)))
                                return err;
                        so->blocked_in = idx + 1;
                }
                w->chunk_offcpu++;
                o->off = (uint32_t)++w->noffs;
        }
        uint32_t k;
        if (jfr_u64map_get(&w->tids, (uint32_t)s->tid, &k))
                o->thread_key = k; /* the identity current at sample time */
        w->nsamples++;
        return 0;
}

static void ev_begin(struct jfr_buf *b, int type, uint64_t ticks);
static void put_event(struct jfr_buf *out, const struct jfr_buf *body);

int jfr_writer_add_process(struct jfr_writer *w, pid_t pid, const char *service,
                           const char *attributes)
{
        char t[JFR_MAX_STRING];
        struct jfr_buf *b = &w->scratch;

        if (!w->in_chunk)
                return -EINVAL;
        ev_begin(b, JFR_E_PROCESS_CONTEXT, file_ticks(w, w->start_ticks));
        jfr_buf_varint(b, (uint64_t)pid);
        jfr_utf8_sanitize(service ? service : "", service ? strlen(service) : 0, t, sizeof(t));
        jfr_buf_cstring(b, t);
        jfr_utf8_sanitize(attributes ? attributes : "", attributes ? strlen(attributes) : 0, t,
                          sizeof(t));
        jfr_buf_cstring(b, t);
        put_event(&w->proc_events, b);
        return w->proc_events.err ? -ENOMEM : 0;
}

int jfr_writer_add_sample(struct jfr_writer *w, const struct jfr_sample *s)
{
        return store_sample(w, s, NULL);
}

int jfr_writer_add_offcpu(struct jfr_writer *w, const struct jfr_sample *s,
                          const struct jfr_offcpu *o)
{
        return o ? store_sample(w, s, o) : -EINVAL;
}

void jfr_writer_set_stats(struct jfr_writer *w, const struct jfr_stats *st)
{
        w->stats = *st;
}

/* ---- chunk encoding ---- */

/* Append scratch as one event: canonical size varint (counting itself), then the body. */
static void put_event(struct jfr_buf *out, const struct jfr_buf *body)
{
        size_t n = body->len, sz = n + 1;
        while (jfr_varint_len(sz) + n != sz)
                sz = jfr_varint_len(sz) + n;
        jfr_buf_varint(out, sz);
        jfr_buf_put(out, body->data, n);
}

static void ev_begin(struct jfr_buf *b, int type, uint64_t ticks)
{
        jfr_buf_reset(b);
        jfr_buf_varint(b, (uint64_t)type);
        jfr_buf_varint(b, ticks);
}

static void put_setting(struct jfr_writer *w, uint64_t t0, int event, const char *name,
                        const char *value)
{
        struct jfr_buf *b = &w->scratch;
        ev_begin(b, JFR_E_ACTIVE_SETTING, t0);
        jfr_buf_varint(b, 0); /* duration */
        jfr_buf_varint(b, (uint64_t)event);
        jfr_buf_cstring(b, name);
        jfr_buf_cstring(b, value);
        put_event(&w->out, b);
}

static void put_info_events(struct jfr_writer *w, uint64_t t0, uint64_t t1, uint64_t end_ticks)
{
        struct jfr_buf *b = &w->scratch;
        char v[64];

        ev_begin(b, JFR_E_ACTIVE_RECORDING, t0);
        jfr_buf_varint(b, t1 - t0);
        jfr_buf_varint(b, 1); /* id */
        jfr_buf_cstring(b, w->rec_name);
        jfr_buf_cstring(b, w->destination);
        jfr_buf_varint(b, 0); /* maxAge */
        jfr_buf_varint(b, 0); /* maxSize */
        jfr_buf_varint(b, w->rec_start_wall_ns / 1000000);
        uint64_t end_wall = w->start_wall_ns + (end_ticks - w->start_ticks);
        jfr_buf_varint(
            b, end_wall > w->rec_start_wall_ns ? (end_wall - w->rec_start_wall_ns) / 1000000 : 0);
        put_event(&w->out, b);

        put_setting(w, t0, JFR_E_EXECUTION_SAMPLE, "enabled", "true");
        if (w->freq_hz) {
                snprintf(v, sizeof(v), "%u ms", (1000 + w->freq_hz / 2) / w->freq_hz);
                put_setting(w, t0, JFR_E_EXECUTION_SAMPLE, "period", v);
                snprintf(v, sizeof(v), "%u Hz", w->freq_hz);
                put_setting(w, t0, JFR_E_EXECUTION_SAMPLE, "frequency", v);
        }
        put_setting(w, t0, JFR_E_EXECUTION_SAMPLE, "event", w->rec_event);
        put_setting(w, t0, JFR_E_EXECUTION_SAMPLE, "callgraph", w->rec_callgraph);
        if (w->rec_filter) /* only the samples it kept are in the file */
                put_setting(w, t0, JFR_E_EXECUTION_SAMPLE, "filter", w->rec_filter);

        ev_begin(b, JFR_E_OS_INFORMATION, t0);
        jfr_buf_cstring(b, w->os_version);
        put_event(&w->out, b);

        ev_begin(b, JFR_E_CPU_INFORMATION, t0);
        jfr_buf_cstring(b, w->cpu_name);
        jfr_buf_cstring(b, w->cpu_desc);
        jfr_buf_varint(b, w->sockets);
        jfr_buf_varint(b, w->cores);
        jfr_buf_varint(b, w->hw_threads);
        put_event(&w->out, b);

        const struct jfr_stats *st = &w->stats;
        ev_begin(b, JFR_E_STATISTICS, t0);
        jfr_buf_varint(b, t1 - t0);
        uint64_t vals[] = {st->samples ? st->samples : w->nsamples + w->nencoded,
                           st->lost,
                           st->torn_span_reads,
                           st->label_faults,
                           st->unwind_errors,
                           st->table_used,
                           st->table_capacity,
                           st->bpf_ns_per_sample,
                           w->chunk_unknown_stacks,
                           w->chunk_dropped_keys};
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
                jfr_buf_varint(b, vals[i]);
        for (size_t i = 0; i < JFR_CTX_MISSING_N; i++)
                jfr_buf_varint(b, st->ctx_missing[i]);
        jfr_buf_varint(b, st->stacks_refused);
        jfr_buf_varint(b, st->label_sets_refused);
        jfr_buf_varint(b, st->threads_refused + w->chunk_threads_refused);
        jfr_buf_varint(b, st->filtered);
        put_event(&w->out, b);
}

/* Thread key for a sample (auto-creates "tid-N" for a tid never declared). */
static int sample_thread(struct jfr_writer *w, struct stored_sample *s, uint32_t *key)
{
        if (s->thread_key) {
                *key = s->thread_key;
                return mark_thread(w, s->thread_key);
        }
        uint32_t k;
        if (!jfr_u64map_get(&w->tids, (uint32_t)s->tid, &k)) {
                char name[32];
                snprintf(name, sizeof(name), "tid-%d", (int)s->tid);
                int err = jfr_writer_add_thread(w, s->tid, name, NULL);
                if (err)
                        return err;
                w->c.unknown_threads++;
                jfr_u64map_get(&w->tids, (uint32_t)s->tid, &k);
        }
        *key = k;
        return 0;
}

static int sample_stack(struct jfr_writer *w, uint64_t trace_id, uint32_t *key)
{
        if (jfr_u64map_get(&w->stacks, trace_id, key))
                return 0;
        w->chunk_unknown_stacks++;
        w->c.unknown_stacks++;
        if (!w->unknown_stack_key) {
                struct jfr_frame f = {"[unknown stack]", "", -1, JFR_FRAME_NATIVE};
                int err = put_stack(w, &f, 1, 1, &w->unknown_stack_key);
                if (err)
                        return err;
        }
        *key = w->unknown_stack_key;
        return 0;
}

/* One ctxprof.OffCPU event (field order: jfr_metadata.c f_offcpu). */
static void put_offcpu(struct jfr_writer *w, const struct stored_sample *s, uint32_t th,
                       uint32_t st, uint32_t ctx)
{
        const struct stored_off *o = &w->offs[s->off - 1];
        struct jfr_buf *b = &w->scratch;
        uint64_t t0 = file_ticks(w, s->ticks), t1 = file_ticks(w, s->ticks + o->duration_ns);
        uint32_t state = o->state;

        if (state != JFR_OFFCPU_SLEEPING && state != JFR_OFFCPU_UNINTERRUPTIBLE)
                state = JFR_OFFCPU_OTHER;
        ev_begin(b, JFR_E_OFFCPU, t0);
        jfr_buf_varint(b, t1 > t0 ? t1 - t0 : 0);
        jfr_buf_varint(b, th);
        jfr_buf_varint(b, st);
        jfr_buf_varint(b, state);
        if (o->blocked_in)
                jfr_buf_string(b, jfr_strtab_str(&w->offcpu_strs, o->blocked_in - 1),
                               w->offcpu_strs.len[o->blocked_in - 1]);
        else
                jfr_buf_u8(b, 0); /* null string */
        jfr_buf_varint(b, o->runq_ns);
        jfr_buf_varint(b, ctx); /* contextId */
        jfr_buf_varint(b, s->span_id);
        jfr_buf_varint(b, s->root_span_id);
        jfr_buf_varint(b, ctx); /* context */
        put_event(&w->out, b);
        w->c.offcpu_intervals++;
}

/* One jdk.ExecutionSample: the JDK's four fields, then the context fields (layout and why in
 * docs/jfr.md, "Event layout"). */
static void put_cpu_sample(struct jfr_writer *w, uint64_t ticks, uint32_t th, uint32_t st,
                           uint32_t ctx, uint64_t span_id, uint64_t root_span_id)
{
        struct jfr_buf *b = &w->scratch, *tail = &w->tail;

        ev_begin(b, JFR_E_EXECUTION_SAMPLE, file_ticks(w, ticks));
        jfr_buf_varint(b, th);
        jfr_buf_varint(b, st);
        jfr_buf_varint(b, STATE_CPU_KEY);
        jfr_buf_reset(tail);
        jfr_buf_varint(tail, ctx); /* contextId */
        jfr_buf_varint(tail, span_id);
        jfr_buf_varint(tail, root_span_id);
        jfr_buf_varint(tail, ctx); /* context: the same key, as a pool reference */
        /* contextBytes counts itself: always < 128, so one byte */
        jfr_buf_varint(b, tail->len + 1);
        jfr_buf_put(b, tail->data, tail->len);
        put_event(&w->out, b);
        w->c.context_samples += ctx || span_id || root_span_id;
        w->c.samples++;
}

/* The stored samples: CPU samples (jdk.ExecutionSample) and off-CPU intervals. */
static int put_samples(struct jfr_writer *w)
{
        for (size_t i = 0; i < w->nsamples; i++) {
                struct stored_sample *s = &w->samples[i];
                uint32_t th, st, ctx = 0;
                int err = sample_thread(w, s, &th);
                if (!err)
                        err = sample_stack(w, s->trace_id, &st);
                if (err)
                        return err;
                if (s->context_id)
                        jfr_u64map_get(&w->sets, s->context_id, &ctx);
                if (s->off) {
                        put_offcpu(w, s, th, st, ctx);
                        continue;
                }
                put_cpu_sample(w, s->ticks, th, st, ctx, s->span_id, s->root_span_id);
        }
        return w->out.err ? w->out.err : w->tail.err;
}

static void pool_head(struct jfr_buf *b, int type, uint32_t count)
{
        jfr_buf_varint(b, (uint64_t)type);
        jfr_buf_varint(b, count);
}

static void put_checkpoint(struct jfr_writer *w, uint64_t t0)
{
        struct jfr_buf *o = &w->out;
        size_t start = o->len;
        size_t szoff = jfr_buf_varint_fixed(o, 0, 5);
        jfr_buf_varint(o, 1); /* checkpoint */
        jfr_buf_varint(o, t0);
        jfr_buf_varint(o, 0); /* duration */
        jfr_buf_varint(o, 0); /* delta to previous checkpoint: none */
        jfr_buf_u8(o, 1);     /* FLUSH */
        const struct jfr_buf *ctx_entries = jfr_context_pool_entries(w->contexts);
        unsigned npools =
            3 + !!w->nthreads + !!w->nclasses + !!w->nmethods + !!w->nstacks + !!ctx_entries->len;
        jfr_buf_varint(o, npools);

        pool_head(o, JFR_T_FRAMETYPE, 3);
        static const char *const ft[] = {"Native", "C++", "Kernel"};
        for (int i = 0; i < 3; i++) {
                jfr_buf_varint(o, JFR_FRAME_NATIVE + (unsigned)i);
                jfr_buf_cstring(o, ft[i]);
        }
        static const char *const states[] = {"STATE_DEFAULT", "STATE_SLEEPING",
                                             "STATE_UNINTERRUPTIBLE", "STATE_OTHER"};
        unsigned nstates = w->chunk_offcpu ? 4 : 1; /* off-CPU states only where used */
        pool_head(o, JFR_T_THREADSTATE, nstates);
        for (unsigned i = 0; i < nstates; i++) {
                jfr_buf_varint(o, STATE_CPU_KEY + i); /* keys 1..4: enum jfr_offcpu_state */
                jfr_buf_cstring(o, states[i]);
        }

        if (w->nthreads) {
                pool_head(o, JFR_T_THREAD, w->nthreads);
                for (uint32_t i = 0; i < w->nthreads; i++) {
                        uint32_t k = w->thread_list[i], tid, pid;
                        uint32_t idx = 0;
                        jfr_u64map_get(&w->thread_idx_of, k, &idx);
                        const char *id = jfr_strtab_str(&w->thread_ids, idx);
                        memcpy(&tid, id, 4);
                        memcpy(&pid, id + 4, 4);
                        const char *os = id + THREAD_ID_HEAD, *jn = os + strlen(os) + 1;
                        jfr_buf_varint(o, k);
                        jfr_buf_cstring(o, os);
                        jfr_buf_varint(o, tid);
                        jfr_buf_cstring(o, jn);
                        jfr_buf_varint(o, 0);   /* javaThreadId: 0 = not a Java thread */
                        jfr_buf_varint(o, pid); /* 0 = not known */
                }
        }
        if (w->nstacks) {
                pool_head(o, JFR_T_STACKTRACE, w->nstacks);
                jfr_buf_put(o, w->stack_pool.data, w->stack_pool.len);
        }
        if (w->nmethods) {
                pool_head(o, JFR_T_METHOD, w->nmethods);
                jfr_buf_put(o, w->method_pool.data, w->method_pool.len);
        }
        if (w->nclasses) {
                pool_head(o, JFR_T_CLASS, w->nclasses);
                jfr_buf_put(o, w->class_pool.data, w->class_pool.len);
        }
        /* symbols (always: at least the empty string was interned by begin) */
        pool_head(o, JFR_T_SYMBOL, w->syms.n);
        for (uint32_t i = 0; i < w->syms.n; i++) {
                jfr_buf_varint(o, w->sym_base + i);
                jfr_buf_string(o, jfr_strtab_str(&w->syms, i), w->syms.len[i]);
        }
        if (ctx_entries->len) {
                uint32_t first =
                    w->next_context < JFR_CONTEXT_KEY_MIN ? JFR_CONTEXT_KEY_MIN : w->next_context;
                pool_head(o, JFR_T_CONTEXT, jfr_context_pool_nodes(w->contexts) - first);
                jfr_buf_put(o, ctx_entries->data, ctx_entries->len);
        }
        jfr_buf_patch_varint(o, szoff, o->len - start, 5);
}

int jfr_writer_finish_chunk(struct jfr_writer *w, uint64_t end_ticks, size_t *chunk_bytes)
{
        if (chunk_bytes)
                *chunk_bytes = 0;
        if (!w->in_chunk)
                return -EINVAL;
        uint32_t empty;
        uint64_t t0 = file_ticks(w, w->start_ticks), t1 = file_ticks(w, end_ticks);
        if (t1 < t0)
                t1 = t0;
        int err = symbol(w, "", 0, &empty);
        if (err)
                goto out;

        struct jfr_buf *o = &w->out; /* the header and the samples encoded as they came */

        if ((err = put_samples(w)))
                goto out;
        put_info_events(w, t0, t1, end_ticks);
        jfr_buf_put(o, w->proc_events.data, w->proc_events.len);
        size_t md_off = o->len;
        if ((err = jfr_metadata_write_ext(o, t0, w->seq, w->chunk_offcpu > 0)))
                goto out;
        size_t cp_off = o->len;
        put_checkpoint(w, t0);
        if ((err = o->err))
                goto out;
        jfr_buf_patch_be64(o, 8, o->len);
        jfr_buf_patch_be64(o, 16, cp_off);
        jfr_buf_patch_be64(o, 24, md_off);
        jfr_buf_patch_be64(o, 32, w->start_wall_ns);
        jfr_buf_patch_be64(o, 40, end_ticks > w->start_ticks ? end_ticks - w->start_ticks : 0);
        jfr_buf_patch_be64(o, 48, t0);
        jfr_buf_patch_be64(o, 56, TICKS_PER_SECOND);
        if ((err = jfr_file_append(w->file, o->data, o->len)))
                goto out;
        if (chunk_bytes)
                *chunk_bytes = o->len;
        w->c.chunks++;
        w->c.bytes += o->len;
out:
        /* A chunk that was not written leaves no key in the file: its keys are reused. */
        if (err) {
                jfr_writer_abort_chunk(w);
                return err;
        }
        w->next_sym = w->sym_base + w->syms.n;
        w->next_class = w->class_base + w->nclasses;
        w->next_method = w->method_base + w->nmethods;
        w->next_stack = w->stack_base + w->nstacks;
        w->next_value = jfr_context_pool_strings(w->contexts);
        w->next_context = jfr_context_pool_nodes(w->contexts);
        jfr_buf_reset(&w->snapshot);
        err = jfr_context_pool_snapshot(w->contexts, &w->snapshot);
        jfr_writer_abort_chunk(w);
        return err;
}
