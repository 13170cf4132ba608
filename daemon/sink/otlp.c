/* SPDX-License-Identifier: MIT */
/*
 * otlp.c — builds and writes the OTLP profiles request (format in otlp.h) from the collapsed
 * table. Owns the request's dictionary tables (strings, attributes, mappings, functions,
 * locations, stacks, links: each distinct one stored once, its zero value at index 0) and
 * the per-process resources for the duration of one otlp_write. Must never aggregate on its
 * own (collapsed.c does) and never print anywhere but the FILE it is given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "sink/frame_names.h"
#include "sink/otlp.h"
#include "util/idmap.h"

#define SPAN_HEX_LEN   16
#define TRACE_ID_BYTES 16
#define SPAN_ID_BYTES  8
#define PID_KEY_LEN    sizeof(uint32_t)
#define SCOPE_NAME     "ctxprof"
#define KEY_THREAD     "thread.name"
#define KEY_SPAN       "span_id"
#define KEY_TRACE      "trace_id"
#define KEY_BUILD_ID   "process.executable.build_id.gnu"
#define KEY_FRAME_TYPE "profile.frame.type"
#define KEY_SERVICE    "service.name"
#define KEY_PID        "process.pid"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    Request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit KeyValueAndUnit;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;

/* The samples of one process, and what its resource says. */
struct proc {
        uint32_t pid;
        char *name;
        struct ptrvec samples;
};

struct builder {
        const struct frame_names *names;
        struct ptrvec strs, attrs, maps, funcs, locs, stacks, links, procs;
        struct idmap strmap, attrmap, mapmap, funcmap, locmap, stackmap, linkmap, procmap;
        int32_t k_thread, k_span, k_build_id, k_frame_type;
        int32_t a_native, a_kernel; /* profile.frame.type attributes */
};

/* The string table index of s[0..n), added when new; or -ENOMEM. */
static int32_t str(struct builder *b, const char *s, size_t n)
{
        uint64_t idx;
        char *copy;

        if (idmap_get(&b->strmap, s, n, &idx))
                return (int32_t)idx;
        copy = strndup(s, n);
        idx = b->strs.n;
        if (idx > INT32_MAX || ptrvec_push(&b->strs, copy) || idmap_add(&b->strmap, s, n, idx))
                return -ENOMEM;
        return (int32_t)idx;
}

static int32_t cstr(struct builder *b, const char *s)
{
        return str(b, s, strlen(s));
}

/* A table's next index: its size, kept within the int32 indices OTLP uses. */
static int32_t next_index(const struct ptrvec *v)
{
        return v->n < INT32_MAX ? (int32_t)v->n : -ENOMEM;
}

static void free_attr(void *p)
{
        KeyValueAndUnit *a = p;

        if (a && a->value)
                free(a->value->string_value);
        if (a)
                free(a->value);
        free(a);
}

/* A string attribute key = value[0..n); NULL on -ENOMEM. */
static KeyValueAndUnit *attr_new(int32_t key, const char *value, size_t n)
{
        KeyValueAndUnit *a = malloc(sizeof(*a));
        AnyValue *v = malloc(sizeof(*v));
        char *copy = strndup(value, n);

        if (!a || !v || !copy) {
                free(a);
                free(v);
                free(copy);
                return NULL;
        }
        opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
        opentelemetry__proto__common__v1__any_value__init(v);
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        v->string_value = copy;
        a->key_strindex = key;
        a->value = v;
        return a;
}

/* The attribute table index of the string attribute key = value[0..n); or -ENOMEM. */
static int32_t attr_str(struct builder *b, int32_t key, const char *value, size_t n)
{
        size_t klen = sizeof(key) + n;
        unsigned char *k = malloc(klen);
        KeyValueAndUnit *a;
        AnyValue *v;
        int32_t idx = -ENOMEM;
        uint64_t found;

        if (!k)
                return -ENOMEM;
        memcpy(k, &key, sizeof(key));
        memcpy(k + sizeof(key), value, n);
        if (idmap_get(&b->attrmap, k, klen, &found)) {
                free(k);
                return (int32_t)found;
        }
        a = attr_new(key, value, n);
        if (a && next_index(&b->attrs) < 0) {
                free_attr(a);
                a = NULL;
        }
        if (a) {
                v = a->value;
                idx = (int32_t)b->attrs.n;
                if (ptrvec_push(&b->attrs, a)) { /* frees a, not its value */
                        free(v->string_value);
                        free(v);
                        idx = -ENOMEM;
                } else if (idmap_add(&b->attrmap, k, klen, (uint64_t)idx)) {
                        idx = -ENOMEM;
                }
        }
        free(k);
        return idx;
}

