/*
 * jfr_writer.c — builds JFR chunks in memory and appends each one, complete, with a single
 * write (see jfr_writer.h for the contract and docs/jfr.md for the event design). Owns the
 * output fd and the per-file key spaces. Must never: print, write a partial chunk and leave
 * it there, reuse a constant-pool key for another value within a file, or emit a varint
 * longer than 9 bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "jfr/jfr_buf.h"
#include "jfr/jfr_dict.h"
#include "jfr/jfr_metadata.h"
#include "jfr/jfr_reader.h"
#include "jfr/jfr_writer.h"

#define TICKS_PER_SECOND   1000000ull /* file ticks are microseconds */
#define SPAN_ZERO_KEY      1u         /* SpanId pool: key 1 always means 0 (no span) */
#define STATE_RUNNABLE_KEY 1u
#define KEY_LIMIT          0x7fffffffu /* keys stay < 2^31 (grafana reads them as uint32) */

struct stored_sample {
        uint64_t ticks, trace_id;
        uint32_t span_key, root_key, context_id, thread_key; /* thread_key 0: resolve by tid */
        pid_t tid;
};

struct label_set {
        uint32_t first, n; /* into w->set_pairs */
};

struct label_pair {
        uint32_t field, value; /* label key index, LabelValue index */
};

struct jfr_writer {
        int fd, flags;
        uint64_t good_size; /* file length made of complete chunks */
        char *rec_name, *rec_event, *rec_callgraph, *destination, *os_version, *cpu_name, *cpu_desc;
        uint32_t freq_hz, sockets, cores, hw_threads;
        uint64_t rec_start_wall_ns;
        struct jfr_writer_counters c;

        /* per file: next fresh key of each per-chunk pool, and thread identities */
        uint32_t next_sym, next_class, next_method, next_stack, next_value, next_span;
        struct jfr_strtab thread_ids; /* identity bytes -> file-wide thread key - 1 */

        /* per chunk */
        int in_chunk;
        uint64_t seq, start_wall_ns, start_ticks;
        uint32_t sym_base, class_base, method_base, stack_base, value_base, span_base;
        struct jfr_strtab syms, label_keys, label_values;
        struct jfr_u64map classes, methods, stacks, spans, sets, tids, chunk_threads;
        uint32_t nclasses, nmethods, nstacks, nspans;
        struct jfr_buf class_pool, method_pool, stack_pool, span_pool, scratch, out;
        uint32_t *thread_list, nthreads, thread_cap; /* thread keys used in this chunk */
        struct stored_sample *samples;
        size_t nsamples, sample_cap;
        struct label_set *setv;
        uint32_t nsets, set_cap;
        struct label_pair *pairs;
        uint32_t npairs, pair_cap;
        uint32_t unknown_stack_key; /* 0 = not created yet */
        uint64_t chunk_dropped_keys, chunk_unknown_stacks;
        struct jfr_stats stats;
        char field_names[JFR_MAX_LABEL_KEYS][128];
        uint32_t thread_base; /* thread key = thread_base + identity index + 1 */
        uint32_t key_floor;   /* APPEND: every key and metadata id of the old chunks is <= */
};

enum jfr_frame_type jfr_frame_type_for(const char *function, int kernel)
{
        if (kernel)
                return JFR_FRAME_KERNEL;
        return function && strstr(function, "::") ? JFR_FRAME_CPP : JFR_FRAME_NATIVE;
}

static int grow(void **p, uint32_t *cap, size_t elem, size_t need)
{
        if (need <= *cap)
                return 0;
        if (need > KEY_LIMIT)
                return -EOVERFLOW;
        size_t nc = *cap ? (size_t)*cap * 2 : 64;
        while (nc < need)
                nc *= 2;
        void *q = realloc(*p, nc * elem);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = (uint32_t)nc;
        return 0;
}

