/* SPDX-License-Identifier: MIT */
/*
 * jfr_convert.c — JFR samples back into the collapsed table, written by the record sinks
 * (jfr_convert.h). Owns the table and the file's frame names: a frame is keyed as
 * (module = 2 + the index of its class name, offset = the index of its (method, line)), or
 * the kernel module for a Kernel frame, and struct frame_names gives those names back to
 * the sinks. Never reads the file or prints (cmd_report.c does).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sink/jfr_convert.h"
#include "jfr/jfr_dict.h"
#include "sink/collapsed.h"
#include "sink/frame_names.h"
#include "sink/otlp.h"
#include "sink/pprof.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/idmap.h"

#define MODULE_FIRST    2    /* module ids below are CTXPROF_MODULE_KERNEL / _UNKNOWN */
#define MAX_LABEL_CHAIN 4096 /* nodes followed in one context (a hostile file may loop) */
#define NAME_MAX_LEN    1024 /* "[unknown] (module)" */
#define LINE_UNKNOWN    (-1)
#define FMT_COLLAPSED   0
#define FMT_PPROF       1
#define FMT_OTLP        2

/* One named frame: its method (an index into names) and line. */
struct fn_line {
        uint32_t name;
        int32_t line;
};

struct jfr_convert {
        int format;
        char *process; /* the samples' process; OTLP: the resources' service.name, whole */
        int64_t pid;   /* OTLP: the resources' process.pid (0: none) */
        const struct otlp_resource_attrs *attrs; /* OTLP: more resource attributes, or NULL */
        /* split by process (jfr_convert_file's res->resource_of), NULL: one process */
        const struct otlp_resource *(*resource_of)(void *ctx, uint32_t pid);
        void *resource_ctx;
        uint32_t last_pid, last_kept;         /* resource_of's last answer (samples come in runs) */
        uint64_t period_ns, start_ns, end_ns; /* of the file jfr_convert_read_file read */
        struct collapsed *c;
        struct jfr_strtab names;   /* method and module names */
        struct jfr_strtab modules; /* module names, by module id - MODULE_FIRST */
        struct fn_line *fns;       /* by frame offset */
        size_t nfns, fns_cap;
        struct idmap fnmap; /* struct fn_line -> its index */
        struct frame_names fn;
};

static int conv_frame(void *ctx, const struct ctxprof_frame *fr, struct sym_frame *out, int max)
{
        struct jfr_convert *rc = ctx;

        if (max < 1 || fr->offset >= rc->nfns)
                return 0;
        out[0] = (struct sym_frame){
            .function = jfr_strtab_str(&rc->names, rc->fns[fr->offset].name),
            .line = rc->fns[fr->offset].line,
        };
        return 1;
}

static int conv_module(void *ctx, uint32_t module_id, struct module_info *out)
{
        struct jfr_convert *rc = ctx;

        if (module_id < MODULE_FIRST || module_id - MODULE_FIRST >= rc->modules.n)
                return -ENOENT;
        *out = (struct module_info){jfr_strtab_str(&rc->modules, module_id - MODULE_FIRST), ""};
        return 0;
}

struct jfr_convert *jfr_convert_new(const char *format, const char *process)
{
        struct jfr_convert *rc = calloc(1, sizeof(*rc));

        if (!rc)
                return NULL;
        rc->process = strdup(process ? process : "?");
        rc->format = !strcmp(format, "pprof")  ? FMT_PPROF
                     : !strcmp(format, "otlp") ? FMT_OTLP
                                               : FMT_COLLAPSED;
        rc->c = collapsed_new(rc->format != FMT_COLLAPSED);
        jfr_strtab_init(&rc->names);
        jfr_strtab_init(&rc->modules);
        rc->fn = (struct frame_names){rc, conv_frame, conv_module};
        if (!rc->c || !rc->process) {
                jfr_convert_free(rc);
                return NULL;
        }
        return rc;
}

void jfr_convert_free(struct jfr_convert *rc)
{
        if (!rc)
                return;
        collapsed_free(rc->c);
        free(rc->process);
        jfr_strtab_free(&rc->names);
        jfr_strtab_free(&rc->modules);
        idmap_free(&rc->fnmap);
        free(rc->fns);
        free(rc);
}

/* The frame offset of (name, line), added when new; or -ENOMEM. */
static int64_t fn_index(struct jfr_convert *rc, const char *name, int32_t line)
{
        struct fn_line k = {.line = line};
        uint64_t idx;

        if (jfr_strtab_intern(&rc->names, name, strlen(name), &k.name, NULL))
                return -ENOMEM;
        if (idmap_get(&rc->fnmap, &k, sizeof(k), &idx))
                return (int64_t)idx;
        if (grow_array((void **)&rc->fns, &rc->fns_cap, sizeof(*rc->fns), rc->nfns + 1, 256))
                return -ENOMEM;
        idx = rc->nfns;
        if (idmap_add(&rc->fnmap, &k, sizeof(k), idx))
                return -ENOMEM;
        rc->fns[rc->nfns++] = k;
        return (int64_t)idx;
}