static int32_t attr_cstr(struct builder *b, int32_t key, const char *value)
{
        return attr_str(b, key, value, strlen(value));
}

/* One more int32 in a repeated field (sized by the caller). */
static int32_t *int32s(size_t n)
{
        return calloc(n ? n : 1, sizeof(int32_t));
}

/* The mapping table index of a module, added when new; or -ENOMEM. */
static int32_t mapping(struct builder *b, uint32_t module_id)
{
        struct module_info mi = {0};
        const char *name = "[unknown]";
        uint64_t id;
        Mapping *m;
        int32_t idx;

        if (idmap_get(&b->mapmap, &module_id, sizeof(module_id), &id))
                return (int32_t)id;
        if (module_id == CTXPROF_MODULE_KERNEL)
                name = "[kernel.kallsyms]";
        else if (module_id != CTXPROF_MODULE_UNKNOWN && b->names->module &&
                 !b->names->module(b->names->ctx, module_id, &mi) && mi.path)
                name = mi.path;
        m = malloc(sizeof(*m));
        idx = next_index(&b->maps);
        if (!m || idx < 0 || ptrvec_push(&b->maps, m)) {
                if (idx < 0)
                        free(m);
                return -ENOMEM;
        }
        opentelemetry__proto__profiles__v1development__mapping__init(m);
        m->filename_strindex = cstr(b, name);
        if (m->filename_strindex < 0)
                return -ENOMEM;
        if (mi.build_id_hex && mi.build_id_hex[0]) {
                int32_t a = attr_cstr(b, b->k_build_id, mi.build_id_hex);

                m->attribute_indices = int32s(1);
                if (a < 0 || !m->attribute_indices)
                        return -ENOMEM;
                m->attribute_indices[m->n_attribute_indices++] = a;
        }
        if (idmap_add(&b->mapmap, &module_id, sizeof(module_id), (uint64_t)idx))
                return -ENOMEM;
        return idx;
}

/* The function table index of (name, file) (file may be NULL), added when new; or -ENOMEM. */
static int32_t function(struct builder *b, const char *name, const char *file)
{
        int32_t key[2] = {cstr(b, name), cstr(b, file ? file : "")}, idx;
        uint64_t id;
        Function *f;

        if (key[0] < 0 || key[1] < 0)
                return -ENOMEM;
        if (idmap_get(&b->funcmap, key, sizeof(key), &id))
                return (int32_t)id;
        f = malloc(sizeof(*f));
        idx = next_index(&b->funcs);
        if (!f || idx < 0 || ptrvec_push(&b->funcs, f)) {
                if (idx < 0)
                        free(f);
                return -ENOMEM;
        }
        opentelemetry__proto__profiles__v1development__function__init(f);
        f->name_strindex = f->system_name_strindex = key[0];
        f->filename_strindex = key[1];
        if (idmap_add(&b->funcmap, key, sizeof(key), (uint64_t)idx))
                return -ENOMEM;
        return idx;
}

/* Fills loc's lines (innermost first) for a named frame or a pseudo frame; a frame without
 * a name gets none. 0 or -ENOMEM. */
static int location_lines(struct builder *b, Location *loc, const struct ctxprof_frame *fr)
{
        struct sym_frame out[SYM_MAX_INLINE];
        int n = frame_names_lookup(b->names, fr, out, SYM_MAX_INLINE);

        if (n < 1)
                return n;
        loc->lines = calloc((size_t)n, sizeof(*loc->lines));
        if (!loc->lines)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                Line *l = malloc(sizeof(*l));
                int32_t fid;

                if (!l)
                        return -ENOMEM;
                opentelemetry__proto__profiles__v1development__line__init(l);
                loc->lines[loc->n_lines++] = l;
                fid = function(b, out[i].function ? out[i].function : "??", out[i].file);
                if (fid < 0)
                        return -ENOMEM;
                l->function_index = fid;
                l->line = out[i].line > 0 ? out[i].line : 0;
        }
        return 0;
}

