/* SPDX-License-Identifier: MIT */
/*
 * pprof.c — builds and writes the pprof profile (format in pprof.h) from the collapsed
 * table. Owns the profile's interning tables (strings, mappings, functions, locations: each
 * distinct one stored once and referred to by id) for the duration of one pprof_write.
 * Must never aggregate on its own (collapsed.c does) and never print anywhere but the FILE
 * it is given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "sink/frame_names.h"
#include "sink/pprof.h"
#include "stack/symbolize.h"
#include "util/gzip.h"
#include "util/idmap.h"

#define SPAN_HEX_LEN 16
/* Pseudo frames, keyed like frames with a module id no real frame has. */

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

struct builder {
        const struct frame_names *names;
        uint64_t period;
        const struct pprof_meta *meta;
        struct ptrvec strs, maps, funcs, locs, samples;
        struct idmap strmap, mapmap, funcmap, locmap;
        int64_t k_process, k_thread, k_pid, k_span;
};

/* The string table index of s[0..n), added when new; or -ENOMEM. */
static int64_t str(struct builder *b, const char *s, size_t n)
{
        uint64_t idx;
        char *copy;

        if (idmap_get(&b->strmap, s, n, &idx))
                return (int64_t)idx;
        copy = strndup(s, n);
        idx = b->strs.n;
        if (ptrvec_push(&b->strs, copy) || idmap_add(&b->strmap, s, n, idx))
                return -ENOMEM;
        return (int64_t)idx;
}

static int64_t cstr(struct builder *b, const char *s)
{
        return str(b, s, strlen(s));
}

/* The mapping id of a module (1-based), added when new; or -ENOMEM. */
static int64_t mapping(struct builder *b, uint32_t module_id)
{
        struct module_info mi = {0};
        const char *name = "[unknown]";
        uint64_t id;
        Mapping *m;

        if (idmap_get(&b->mapmap, &module_id, sizeof(module_id), &id))
                return (int64_t)id;
        if (module_id == CTXPROF_MODULE_KERNEL)
                name = "[kernel.kallsyms]";
        else if (module_id != CTXPROF_MODULE_UNKNOWN && b->names->module &&
                 !b->names->module(b->names->ctx, module_id, &mi) && mi.path)
                name = mi.path;
        m = malloc(sizeof(*m));
        if (!m)
                return -ENOMEM;
        perftools__profiles__mapping__init(m);
        id = b->maps.n + 1;
        m->id = id;
        m->filename = cstr(b, name);
        m->build_id = cstr(b, mi.build_id_hex ? mi.build_id_hex : "");
        m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames =
            b->names->frame != NULL;
        if (m->filename < 0 || m->build_id < 0 || ptrvec_push(&b->maps, m) ||
            idmap_add(&b->mapmap, &module_id, sizeof(module_id), id))
                return -ENOMEM;
        return (int64_t)id;
}

/* The function id for (name, file) (file may be NULL), added when new; or -ENOMEM. */
static int64_t function(struct builder *b, const char *name, const char *file)
{
        int64_t key[2] = {cstr(b, name), cstr(b, file ? file : "")};
        uint64_t id;
        Function *f;

        if (key[0] < 0 || key[1] < 0)
                return -ENOMEM;
        if (idmap_get(&b->funcmap, key, sizeof(key), &id))
                return (int64_t)id;
        f = malloc(sizeof(*f));
        if (!f)
                return -ENOMEM;
        perftools__profiles__function__init(f);
        id = b->funcs.n + 1;
        f->id = id;
        f->name = f->system_name = key[0];
        f->filename = key[1];
        if (ptrvec_push(&b->funcs, f) || idmap_add(&b->funcmap, key, sizeof(key), id))
                return -ENOMEM;
        return (int64_t)id;
}

/* Fills loc's lines (innermost first, as pprof wants) for a named frame or a pseudo frame;
 * a frame the symbolizer cannot name gets none. 0 or -ENOMEM. */
static int location_lines(struct builder *b, Location *loc, const struct ctxprof_frame *fr)
{
        struct sym_frame out[SYM_MAX_INLINE];
        int n = frame_names_lookup(b->names, fr, out, SYM_MAX_INLINE);

        if (n < 1)
                return n;
        loc->line = calloc((size_t)n, sizeof(*loc->line));
        if (!loc->line)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                Line *l = malloc(sizeof(*l));
                int64_t fid;

                if (!l)
                        return -ENOMEM;
                perftools__profiles__line__init(l);
                loc->line[loc->n_line++] = l;
                fid = function(b, out[i].function ? out[i].function : "??", out[i].file);
                if (fid < 0)
                        return -ENOMEM;
                l->function_id = (uint64_t)fid;
                l->line = out[i].line > 0 ? out[i].line : 0;
        }
        return 0;
}