/* A JFR frame as a keyed frame. 0 or -ENOMEM. */
static int convert_frame(struct jfr_convert *rc, const struct jfr_reader *r,
                         const struct jfr_value *jf, struct ctxprof_frame *out)
{
        const struct jfr_value *m = jfr_value_field(r, jf, "method");
        const struct jfr_value *ft = jfr_value_field(r, jf, "type");
        const char *name = jfr_value_str(r, jfr_value_field(r, m, "name"));
        const char *mod =
            jfr_value_str(r, jfr_value_field(r, jfr_value_field(r, m, "type"), "name"));
        const char *type = jfr_value_str(r, ft);
        char unknown[NAME_MAX_LEN];
        uint64_t line = 0;
        int64_t fn;
        uint32_t mid;

        if (!type)
                type = jfr_value_str(r, jfr_value_field(r, ft, "description"));
        if (!mod)
                mod = "?";
        if (!name || !strcmp(name, "[unknown]")) {
                snprintf(unknown, sizeof(unknown), "[unknown] (%s)", mod);
                name = unknown;
        }
        if (jfr_value_u64(r, jfr_value_field(r, jf, "lineNumber"), &line) || line > INT32_MAX)
                line = (uint64_t)(int64_t)LINE_UNKNOWN;
        fn = fn_index(rc, name, (int32_t)line);
        if (fn < 0)
                return -ENOMEM;
        *out = (struct ctxprof_frame){.offset = (uint64_t)fn};
        if (type && !strcmp(type, "Kernel")) {
                out->module_id = CTXPROF_MODULE_KERNEL;
                out->flags = CTXPROF_FRAME_KERNEL;
                return 0;
        }
        if (jfr_strtab_intern(&rc->modules, mod, strlen(mod), &mid, NULL))
                return -ENOMEM;
        out->module_id = MODULE_FIRST + mid;
        return 0;
}

unsigned jfr_context_labels(const struct jfr_reader *r, const struct jfr_value *ev,
                            const char **key, const char **value, unsigned max)
{
        unsigned n = 0;
        int hops = 0;

        for (const struct jfr_value *c = jfr_value_resolve(r, jfr_value_field(r, ev, "context"));
             c && c->kind == JFR_V_OBJECT && n < max && hops < MAX_LABEL_CHAIN;
             c = jfr_value_resolve(r, jfr_value_field(r, c, "next")), hops++) {
                key[n] = jfr_value_str(r, jfr_value_field(r, c, "key"));
                value[n] = jfr_value_str(r, jfr_value_field(r, c, "value"));
                if (!key[n] || !value[n])
                        break;
                n++;
        }
        return n;
}

/* The process a sample of thread th is counted under: its pid when resource_of names the
 * pid's resource, else 0 (the rest, under the caller's process). */
static pid_t sample_pid(struct jfr_convert *rc, const struct jfr_reader *r,
                        const struct jfr_value *th)
{
        uint64_t pid = 0;

        if (!rc->resource_of)
                return 0;
        if (jfr_value_u64(r, jfr_value_field(r, th, "pid"), &pid) || !pid || pid > INT32_MAX)
                return 0;
        if (pid != rc->last_pid) {
                rc->last_pid = (uint32_t)pid;
                rc->last_kept = rc->resource_of(rc->resource_ctx, (uint32_t)pid) != NULL;
        }
        return rc->last_kept ? (pid_t)pid : 0;
}

/* The sample's labels, as the sampler decodes them. */
static unsigned context_labels(const struct jfr_reader *r, const struct jfr_value *v,
                               struct decoded_label *l)
{
        const char *k[CTXPROF_MAX_LABELS], *val[CTXPROF_MAX_LABELS];
        unsigned n = jfr_context_labels(r, v, k, val, CTXPROF_MAX_LABELS);

        for (unsigned i = 0; i < n; i++)
                l[i] = (struct decoded_label){k[i], strlen(k[i]), val[i], strlen(val[i]), 0};
        return n;
}

int jfr_convert_event(struct jfr_convert *rc, const struct jfr_reader *r,
                      const struct jfr_event *ev)
{
        const struct jfr_value *v = ev->value;
        const struct jfr_value *st = jfr_value_field(r, v, "stackTrace");
        const struct jfr_value *frames = jfr_value_field(r, st, "frames");
        const struct jfr_value *th = jfr_value_field(r, v, "sampledThread");
        const char *tname = jfr_value_str(r, jfr_value_field(r, th, "osName"));
        struct ctxprof_frame *fr = calloc(CTXPROF_MAX_FRAMES, sizeof(*fr));
        struct decoded_sample s = {
            .process = rc->process, .comm = tname ? tname : "?", .frames = fr};
        uint32_t n = frames && frames->kind == JFR_V_ARRAY ? frames->n : 0;
        uint64_t tid = 0, span = 0, root = 0, trunc = 0;
        int err = fr ? 0 : -ENOMEM;

        /* JFR lists the leaf first, as the table does */
        for (uint32_t i = 0; !err && i < n && i < CTXPROF_MAX_FRAMES; i++)
                err = convert_frame(rc, r, &frames->items[i], &fr[s.n_frames++]);
        if (!err) {
                jfr_value_u64(r, jfr_value_field(r, th, "osThreadId"), &tid);
                jfr_value_u64(r, jfr_value_field(r, st, "truncated"), &trunc);
                s.tid = (pid_t)tid;
                s.pid = sample_pid(rc, r, th);
                s.truncated = trunc || n > CTXPROF_MAX_FRAMES;
                s.has_span = !jfr_value_u64(r, jfr_value_field(r, v, "spanId"), &span) && span;
                s.span_id = span;
                jfr_value_u64(r, jfr_value_field(r, v, "localRootSpanId"), &root);
                s.root_span_id = root;
                s.n_labels = context_labels(r, v, s.labels);
                err = collapsed_add(rc->c, &s);
        }
        free(fr);
        return err;
}