/* The location table index of a frame, added (named) when new; or -ENOMEM. */
static int32_t location(struct builder *b, const struct ctxprof_frame *fr)
{
        uint64_t id;
        Location *loc;
        int32_t idx;

        if (idmap_get(&b->locmap, fr, sizeof(*fr), &id))
                return (int32_t)id;
        loc = malloc(sizeof(*loc));
        idx = next_index(&b->locs);
        if (!loc || idx < 0 || ptrvec_push(&b->locs, loc)) {
                if (idx < 0)
                        free(loc);
                return -ENOMEM;
        }
        opentelemetry__proto__profiles__v1development__location__init(loc);
        if (fr->module_id != PSEUDO_MODULE) {
                int32_t mid = mapping(b, fr->module_id);

                if (mid < 0)
                        return mid;
                loc->mapping_index = mid;
                loc->address = fr->offset;
                loc->attribute_indices = int32s(1);
                if (!loc->attribute_indices)
                        return -ENOMEM;
                loc->attribute_indices[loc->n_attribute_indices++] =
                    fr->module_id == CTXPROF_MODULE_KERNEL ? b->a_kernel : b->a_native;
        }
        if (location_lines(b, loc, fr) || idmap_add(&b->locmap, fr, sizeof(*fr), (uint64_t)idx))
                return -ENOMEM;
        return idx;
}

/* The stack table index of loc[0..n) (leaf first), added when new; or -ENOMEM. */
static int32_t stack(struct builder *b, const int32_t *loc, size_t n)
{
        uint64_t id;
        Stack *s;
        int32_t idx;

        if (idmap_get(&b->stackmap, loc, n * sizeof(*loc), &id))
                return (int32_t)id;
        s = malloc(sizeof(*s));
        idx = next_index(&b->stacks);
        if (!s || idx < 0 || ptrvec_push(&b->stacks, s)) {
                if (idx < 0)
                        free(s);
                return -ENOMEM;
        }
        opentelemetry__proto__profiles__v1development__stack__init(s);
        s->location_indices = int32s(n);
        if (!s->location_indices)
                return -ENOMEM;
        memcpy(s->location_indices, loc, n * sizeof(*loc));
        s->n_location_indices = n;
        if (idmap_add(&b->stackmap, loc, n * sizeof(*loc), (uint64_t)idx))
                return -ENOMEM;
        return idx;
}

/* A link with ids[0..16) the trace id and ids[16..24) the span id. */
static Link *link_new(const uint8_t *ids)
{
        Link *l = malloc(sizeof(*l));
        uint8_t *copy = malloc(TRACE_ID_BYTES + SPAN_ID_BYTES);

        if (!l || !copy) {
                free(l);
                free(copy);
                return NULL;
        }
        opentelemetry__proto__profiles__v1development__link__init(l);
        memcpy(copy, ids, TRACE_ID_BYTES + SPAN_ID_BYTES);
        l->trace_id = (ProtobufCBinaryData){TRACE_ID_BYTES, copy};
        l->span_id = (ProtobufCBinaryData){SPAN_ID_BYTES, copy + TRACE_ID_BYTES};
        return l;
}

/* The link table index of ids (trace id, span id), added when new; or -ENOMEM. */
static int32_t link_index(struct builder *b, const uint8_t *ids)
{
        uint64_t id;
        int32_t idx;

        if (idmap_get(&b->linkmap, ids, TRACE_ID_BYTES + SPAN_ID_BYTES, &id))
                return (int32_t)id;
        Link *l = link_new(ids);
        void *data = l ? l->trace_id.data : NULL;

        idx = next_index(&b->links);
        if (idx < 0 || !l || ptrvec_push(&b->links, l)) { /* ptrvec_push frees l on failure */
                if (idx < 0 && l)
                        free(l);
                free(data);
                return -ENOMEM;
        }
        if (idmap_add(&b->linkmap, ids, TRACE_ID_BYTES + SPAN_ID_BYTES, (uint64_t)idx))
                return -ENOMEM;
        return idx;
}