/* The location id of a frame, added (symbolized) when new; or -ENOMEM. */
static int64_t location(struct builder *b, const struct ctxprof_frame *fr)
{
        uint64_t id;
        Location *loc;

        if (idmap_get(&b->locmap, fr, sizeof(*fr), &id))
                return (int64_t)id;
        loc = malloc(sizeof(*loc));
        if (!loc)
                return -ENOMEM;
        perftools__profiles__location__init(loc);
        id = b->locs.n + 1;
        loc->id = id;
        if (ptrvec_push(&b->locs, loc))
                return -ENOMEM;
        if (fr->module_id != PSEUDO_MODULE) {
                int64_t mid = mapping(b, fr->module_id);

                if (mid < 0)
                        return mid;
                loc->mapping_id = (uint64_t)mid;
                loc->address = fr->offset;
        }
        if (location_lines(b, loc, fr) || idmap_add(&b->locmap, fr, sizeof(*fr), id))
                return -ENOMEM;
        return (int64_t)id;
}

static Label *label_at(Sample *s, int64_t key)
{
        Label *l = malloc(sizeof(*l));

        if (!l)
                return NULL;
        perftools__profiles__label__init(l);
        l->key = key;
        s->label[s->n_label++] = l;
        return l;
}

/* Labels of one sample: process, thread, pid, span_id, the context labels. 0 or -ENOMEM. */
static int sample_labels(struct builder *b, Sample *s, const struct collapsed_entry *e)
{
        char span[SPAN_HEX_LEN + 1];
        Label *l;

        s->label = calloc(e->n_labels + 4, sizeof(*s->label));
        if (!s->label)
                return -ENOMEM;
        if (!(l = label_at(s, b->k_process)) ||
            (l->str = str(b, e->process_len ? e->process : "?",
                          e->process_len ? e->process_len : 1)) < 0)
                return -ENOMEM;
        if (!(l = label_at(s, b->k_thread)) ||
            (l->str = str(b, e->comm_len ? e->comm : "?", e->comm_len ? e->comm_len : 1)) < 0)
                return -ENOMEM;
        if (!(l = label_at(s, b->k_pid)))
                return -ENOMEM;
        l->num = e->pid;
        if (e->has_span) {
                snprintf(span, sizeof(span), "%016llx", (unsigned long long)e->span_id);
                if (!(l = label_at(s, b->k_span)) || (l->str = cstr(b, span)) < 0)
                        return -ENOMEM;
        }
        for (unsigned i = 0; i < e->n_labels; i++) {
                int64_t k;

                /* an OpenTelemetry span_id label says what the span label above says */
                if (e->has_span && e->labels[i].key_len == 7 &&
                    !memcmp(e->labels[i].key, "span_id", 7))
                        continue;
                k = str(b, e->labels[i].key, e->labels[i].key_len);

                if (k < 0 || !(l = label_at(s, k)) ||
                    (l->str = str(b, e->labels[i].value, e->labels[i].value_len)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* collapsed_foreach callback: one Sample for one aggregated key. */
static int add_sample(void *arg, const struct collapsed_entry *e)
{
        struct builder *b = arg;
        Sample *s;
        struct ctxprof_frame pseudo = {.module_id = PSEUDO_MODULE};
        size_t n = e->n_frames + 1;

        if (b->meta->by_pid && e->pid != b->meta->pid)
                return 0;
        s = malloc(sizeof(*s));
        if (ptrvec_push(&b->samples, s))
                return -ENOMEM;
        perftools__profiles__sample__init(s);
        s->location_id = calloc(n, sizeof(*s->location_id));
        s->value = calloc(2, sizeof(*s->value));
        if (!s->location_id || !s->value)
                return -ENOMEM;
        s->n_value = 2;
        s->value[0] = (int64_t)e->count;
        s->value[1] = (int64_t)(e->count * b->period);
        for (unsigned i = 0; i < e->n_frames; i++) {
                int64_t id = location(b, &e->frames[i]);

                if (id < 0)
                        return (int)id;
                s->location_id[s->n_location_id++] = (uint64_t)id;
        }
        /* pprof lists locations leaf first: the marker goes at the root end. */
        if (e->truncated || !e->n_frames) {
                int64_t id;

                pseudo.offset = e->truncated ? PSEUDO_TRUNCATED : PSEUDO_NO_STACK;
                id = location(b, &pseudo);
                if (id < 0)
                        return (int)id;
                s->location_id[s->n_location_id++] = (uint64_t)id;
        }
        return sample_labels(b, s, e);
}

static void builder_free(struct builder *b)
{
        size_t i, j;

        for (i = 0; i < b->samples.n; i++) {
                Sample *s = b->samples.v[i];

                for (j = 0; j < s->n_label; j++)
                        free(s->label[j]);
                free(s->label);
                free(s->location_id);
                free(s->value);
                free(s);
        }
        for (i = 0; i < b->locs.n; i++) {
                Location *l = b->locs.v[i];

                for (j = 0; j < l->n_line; j++)
                        free(l->line[j]);
                free(l->line);
                free(l);
        }
        for (i = 0; i < b->funcs.n; i++)
                free(b->funcs.v[i]);
        for (i = 0; i < b->maps.n; i++)
                free(b->maps.v[i]);
        for (i = 0; i < b->strs.n; i++)
                free(b->strs.v[i]);
        free(b->samples.v);
        free(b->locs.v);
        free(b->funcs.v);
        free(b->maps.v);
        free(b->strs.v);
        idmap_free(&b->strmap);
        idmap_free(&b->mapmap);
        idmap_free(&b->funcmap);
        idmap_free(&b->locmap);
}

/* Profile-level fields: sample types, period, times, the message arrays. 0 or -ENOMEM. */
static int fill_profile(struct builder *b, Profile *p, ValueType vt[2], ValueType **vtp,
                        ValueType *period_type, const struct pprof_meta *meta)
{
        int64_t samples = cstr(b, "samples"), count = cstr(b, "count"), cpu = cstr(b, "cpu"),
                ns = cstr(b, "nanoseconds");

        if (samples < 0 || count < 0 || cpu < 0 || ns < 0)
                return -ENOMEM;
        for (int i = 0; i < 2; i++) {
                perftools__profiles__value_type__init(&vt[i]);
                vtp[i] = &vt[i];
        }
        vt[0].type = samples;
        vt[0].unit = count;
        vt[1].type = cpu;
        vt[1].unit = ns;
        *period_type = vt[1];
        p->n_sample_type = 2;
        p->sample_type = vtp;
        p->period_type = period_type;
        p->period = (int64_t)meta->period_ns;
        p->time_nanos = (int64_t)meta->start_ns;
        p->duration_nanos = (int64_t)meta->duration_ns;
        p->default_sample_type = cpu;
        p->n_sample = b->samples.n;
        p->sample = (Sample **)b->samples.v;
        p->n_mapping = b->maps.n;
        p->mapping = (Mapping **)b->maps.v;
        p->n_location = b->locs.n;
        p->location = (Location **)b->locs.v;
        p->n_function = b->funcs.n;
        p->function = (Function **)b->funcs.v;
        p->n_string_table = b->strs.n;
        p->string_table = (char **)b->strs.v;
        return 0;
}

int pprof_write(const struct collapsed *c, FILE *out, struct modules *mods,
                const struct pprof_meta *meta)
{
        struct frame_names_sym s;
        int err;

        frame_names_sym_init(&s, mods);
        err = pprof_write_named(c, out, &s.names, meta);
        frame_names_sym_free(&s);
        return err;
}

int pprof_write_named(const struct collapsed *c, FILE *out, const struct frame_names *names,
                      const struct pprof_meta *meta)
{
        struct builder b = {.names = names, .period = meta->period_ns, .meta = meta};
        Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
        ValueType vt[2], *vtp[2], period_type;
        uint8_t *buf = NULL;
        size_t len;
        int err = -ENOMEM;

        /* string_table[0] must be "" */
        if (cstr(&b, "") != 0 || (b.k_process = cstr(&b, "process")) < 0 ||
            (b.k_thread = cstr(&b, "thread")) < 0 || (b.k_pid = cstr(&b, "pid")) < 0 ||
            (b.k_span = cstr(&b, "span_id")) < 0)
                goto out;
        err = collapsed_foreach(c, add_sample, &b);
        if (err)
                goto out;
        err = fill_profile(&b, &p, vt, vtp, &period_type, meta);
        if (err)
                goto out;
        len = perftools__profiles__profile__get_packed_size(&p);
        buf = malloc(len ? len : 1);
        err = -ENOMEM;
        if (!buf)
                goto out;
        perftools__profiles__profile__pack(&p, buf);
        err = gzip_write(out, buf, len);
out:
        free(buf);
        builder_free(&b);
        return err;
}