static char *xstrdup(const char *s)
{
        char t[JFR_MAX_STRING];
        jfr_utf8_sanitize(s ? s : "", s ? strlen(s) : 0, t, sizeof(t));
        return strdup(t);
}

/* ---- host description (jdk.OSInformation / jdk.CPUInformation) ---- */

static void read_os(struct jfr_writer *w)
{
        char buf[512] = "", pretty[256] = "";
        struct utsname u;
        FILE *f = fopen("/etc/os-release", "re");
        if (f) {
                char line[256];
                while (fgets(line, sizeof(line), f))
                        if (!strncmp(line, "PRETTY_NAME=", 12)) {
                                char *v = line + 12, *e;
                                if (*v == '"')
                                        v++;
                                if ((e = strpbrk(v, "\"\n")))
                                        *e = 0;
                                snprintf(pretty, sizeof(pretty), "%s\n", v);
                        }
                fclose(f);
        }
        if (!uname(&u))
                snprintf(buf, sizeof(buf), "%suname: %s %s %s %s", pretty, u.sysname, u.release,
                         u.version, u.machine);
        w->os_version = xstrdup(buf);
}

static void read_cpu(struct jfr_writer *w)
{
        char model[256] = "unknown", line[512];
        uint64_t sock_mask = 0;
        unsigned cores_seen = 0, hw = 0;
        uint32_t core_keys[256];
        int phys = 0;
        FILE *f = fopen("/proc/cpuinfo", "re");
        if (f) {
                while (fgets(line, sizeof(line), f)) {
                        char *v = strchr(line, ':');
                        if (!v)
                                continue;
                        v += v[1] == ' ' ? 2 : 1;
                        v[strcspn(v, "\n")] = 0;
                        if (!strncmp(line, "processor", 9))
                                hw++;
                        else if (!strncmp(line, "model name", 10))
                                snprintf(model, sizeof(model), "%s", v);
                        else if (!strncmp(line, "physical id", 11)) {
                                phys = atoi(v);
                                sock_mask |= 1ull << (phys & 63);
                        } else if (!strncmp(line, "core id", 7)) {
                                uint32_t k = ((uint32_t)phys << 16) | ((uint32_t)atoi(v) & 0xffff);
                                unsigned i;
                                for (i = 0; i < cores_seen && core_keys[i] != k; i++)
                                        ;
                                if (i == cores_seen && cores_seen < 256)
                                        core_keys[cores_seen++] = k;
                        }
                }
                fclose(f);
        }
        w->cpu_name = xstrdup(model);
        char desc[320];
        snprintf(desc, sizeof(desc), "%s (%u hardware threads)", model, hw);
        w->cpu_desc = xstrdup(desc);
        w->hw_threads = hw ? hw : (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
        w->sockets = (uint32_t)__builtin_popcountll(sock_mask);
        if (!w->sockets)
                w->sockets = 1;
        w->cores = cores_seen ? cores_seen : w->hw_threads;
}

/* ---- file ---- */

int jfr_file_complete_prefix(int fd, uint64_t *len)
{
        struct stat st;
        if (fstat(fd, &st))
                return -errno;
        uint64_t size = (uint64_t)st.st_size, off = 0;
        while (size - off >= 68) {
                uint8_t h[68];
                ssize_t r = pread(fd, h, sizeof(h), (off_t)off);
                if (r < 0)
                        return -errno;
                if (r != 68 || memcmp(h, "FLR\0", 4))
                        break;
                uint16_t major = (uint16_t)(h[4] << 8 | h[5]);
                uint64_t csize = 0, md = 0;
                for (int i = 0; i < 8; i++) {
                        csize = csize << 8 | h[8 + i];
                        md = md << 8 | h[24 + i];
                }
                if ((major != 1 && major != 2) || h[64] != 0 || csize < 68 || csize > size - off ||
                    md < 68 || md >= csize)
                        break;
                off += csize;
        }
        *len = off;
        return 0;
}

/* JFR_WRITER_APPEND: keep the complete chunks, cut a partial tail, and find the largest
 * constant-pool key and metadata id in use so this writer's keys never collide with them
 * (the JDK keeps a key's first value for the whole file). */
static int continue_file(struct jfr_writer *w)
{
        struct stat st;
        int err = jfr_file_complete_prefix(w->fd, &w->good_size);
        if (!err && fstat(w->fd, &st))
                err = -errno;
        if (!err && (uint64_t)st.st_size > w->good_size) {
                w->c.trimmed_bytes = (uint64_t)st.st_size - w->good_size;
                if (ftruncate(w->fd, (off_t)w->good_size))
                        err = -errno;
        }
        if (err || !w->good_size)
                return err;
        char path[64];
        struct jfr_reader *r;
        uint64_t floor = 0;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", w->fd);
        if ((err = jfr_reader_open(path, &r)))
                return err;
        while ((err = jfr_reader_next_chunk(r)) == 1) {
                const struct jfr_chunk_info *ci = jfr_reader_chunk(r);
                floor = ci->max_pool_key > floor ? ci->max_pool_key : floor;
                floor = ci->metadata_id > floor ? ci->metadata_id : floor;
        }
        jfr_reader_close(r);
        if (err < 0)
                return err;
        if (floor > KEY_LIMIT / 4)
                return -EFBIG; /* keys would not stay below 2^31: start a new file */
        w->key_floor = (uint32_t)floor;
        return 0;
}

int jfr_writer_open(struct jfr_writer **out, const char *path, int flags,
                    const struct jfr_recording_info *info)
{
        *out = NULL;
        if (!path || !info)
                return -EINVAL;
        struct jfr_writer *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->flags = flags;
        w->fd = open(
            path, O_RDWR | O_CREAT | O_CLOEXEC | ((flags & JFR_WRITER_APPEND) ? 0 : O_TRUNC), 0644);
        if (w->fd < 0) {
                int err = -errno;
                free(w);
                return err;
        }
        if (flags & JFR_WRITER_APPEND) {
                int err = continue_file(w);
                if (err) {
                        close(w->fd);
                        free(w);
                        return err;
                }
        }
        w->rec_name = xstrdup(info->name ? info->name : "ctxprof");
        w->rec_event = xstrdup(info->event ? info->event : "cpu-clock");
        w->rec_callgraph = xstrdup(info->callgraph ? info->callgraph : "fp");
        w->destination = xstrdup(path);
        w->freq_hz = info->frequency_hz;
        w->rec_start_wall_ns = info->start_wall_ns;
        read_os(w);
        read_cpu(w);
        uint32_t floor = w->key_floor;
        w->next_sym = w->next_class = w->next_method = w->next_stack = w->next_value = floor + 1;
        w->next_span = floor + SPAN_ZERO_KEY + 1;
        w->thread_base = floor;
        w->seq = floor;
        jfr_strtab_init(&w->thread_ids);
        jfr_strtab_init(&w->syms);
        jfr_strtab_init(&w->label_keys);
        jfr_strtab_init(&w->label_values);
        if (!w->rec_name || !w->rec_event || !w->rec_callgraph || !w->destination ||
            !w->os_version || !w->cpu_name || !w->cpu_desc) {
                jfr_writer_close(w);
                return -ENOMEM;
        }
        *out = w;
        return 0;
}

void jfr_writer_close(struct jfr_writer *w)
{
        if (!w)
                return;
        jfr_writer_abort_chunk(w);
        if (w->fd >= 0)
                close(w->fd);
        free(w->rec_name);
        free(w->rec_event);
        free(w->rec_callgraph);
        free(w->destination);
        free(w->os_version);
        free(w->cpu_name);
        free(w->cpu_desc);
        jfr_strtab_free(&w->thread_ids);
        jfr_strtab_free(&w->syms);
        jfr_strtab_free(&w->label_keys);
        jfr_strtab_free(&w->label_values);
        struct jfr_u64map *maps[] = {&w->classes, &w->methods, &w->stacks,       &w->spans,
                                     &w->sets,    &w->tids,    &w->chunk_threads};
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                jfr_u64map_free(maps[i]);
        struct jfr_buf *bufs[] = {&w->class_pool, &w->method_pool, &w->stack_pool,
                                  &w->span_pool,  &w->scratch,     &w->out};
        for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
                jfr_buf_free(bufs[i]);
        free(w->thread_list);
        free(w->samples);
        free(w->setv);
        free(w->pairs);
        free(w);
}

void jfr_writer_counters(const struct jfr_writer *w, struct jfr_writer_counters *out)
{
        *out = w->c;
}

/* ---- chunk state ---- */

void jfr_writer_abort_chunk(struct jfr_writer *w)
{
        if (!w->in_chunk)
                return;
        w->in_chunk = 0;
        jfr_strtab_clear(&w->syms);
        jfr_strtab_clear(&w->label_keys);
        jfr_strtab_clear(&w->label_values);
        struct jfr_u64map *maps[] = {&w->classes, &w->methods, &w->stacks,       &w->spans,
                                     &w->sets,    &w->tids,    &w->chunk_threads};
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                jfr_u64map_clear(maps[i]);
        struct jfr_buf *bufs[] = {&w->class_pool, &w->method_pool, &w->stack_pool, &w->span_pool};
        for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
                jfr_buf_reset(bufs[i]);
        w->nclasses = w->nmethods = w->nstacks = w->nspans = 0;
        w->nthreads = w->nsets = w->npairs = 0;
        w->nsamples = 0;
        w->unknown_stack_key = 0;
        w->chunk_dropped_keys = w->chunk_unknown_stacks = 0;
}

int jfr_writer_begin_chunk(struct jfr_writer *w, uint64_t start_wall_ns, uint64_t start_ticks)
{
        if (w->in_chunk)
                return -EBUSY;
        if (w->next_sym > KEY_LIMIT / 2 || w->next_stack > KEY_LIMIT / 2 ||
            w->next_method > KEY_LIMIT / 2 || w->next_value > KEY_LIMIT / 2 ||
            w->next_span > KEY_LIMIT / 2 || w->next_class > KEY_LIMIT / 2)
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
        w->span_base = w->next_span;
        memset(&w->stats, 0, sizeof(w->stats));
        return 0;
}

static uint64_t file_ticks(const struct jfr_writer *w, uint64_t ns)
{
        int64_t d = (int64_t)(ns - w->start_ticks);
        if (d < -(int64_t)JFR_TICK_SLACK_NS)
                d = -(int64_t)JFR_TICK_SLACK_NS;
        return (uint64_t)((d + (int64_t)JFR_TICK_SLACK_NS) / 1000);
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

/* Identity bytes: 4-byte tid, os name, NUL, java name (names sanitized: no NUL inside). */
int jfr_writer_add_thread(struct jfr_writer *w, pid_t tid, const char *os_name,
                          const char *java_name)
{
        if (!w->in_chunk)
                return -EINVAL;
        char id[4 + 2 * 256];
        uint32_t t = (uint32_t)tid;
        memcpy(id, &t, 4);
        size_t n = 4 + jfr_utf8_sanitize(os_name ? os_name : "", os_name ? strlen(os_name) : 0,
                                         id + 4, 256);
        id[n++] = 0;
        const char *jn = java_name ? java_name : os_name;
        n += jfr_utf8_sanitize(jn ? jn : "", jn ? strlen(jn) : 0, id + n, 256);
        uint32_t idx;
        int err = jfr_strtab_intern(&w->thread_ids, id, n, &idx, NULL);
        uint32_t key = w->thread_base + idx + 1;
        if (!err && key > KEY_LIMIT)
                err = -EOVERFLOW;
        if (!err)
                err = jfr_u64map_put(&w->tids, t, key);
        if (!err)
                err = mark_thread(w, key);
        return err;
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
        int err = grow((void **)&w->setv, &w->set_cap, sizeof(*w->setv), w->nsets + 1);
        if (!err)
                err = grow((void **)&w->pairs, &w->pair_cap, sizeof(*w->pairs),
                           (size_t)w->npairs + JFR_MAX_LABELS_PER_SET);
        if (err)
                return err;
        struct label_set *s = &w->setv[w->nsets];
        s->first = w->npairs;
        s->n = 0;
        for (size_t i = 0; i < n && s->n < JFR_MAX_LABELS_PER_SET; i++) {
                char t[JFR_MAX_STRING];
                uint32_t k, val;
                int added;
                if (!l[i].key || !l[i].key_len)
                        continue;
                size_t tn = jfr_utf8_sanitize(l[i].key, l[i].key_len, t, 256);
                if ((err = jfr_strtab_intern(&w->label_keys, t, tn, &k, &added)))
                        return err;
                if (k >= JFR_MAX_LABEL_KEYS) {
                        w->c.dropped_label_keys += added;
                        w->chunk_dropped_keys += added;
                        continue;
                }
                int dup = 0;
                for (uint32_t j = 0; j < s->n; j++)
                        dup |= w->pairs[s->first + j].field == k;
                if (dup)
                        continue;
                tn = jfr_utf8_sanitize(l[i].value ? l[i].value : "",
                                       l[i].value ? l[i].value_len : 0, t, sizeof(t));
                if ((err = jfr_strtab_intern(&w->label_values, t, tn, &val, NULL)))
                        return err;
                w->pairs[s->first + s->n++] = (struct label_pair){k, val};
        }
        if ((err = jfr_u64map_put(&w->sets, context_id, w->nsets)))
                return err;
        w->npairs += s->n;
        w->nsets++;
        return 0;
}

static int span_key(struct jfr_writer *w, uint64_t span, uint32_t *key)
{
        uint32_t idx;
        if (!span) {
                *key = SPAN_ZERO_KEY;
                return 0;
        }
        if (jfr_u64map_get(&w->spans, span, &idx)) {
                *key = w->span_base + idx;
                return 0;
        }
        if (w->span_base + w->nspans >= KEY_LIMIT)
                return -EOVERFLOW;
        idx = w->nspans;
        int err = jfr_u64map_put(&w->spans, span, idx);
        if (err)
                return err;
        w->nspans++;
        jfr_buf_varint(&w->span_pool, w->span_base + idx);
        jfr_buf_varint(&w->span_pool, span);
        *key = w->span_base + idx;
        return w->span_pool.err;
}

int jfr_writer_add_sample(struct jfr_writer *w, const struct jfr_sample *s)
{
        if (!w->in_chunk)
                return -EINVAL;
        if (w->nsamples == w->sample_cap) {
                size_t nc = w->sample_cap ? w->sample_cap * 2 : 1024;
                struct stored_sample *p = realloc(w->samples, nc * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                w->samples = p;
                w->sample_cap = nc;
        }
        struct stored_sample *o = &w->samples[w->nsamples];
        int err = span_key(w, s->span_id, &o->span_key);
        if (!err)
                err = span_key(w, s->root_span_id, &o->root_key);
        if (err)
                return err;
        o->ticks = s->ticks;
        o->trace_id = s->trace_id;
        o->context_id = s->context_id;
        o->tid = s->tid;
        o->thread_key = 0;
        uint32_t k;
        if (jfr_u64map_get(&w->tids, (uint32_t)s->tid, &k))
                o->thread_key = k; /* the identity current at sample time */
        w->nsamples++;
        return 0;
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
        put_setting(w, t0, JFR_E_CONTEXT_SAMPLE, "enabled", "true");

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
        uint64_t vals[] = {st->samples ? st->samples : w->nsamples,
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

/* Label fields: one per label key seen, named for Java. Returns 0 or -ENOMEM. */
static int label_fields(struct jfr_writer *w, struct jfr_label_field *f, char (*names)[128])
{
        struct jfr_strtab used;
        int err = 0;
        jfr_strtab_init(&used);
        for (uint32_t i = 0; i < w->label_keys.n && i < JFR_MAX_LABEL_KEYS && !err; i++) {
                char base[112];
                jfr_label_field_name(jfr_strtab_str(&w->label_keys, i), base, sizeof(base));
                snprintf(names[i], 128, "%s", base);
                for (int n = 2;; n++) {
                        uint32_t idx;
                        int added;
                        err = jfr_strtab_intern(&used, names[i], strlen(names[i]), &idx, &added);
                        if (err || added)
                                break;
                        snprintf(names[i], 128, "%s_%d", base, n);
                }
                f[i].name = names[i];
                f[i].label = jfr_strtab_str(&w->label_keys, i);
        }
        jfr_strtab_free(&used);
        return err;
}

static int put_samples(struct jfr_writer *w, unsigned nfields)
{
        struct jfr_buf *b = &w->scratch;
        uint32_t vals[JFR_MAX_LABEL_KEYS];
        for (size_t i = 0; i < w->nsamples; i++) {
                struct stored_sample *s = &w->samples[i];
                uint32_t th, st, set = 0;
                int err = sample_thread(w, s, &th);
                if (!err)
                        err = sample_stack(w, s->trace_id, &st);
                if (err)
                        return err;
                uint64_t t = file_ticks(w, s->ticks);
                ev_begin(b, JFR_E_EXECUTION_SAMPLE, t);
                jfr_buf_varint(b, th);
                jfr_buf_varint(b, st);
                jfr_buf_varint(b, STATE_RUNNABLE_KEY);
                put_event(&w->out, b);

                int has_set = s->context_id && jfr_u64map_get(&w->sets, s->context_id, &set) &&
                              w->setv[set].n;
                if (!has_set && s->span_key == SPAN_ZERO_KEY && s->root_key == SPAN_ZERO_KEY)
                        continue;
                memset(vals, 0, nfields * sizeof(vals[0]));
                if (has_set)
                        for (uint32_t j = 0; j < w->setv[set].n; j++) {
                                struct label_pair *p = &w->pairs[w->setv[set].first + j];
                                vals[p->field] = w->value_base + p->value;
                        }
                ev_begin(b, JFR_E_CONTEXT_SAMPLE, t);
                jfr_buf_varint(b, th);
                jfr_buf_varint(b, st);
                jfr_buf_varint(b, s->span_key);
                jfr_buf_varint(b, s->root_key);
                for (unsigned j = 0; j < nfields; j++)
                        jfr_buf_varint(b, vals[j]);
                put_event(&w->out, b);
                w->c.context_samples++;
        }
        w->c.samples += w->nsamples;
        return w->out.err;
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
        unsigned npools =
            4 + !!w->nthreads + !!w->nclasses + !!w->nmethods + !!w->nstacks + !!w->label_values.n;
        jfr_buf_varint(o, npools);

        pool_head(o, JFR_T_FRAMETYPE, 3);
        static const char *const ft[] = {"Native", "C++", "Kernel"};
        for (int i = 0; i < 3; i++) {
                jfr_buf_varint(o, JFR_FRAME_NATIVE + (unsigned)i);
                jfr_buf_cstring(o, ft[i]);
        }
        pool_head(o, JFR_T_THREADSTATE, 1);
        jfr_buf_varint(o, STATE_RUNNABLE_KEY);
        jfr_buf_cstring(o, "STATE_RUNNABLE");

        if (w->nthreads) {
                pool_head(o, JFR_T_THREAD, w->nthreads);
                for (uint32_t i = 0; i < w->nthreads; i++) {
                        uint32_t k = w->thread_list[i], tid;
                        const char *id = jfr_strtab_str(&w->thread_ids, k - w->thread_base - 1);
                        memcpy(&tid, id, 4);
                        const char *os = id + 4, *jn = os + strlen(os) + 1;
                        jfr_buf_varint(o, k);
                        jfr_buf_cstring(o, os);
                        jfr_buf_varint(o, tid);
                        jfr_buf_cstring(o, jn);
                        jfr_buf_varint(o, 0); /* javaThreadId: 0 = not a Java thread */
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
        pool_head(o, JFR_T_SPANID, 1 + w->nspans);
        jfr_buf_varint(o, SPAN_ZERO_KEY);
        jfr_buf_varint(o, 0);
        jfr_buf_put(o, w->span_pool.data, w->span_pool.len);
        if (w->label_values.n) {
                pool_head(o, JFR_T_LABELVALUE, w->label_values.n);
                for (uint32_t i = 0; i < w->label_values.n; i++) {
                        jfr_buf_varint(o, w->value_base + i);
                        jfr_buf_string(o, jfr_strtab_str(&w->label_values, i),
                                       w->label_values.len[i]);
                }
        }
        jfr_buf_patch_varint(o, szoff, o->len - start, 5);
}

static int append_chunk(struct jfr_writer *w)
{
        const uint8_t *p = w->out.data;
        size_t left = w->out.len;
        uint64_t off = w->good_size;
        int err = 0;
        while (left) {
                ssize_t n = pwrite(w->fd, p, left, (off_t)off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        err = -errno;
                        break;
                }
                if (n == 0) {
                        err = -EIO;
                        break;
                }
                p += n;
                off += (uint64_t)n;
                left -= (size_t)n;
        }
        if (!err && !(w->flags & JFR_WRITER_NO_FSYNC) && fdatasync(w->fd))
                err = -errno;
        if (err) {
                /* cut the partial chunk off; the file keeps its complete chunks */
                w->c.append_errors++;
                if (ftruncate(w->fd, (off_t)w->good_size) && !err)
                        err = -errno;
                return err;
        }
        w->good_size = off;
        return 0;
}

int jfr_writer_finish_chunk(struct jfr_writer *w, uint64_t end_ticks, size_t *chunk_bytes)
{
        if (chunk_bytes)
                *chunk_bytes = 0;
        if (!w->in_chunk)
                return -EINVAL;
        struct jfr_label_field fields[JFR_MAX_LABEL_KEYS];
        uint32_t empty;
        uint64_t t0 = file_ticks(w, w->start_ticks), t1 = file_ticks(w, end_ticks);
        if (t1 < t0)
                t1 = t0;
        unsigned nfields =
            w->label_keys.n < JFR_MAX_LABEL_KEYS ? w->label_keys.n : JFR_MAX_LABEL_KEYS;
        int err = symbol(w, "", 0, &empty);
        if (!err)
                err = label_fields(w, fields, w->field_names);
        if (err)
                goto out;

        struct jfr_buf *o = &w->out;
        jfr_buf_reset(o);
        jfr_buf_put(o, "FLR\0", 4);
        jfr_buf_be16(o, 2);
        jfr_buf_be16(o, 1);
        for (int i = 0; i < 7; i++)
                jfr_buf_be64(o, 0); /* patched below */
        jfr_buf_be32(o, 1);         /* state 0 (finished), flags: compressed integers */

        if ((err = put_samples(w, nfields)))
                goto out;
        put_info_events(w, t0, t1, end_ticks);
        size_t md_off = o->len;
        if ((err = jfr_metadata_write(o, t0, w->seq, fields, nfields)))
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
        if ((err = append_chunk(w)))
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
        w->next_value = w->value_base + w->label_values.n;
        w->next_span = w->span_base + w->nspans;
        jfr_writer_abort_chunk(w);
        return err;
}