/* s[0..n) as exactly `bytes` bytes of hex into out: 0, or -EINVAL. */
static int unhex(const char *s, size_t n, uint8_t *out, size_t bytes)
{
        if (n != bytes * 2)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                int c = (unsigned char)s[i], v;

                if (c >= '0' && c <= '9')
                        v = c - '0';
                else if (c >= 'a' && c <= 'f')
                        v = c - 'a' + 10;
                else if (c >= 'A' && c <= 'F')
                        v = c - 'A' + 10;
                else
                        return -EINVAL;
                if (i % 2)
                        out[i / 2] |= (uint8_t)v;
                else
                        out[i / 2] = (uint8_t)(v << 4);
        }
        return 0;
}

static int is_key(const struct collapsed_label *l, const char *key)
{
        return l->key_len == strlen(key) && !memcmp(l->key, key, l->key_len);
}

/* The trace context of e as a link (OpenTelemetry labels trace_id and span_id, or trace_id
 * and the span record): its index, 0 when e has none, or -ENOMEM. */
static int32_t sample_link(struct builder *b, const struct collapsed_entry *e)
{
        uint8_t ids[TRACE_ID_BYTES + SPAN_ID_BYTES] = {0};
        int trace = 0, span = 0;

        for (unsigned i = 0; i < e->n_labels; i++) {
                const struct collapsed_label *l = &e->labels[i];

                if (is_key(l, KEY_TRACE))
                        trace = !unhex(l->value, l->value_len, ids, TRACE_ID_BYTES);
                else if (is_key(l, KEY_SPAN))
                        span = !unhex(l->value, l->value_len, ids + TRACE_ID_BYTES, SPAN_ID_BYTES);
        }
        if (trace && !span && e->has_span) {
                for (int i = 0; i < SPAN_ID_BYTES; i++)
                        ids[TRACE_ID_BYTES + i] = (uint8_t)(e->span_id >> (56 - 8 * i));
                span = 1;
        }
        return trace && span ? link_index(b, ids) : 0;
}

/* Attributes of one sample: thread.name, the context labels, span_id when no link says it.
 * 0 or -ENOMEM. */
static int sample_attrs(struct builder *b, Sample *s, const struct collapsed_entry *e)
{
        char span[SPAN_HEX_LEN + 1];
        int32_t a;

        s->attribute_indices = int32s(e->n_labels + 2);
        if (!s->attribute_indices)
                return -ENOMEM;
        a = attr_str(b, b->k_thread, e->comm_len ? e->comm : "?", e->comm_len ? e->comm_len : 1);
        if (a < 0)
                return -ENOMEM;
        s->attribute_indices[s->n_attribute_indices++] = a;
        if (e->has_span && !s->link_index) {
                snprintf(span, sizeof(span), "%016llx", (unsigned long long)e->span_id);
                if ((a = attr_cstr(b, b->k_span, span)) < 0)
                        return -ENOMEM;
                s->attribute_indices[s->n_attribute_indices++] = a;
        }
        for (unsigned i = 0; i < e->n_labels; i++) {
                const struct collapsed_label *l = &e->labels[i];
                int32_t k;

                /* what the link or the span attribute above says already */
                if ((s->link_index && (is_key(l, KEY_TRACE) || is_key(l, KEY_SPAN))) ||
                    (e->has_span && is_key(l, KEY_SPAN)) || is_key(l, KEY_THREAD))
                        continue;
                k = str(b, l->key, l->key_len);
                if (k < 0 || (a = attr_str(b, k, l->value, l->value_len)) < 0)
                        return -ENOMEM;
                s->attribute_indices[s->n_attribute_indices++] = a;
        }
        return 0;
}

/* The process e belongs to, added when new; NULL on -ENOMEM. */
static struct proc *process_of(struct builder *b, const struct collapsed_entry *e)
{
        uint64_t idx;
        struct proc *p;
        char *name;