int jfr_convert_write(struct jfr_convert *rc, FILE *out, uint64_t period_ns, uint64_t start_ns,
                      uint64_t end_ns)
{
        uint64_t duration = end_ns > start_ns ? end_ns - start_ns : 0;

        if (rc->format == FMT_PPROF) {
                struct pprof_meta m = {
                    .period_ns = period_ns, .start_ns = start_ns, .duration_ns = duration};

                return pprof_write_named(rc->c, out, &rc->fn, &m);
        }
        if (rc->format == FMT_OTLP) {
                struct otlp_meta m = {period_ns, start_ns,  duration,        rc->process,
                                      rc->pid,   rc->attrs, rc->resource_of, rc->resource_ctx};

                return otlp_write(rc->c, out, &rc->fn, &m);
        }
        return collapsed_write_named(rc->c, out, &rc->fn);
}

void jfr_setting_period(const struct jfr_reader *r, const struct jfr_event *ev, uint64_t *period_ns)
{
        const char *name = jfr_value_str(r, jfr_value_field(r, ev->value, "name"));
        const char *value = jfr_value_str(r, jfr_value_field(r, ev->value, "value"));
        unsigned long hz;

        if (name && value && !strcmp(name, "frequency") && sscanf(value, "%lu Hz", &hz) == 1 && hz)
                *period_ns = NS_PER_SEC / hz;
}

int jfr_convert_read_file(struct jfr_convert *rc, const char *path,
                          const struct jfr_convert_resources *res)
{
        uint64_t first = UINT64_MAX, last = 0;
        struct jfr_reader *r = NULL;
        struct jfr_event ev;
        int err = jfr_reader_open(path, &r), more;

        if (res) {
                rc->pid = res->pid;
                rc->attrs = res->attrs;
                rc->resource_of = res->resource_of;
                rc->resource_ctx = res->ctx;
        }
        while (!err && (more = jfr_reader_next_chunk(r)) != 0) {
                const struct jfr_chunk_info *ci = jfr_reader_chunk(r);

                if (more < 0) {
                        err = first == UINT64_MAX ? -EBADMSG : 0; /* keep the complete chunks */
                        break;
                }
                if (ci->start_nanos < first)
                        first = ci->start_nanos;
                if (ci->start_nanos + ci->duration_nanos > last)
                        last = ci->start_nanos + ci->duration_nanos;
                while (!err && jfr_reader_next_event(r, &ev) == 1) {
                        if (!strcmp(ev.type->name, "jdk.ExecutionSample"))
                                err = jfr_convert_event(rc, r, &ev);
                        else if (!strcmp(ev.type->name, "jdk.ActiveSetting"))
                                jfr_setting_period(r, &ev, &rc->period_ns);
                }
        }
        if (!err && first == UINT64_MAX)
                err = -EBADMSG;
        if (!err) {
                rc->start_ns = first;
                rc->end_ns = last;
        }
        if (r)
                jfr_reader_close(r);
        return err;
}

struct pid_count {
        uint32_t pid;
        uint64_t n;
};

static int count_pid(void *arg, const struct collapsed_entry *e)
{
        struct pid_count *pc = arg;

        if (e->pid == pc->pid)
                pc->n += e->count;
        return 0;
}

uint64_t jfr_convert_samples_of(const struct jfr_convert *rc, uint32_t pid)
{
        struct pid_count pc = {pid, 0};

        collapsed_foreach(rc->c, count_pid, &pc);
        return pc.n;
}

int jfr_convert_write_pid(struct jfr_convert *rc, FILE *out, uint32_t pid)
{
        uint64_t duration = rc->end_ns > rc->start_ns ? rc->end_ns - rc->start_ns : 0;
        struct pprof_meta m = {rc->period_ns, rc->start_ns, duration, 1, pid};

        return pprof_write_named(rc->c, out, &rc->fn, &m);
}

int jfr_convert_file(const char *path, const char *format, const char *process,
                     const struct jfr_convert_resources *res, FILE *out)
{
        struct jfr_convert *rc = jfr_convert_new(format, process);
        int err = rc ? jfr_convert_read_file(rc, path, res) : -ENOMEM;

        if (!err)
                err = jfr_convert_write(rc, out, rc->period_ns, rc->start_ns, rc->end_ns);
        jfr_convert_free(rc);
        return err;
}