        if (idmap_get(&b->procmap, &e->pid, PID_KEY_LEN, &idx))
                return b->procs.v[idx];
        p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        p->pid = e->pid;
        p->name = e->process_len ? strndup(e->process, e->process_len) : strdup("?");
        idx = b->procs.n;
        if (!p->name) {
                free(p);
                return NULL;
        }
        name = p->name;
        if (ptrvec_push(&b->procs, p)) { /* frees p, not its name */
                free(name);
                return NULL;
        }
        if (idmap_add(&b->procmap, &e->pid, PID_KEY_LEN, idx))
                return NULL;
        return p;
}

/* collapsed_foreach callback: one Sample for one aggregated key. */
static int add_sample(void *arg, const struct collapsed_entry *e)
{
        struct builder *b = arg;
        struct ctxprof_frame pseudo = {.module_id = PSEUDO_MODULE};
        int32_t loc[CTXPROF_MAX_FRAMES + 1], st;
        struct proc *p = process_of(b, e);
        size_t n = 0;
        Sample *s;

        if (!p)
                return -ENOMEM;
        for (unsigned i = 0; i < e->n_frames; i++) {
                int32_t id = location(b, &e->frames[i]);

                if (id < 0)
                        return -ENOMEM;
                loc[n++] = id;
        }
        /* leaf first: the marker goes at the root end */
        if (e->truncated || !e->n_frames) {
                pseudo.offset = e->truncated ? PSEUDO_TRUNCATED : PSEUDO_NO_STACK;
                if ((loc[n++] = location(b, &pseudo)) < 0)
                        return -ENOMEM;
        }
        st = stack(b, loc, n);
        s = malloc(sizeof(*s));
        if (st < 0 || ptrvec_push(&p->samples, s))
                return -ENOMEM;
        opentelemetry__proto__profiles__v1development__sample__init(s);
        s->stack_index = st;
        s->values = calloc(1, sizeof(*s->values));
        if (!s->values)
                return -ENOMEM;
        s->n_values = 1;
        s->values[0] = (int64_t)e->count;
        s->link_index = sample_link(b, e);
        if (s->link_index < 0)
                return -ENOMEM;
        return sample_attrs(b, s, e);
}

/* Every table's zero value at index 0, and the keys used everywhere. 0 or -ENOMEM. */
static int builder_init(struct builder *b)
{
        static const uint8_t zero_ids[TRACE_ID_BYTES + SPAN_ID_BYTES];
        KeyValueAndUnit *a = malloc(sizeof(*a));
        Mapping *m = malloc(sizeof(*m));
        Location *l = malloc(sizeof(*l));
        Function *f = malloc(sizeof(*f));
        Stack *s = malloc(sizeof(*s));

        if (a)
                opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
        if (m)
                opentelemetry__proto__profiles__v1development__mapping__init(m);
        if (l)
                opentelemetry__proto__profiles__v1development__location__init(l);
        if (f)
                opentelemetry__proto__profiles__v1development__function__init(f);
        if (s)
                opentelemetry__proto__profiles__v1development__stack__init(s);
        /* each push frees its pointer on failure; the later ones are freed here */
        if (ptrvec_push(&b->attrs, a)) {
                free(m), free(l), free(f), free(s);
                return -ENOMEM;
        }
        if (ptrvec_push(&b->maps, m)) {
                free(l), free(f), free(s);
                return -ENOMEM;
        }
        if (ptrvec_push(&b->locs, l)) {
                free(f), free(s);
                return -ENOMEM;
        }
        if (ptrvec_push(&b->funcs, f)) {
                free(s);
                return -ENOMEM;
        }
        if (ptrvec_push(&b->stacks, s) || ptrvec_push(&b->links, link_new(zero_ids)) ||
            cstr(b, "") != 0 || (b->k_thread = cstr(b, KEY_THREAD)) < 0 ||
            (b->k_span = cstr(b, KEY_SPAN)) < 0 || (b->k_build_id = cstr(b, KEY_BUILD_ID)) < 0 ||
            (b->k_frame_type = cstr(b, KEY_FRAME_TYPE)) < 0 ||
            (b->a_native = attr_cstr(b, b->k_frame_type, "native")) < 0 ||
            (b->a_kernel = attr_cstr(b, b->k_frame_type, "kernel")) < 0)
                return -ENOMEM;
        return 0;
}

static void free_proc(void *arg)
{
        struct proc *p = arg;

        for (size_t j = 0; j < p->samples.n; j++) {
                Sample *s = p->samples.v[j];

                free(s->attribute_indices);
                free(s->values);
                free(s);
        }
        free(p->samples.v);
        free(p->name);
        free(p);
}

static void free_location(void *arg)
{
        Location *l = arg;

        for (size_t j = 0; j < l->n_lines; j++)
                free(l->lines[j]);
        free(l->lines);
        free(l->attribute_indices);
        free(l);
}

static void free_mapping(void *arg)
{
        free(((Mapping *)arg)->attribute_indices);
        free(arg);
}

static void free_stack(void *arg)
{
        free(((Stack *)arg)->location_indices);
        free(arg);
}

static void free_link(void *arg)
{
        free(((Link *)arg)->trace_id.data); /* the span id shares it */
        free(arg);
}

/* Each element of a with fn, then the array. */
static void free_all(struct ptrvec *a, void (*fn)(void *))
{
        for (size_t i = 0; i < a->n; i++)
                fn(a->v[i]);
        free(a->v);
}

static void builder_free(struct builder *b)
{
        struct idmap *maps[] = {&b->strmap, &b->attrmap,  &b->mapmap,  &b->funcmap,
                                &b->locmap, &b->stackmap, &b->linkmap, &b->procmap};

        free_all(&b->procs, free_proc);
        free_all(&b->locs, free_location);
        free_all(&b->maps, free_mapping);
        free_all(&b->stacks, free_stack);
        free_all(&b->links, free_link);
        free_all(&b->attrs, free_attr);
        free_all(&b->funcs, free);
        free_all(&b->strs, free);
        for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
                idmap_free(maps[i]);
}

/* What the request's messages above the dictionary need, per process. */
struct envelope {
        ResourceProfiles rp;
        ResourceProfiles *rpp;
        Resource res;
        KeyValue kv[2 + OTLP_RESOURCE_ATTRS_MAX], *kvp[2 + OTLP_RESOURCE_ATTRS_MAX];
        AnyValue av[2 + OTLP_RESOURCE_ATTRS_MAX];
        ScopeProfiles sp, *spp;
        Profile prof, *profp;
};

/* The resource, scope and profile of process p into env. */
static void envelope_fill(struct envelope *env, struct proc *p, Scope *scope,
                          ValueType *sample_type, ValueType *period_type,
                          const struct otlp_meta *meta)
{
        const struct otlp_resource *r =
            meta->resource_of ? meta->resource_of(meta->resource_ctx, p->pid) : NULL;
        const struct otlp_resource_attrs *a = r ? r->attrs : meta->attrs;
        const char *service = r ? r->service : meta->service;
        int64_t pid = r ? r->pid : meta->pid ? meta->pid : p->pid;
        unsigned na = a ? (a->n < OTLP_RESOURCE_ATTRS_MAX ? a->n : OTLP_RESOURCE_ATTRS_MAX) : 0;
        unsigned at;

        opentelemetry__proto__profiles__v1development__resource_profiles__init(&env->rp);
        opentelemetry__proto__resource__v1__resource__init(&env->res);
        opentelemetry__proto__profiles__v1development__scope_profiles__init(&env->sp);
        opentelemetry__proto__profiles__v1development__profile__init(&env->prof);
        for (unsigned i = 0; i < 2 + na; i++) {
                opentelemetry__proto__common__v1__key_value__init(&env->kv[i]);
                opentelemetry__proto__common__v1__any_value__init(&env->av[i]);
                env->kv[i].value = &env->av[i];
                env->kvp[i] = &env->kv[i];
        }
        env->kv[0].key = KEY_SERVICE;
        env->av[0].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        env->av[0].string_value = service ? (char *)service : p->name;
        at = 1;
        if (pid) {
                env->kv[1].key = KEY_PID;
                env->av[1].value_case =
                    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
                env->av[1].int_value = pid;
                at++;
        }
        for (unsigned i = 0; i < na; i++, at++) {
                env->kv[at].key = (char *)a->key[i];
                env->av[at].value_case =
                    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
                env->av[at].string_value = (char *)a->value[i];
        }
        env->res.n_attributes = at;
        env->res.attributes = env->kvp;
        env->prof.sample_type = sample_type;
        env->prof.period_type = period_type;
        env->prof.period = (int64_t)meta->period_ns;
        env->prof.time_unix_nano = meta->start_ns;
        env->prof.duration_nano = meta->duration_ns;
        env->prof.n_samples = p->samples.n;
        env->prof.samples = (Sample **)p->samples.v;
        env->profp = &env->prof;
        env->sp.scope = scope;
        env->sp.n_profiles = 1;
        env->sp.profiles = &env->profp;
        env->spp = &env->sp;
        env->rp.resource = &env->res;
        env->rp.n_scope_profiles = 1;
        env->rp.scope_profiles = &env->spp;
        env->rpp = &env->rp;
}

static void dictionary_fill(Dictionary *d, struct builder *b)
{
        opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
        d->n_mapping_table = b->maps.n;
        d->mapping_table = (Mapping **)b->maps.v;
        d->n_location_table = b->locs.n;
        d->location_table = (Location **)b->locs.v;
        d->n_function_table = b->funcs.n;
        d->function_table = (Function **)b->funcs.v;
        d->n_link_table = b->links.n;
        d->link_table = (Link **)b->links.v;
        d->n_string_table = b->strs.n;
        d->string_table = (char **)b->strs.v;
        d->n_attribute_table = b->attrs.n;
        d->attribute_table = (KeyValueAndUnit **)b->attrs.v;
        d->n_stack_table = b->stacks.n;
        d->stack_table = (Stack **)b->stacks.v;
}

/* Pack the request and write it. 0, -ENOMEM or -EIO. */
static int pack_write(struct builder *b, FILE *out, const struct otlp_meta *meta)
{
        Request rq =
            OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
        Scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
        ValueType st = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT,
                  pt = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
        struct envelope *env = calloc(b->procs.n ? b->procs.n : 1, sizeof(*env));
        ResourceProfiles **rps = calloc(b->procs.n ? b->procs.n : 1, sizeof(*rps));
        Dictionary d;
        uint8_t *buf = NULL;
        size_t len;
        int err = -ENOMEM;

        st.type_strindex = cstr(b, "samples");
        st.unit_strindex = cstr(b, "count");
        pt.type_strindex = cstr(b, "cpu");
        pt.unit_strindex = cstr(b, "nanoseconds");
        if (!env || !rps || st.type_strindex < 0 || st.unit_strindex < 0 || pt.type_strindex < 0 ||
            pt.unit_strindex < 0)
                goto out;
        scope.name = SCOPE_NAME;
        for (size_t i = 0; i < b->procs.n; i++) {
                envelope_fill(&env[i], b->procs.v[i], &scope, &st, &pt, meta);
                rps[i] = &env[i].rp;
        }
        dictionary_fill(&d, b);
        rq.n_resource_profiles = b->procs.n;
        rq.resource_profiles = rps;
        rq.dictionary = &d;
        len =
            opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
                &rq);
        buf = malloc(len ? len : 1);
        if (!buf)
                goto out;
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
            &rq, buf);
        err = fwrite(buf, 1, len, out) != len || fflush(out) || ferror(out) ? -EIO : 0;
out:
        free(buf);
        free(rps);
        free(env);
        return err;
}

int otlp_write(const struct collapsed *c, FILE *out, const struct frame_names *names,
               const struct otlp_meta *meta)
{
        struct builder b = {.names = names};
        int err = builder_init(&b);

        if (!err)
                err = collapsed_foreach(c, add_sample, &b);
        if (!err)
                err = pack_write(&b, out, meta);
        builder_free(&b);
        return err;
}

int otlp_write_symbolized(const struct collapsed *c, FILE *out, struct modules *mods,
                          const struct otlp_meta *meta)
{
        struct frame_names_sym s;
        int err;

        frame_names_sym_init(&s, mods);
        err = otlp_write(c, out, &s.names, meta);
        frame_names_sym_free(&s);
        return err;
}
