/* SPDX-License-Identifier: MIT */
/*
 * collapsed.c — aggregation and writing of collapsed stacks (format in collapsed.h).
 * Owns the key table: each key is a self-contained byte blob (pid, names, sorted labels,
 * optional span, frames), so nothing refers back to the sampler or the target. Must never
 * symbolize at ingestion (names are resolved once per distinct frame at write time) and
 * never print anywhere but the FILE it is given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context_decode.h"
#include "sink/collapsed.h"
#include "sink/frame_names.h"
#include "stack/symbolize.h"
#include "util/clock.h"
#include "util/hash.h"

#define KEY_MAX                                                                                    \
        (4 + 2 * (2 + CTXPROF_COMM_LEN + 1) + 1 +                                                  \
         CTXPROF_MAX_LABELS * (4 + CTXPROF_LABEL_KEY_MAX + CTXPROF_LABEL_VAL_MAX) + 9 + 3 +        \
         CTXPROF_MAX_FRAMES * sizeof(struct ctxprof_frame))

struct entry {
        uint64_t hash;
        uint64_t count;
        uint32_t len;
        unsigned char *key; /* NULL = empty slot */
};

struct collapsed {
        int span_frames;
        uint64_t cpu_weight; /* 0: count records; else value = microseconds (see .h) */
        struct entry *tab;
        size_t cap, n;
        uint64_t samples;
        unsigned char scratch[KEY_MAX];
};

struct collapsed *collapsed_new(int span_frames)
{
        struct collapsed *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->span_frames = span_frames;
        c->cap = 1024;
        c->tab = calloc(c->cap, sizeof(*c->tab));
        if (!c->tab) {
                free(c);
                return NULL;
        }
        return c;
}

void collapsed_free(struct collapsed *c)
{
        size_t i;

        if (!c)
                return;
        for (i = 0; i < c->cap; i++)
                free(c->tab[i].key);
        free(c->tab);
        free(c);
}

static int grow(struct collapsed *c)
{
        size_t ncap = c->cap * 2, i;
        struct entry *nt = calloc(ncap, sizeof(*nt));

        if (!nt)
                return -ENOMEM;
        for (i = 0; i < c->cap; i++) {
                size_t j;

                if (!c->tab[i].key)
                        continue;
                for (j = c->tab[i].hash & (ncap - 1); nt[j].key; j = (j + 1) & (ncap - 1))
                        ;
                nt[j] = c->tab[i];
        }
        free(c->tab);
        c->tab = nt;
        c->cap = ncap;
        return 0;
}

static unsigned char *put_str(unsigned char *p, const char *s, size_t n)
{
        uint16_t l = (uint16_t)n;

        memcpy(p, &l, 2);
        memcpy(p + 2, s, n);
        return p + 2 + n;
}

static int label_cmp(const void *a, const void *b)
{
        const struct decoded_label *x = *(const struct decoded_label *const *)a;
        const struct decoded_label *y = *(const struct decoded_label *const *)b;
        size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
        int r = memcmp(x->key, y->key, n);

        if (r)
                return r;
        return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

void collapsed_set_time_weights(struct collapsed *c, uint64_t cpu_sample_us)
{
        c->cpu_weight = cpu_sample_us ? cpu_sample_us : 1;
}

/* What one record adds to its line: 1, or in time mode its microseconds. */
static uint64_t weight_of(const struct collapsed *c, const struct decoded_sample *s)
{
        if (s->off_cpu)
                return (s->duration_ns + NS_PER_US / 2) / NS_PER_US;
        return c->cpu_weight ? c->cpu_weight : 1;
}

int collapsed_add(struct collapsed *c, const struct decoded_sample *s)
{
        const struct decoded_label *sorted[CTXPROF_MAX_LABELS];
        unsigned char *p = c->scratch;
        unsigned i, nl = s->n_labels < CTXPROF_MAX_LABELS ? s->n_labels : CTXPROF_MAX_LABELS;
        unsigned nf = s->n_frames < CTXPROF_MAX_FRAMES ? s->n_frames : CTXPROF_MAX_FRAMES;
        uint32_t pid = (uint32_t)s->pid;
        uint16_t nf16 = (uint16_t)nf;
        uint64_t h;
        size_t len, j;
        const char *proc = s->process ? s->process : "";
        const char *comm = s->comm ? s->comm : "";

        memcpy(p, &pid, 4);
        p += 4;
        p = put_str(p, proc, strnlen(proc, CTXPROF_COMM_LEN));
        p = put_str(p, comm, strnlen(comm, CTXPROF_COMM_LEN));
        for (i = j = 0; i < nl; i++)
                if (!context_is_span_mirror(s, &s->labels[i]))
                        sorted[j++] = &s->labels[i];
        nl = (unsigned)j;
        qsort(sorted, nl, sizeof(sorted[0]), label_cmp);
        *p++ = (unsigned char)nl;
        for (i = 0; i < nl; i++) {
                size_t kl = sorted[i]->key_len < CTXPROF_LABEL_KEY_MAX ? sorted[i]->key_len
                                                                       : CTXPROF_LABEL_KEY_MAX;
                size_t vl = sorted[i]->value_len < CTXPROF_LABEL_VAL_MAX ? sorted[i]->value_len
                                                                         : CTXPROF_LABEL_VAL_MAX;

                p = put_str(p, sorted[i]->key, kl);
                p = put_str(p, sorted[i]->value, vl);
        }
        *p++ = (unsigned char)(c->span_frames && s->has_span);
        if (c->span_frames && s->has_span) {
                memcpy(p, &s->span_id, 8);
                p += 8;
        }
        *p++ = (unsigned char)(s->truncated ? 1 : 0);
        memcpy(p, &nf16, 2);
        p += 2;
        memcpy(p, s->frames, nf * sizeof(struct ctxprof_frame));
        p += nf * sizeof(struct ctxprof_frame);
        len = (size_t)(p - c->scratch);

        h = fnv1a64(c->scratch, len);
        for (j = h & (c->cap - 1); c->tab[j].key; j = (j + 1) & (c->cap - 1)) {
                if (c->tab[j].hash == h && c->tab[j].len == len &&
                    !memcmp(c->tab[j].key, c->scratch, len)) {
                        c->tab[j].count += weight_of(c, s);
                        c->samples++;
                        return 0;
                }
        }
        if ((c->n + 1) * 2 > c->cap) {
                if (grow(c))
                        return -ENOMEM;
                for (j = h & (c->cap - 1); c->tab[j].key; j = (j + 1) & (c->cap - 1))
                        ;
        }
        c->tab[j].key = malloc(len);
        if (!c->tab[j].key)
                return -ENOMEM;
        memcpy(c->tab[j].key, c->scratch, len);
        c->tab[j].len = (uint32_t)len;
        c->tab[j].hash = h;
        c->tab[j].count = weight_of(c, s);
        c->n++;
        c->samples++;
        return 0;
}

static int sink_sample(void *ctx, const struct decoded_sample *s)
{
        return collapsed_add(ctx, s);
}

struct sample_sink collapsed_sink(struct collapsed *c)
{
        struct sample_sink s = {c, sink_sample};

        return s;
}

size_t collapsed_lines(const struct collapsed *c)
{
        return c->n;
}

uint64_t collapsed_samples(const struct collapsed *c)
{
        return c->samples;
}

/* A label key or value as part of a `key=value` frame: '%', ';', control bytes, and in keys
 * '=', become %XX (two hex digits), so the first '=' always ends the key and a label never
 * splits the frame (README, "Folded output"). */
static void put_label(FILE *f, const char *s, size_t n, int key)
{
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];

                if (ch == '%' || ch == ';' || ch < 0x20 || ch == 0x7f || (key && ch == '='))
                        fprintf(f, "%%%02X", ch);
                else
                        fputc(ch, f);
        }
}

/* Writes n bytes as one frame: ';' and control bytes become '_'. */
static void put_clean(FILE *f, const char *s, size_t n)
{
        size_t i;

        for (i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];

                fputc(ch == ';' || ch < 0x20 || ch == 0x7f ? '_' : ch, f);
        }
}

static const unsigned char *get_str(const unsigned char *p, const char **s, size_t *n)
{
        uint16_t l;

        memcpy(&l, p, 2);
        *n = l;
        *s = (const char *)p + 2;
        return p + 2 + l;
}

static void put_frame(FILE *f, const struct frame_names *names, const struct ctxprof_frame *fr)
{
        struct sym_frame out[SYM_MAX_INLINE];
        const char *sfx = (fr->flags & CTXPROF_FRAME_KERNEL) ? "_[k]" : "";
        int n = names->frame ? names->frame(names->ctx, fr, out, SYM_MAX_INLINE) : -EINVAL;
        struct module_info mi;

        if (n >= 1 && out[n - 1].function) {
                int i;

                /* out[] is innermost first; collapsed lines go root -> leaf. */
                for (i = n - 1; i >= 0; i--) {
                        const char *fn = out[i].function ? out[i].function : "??";

                        put_clean(f, fn, strlen(fn));
                        fputs(sfx, f);
                        if (i)
                                fputc(';', f);
                }
                return;
        }
        if (fr->module_id == CTXPROF_MODULE_KERNEL) {
                fprintf(f, "0x%llx_[k]", (unsigned long long)fr->offset);
        } else if (fr->module_id != CTXPROF_MODULE_UNKNOWN && names->module &&
                   !names->module(names->ctx, fr->module_id, &mi) && mi.path) {
                const char *base = strrchr(mi.path, '/');

                base = base ? base + 1 : mi.path;
                put_clean(f, base, strlen(base));
                fprintf(f, "+0x%llx", (unsigned long long)fr->offset);
                /* the build id names the exact file, for symbolizing offline later */
                if (mi.build_id_hex && *mi.build_id_hex)
                        fprintf(f, "[%s]", mi.build_id_hex);
        } else {
                fprintf(f, "[unknown]+0x%llx", (unsigned long long)fr->offset);
        }
}

/* Decodes one key blob (the layout collapsed_add writes) into *e. */
static void decode_key(const unsigned char *p, uint64_t count, struct collapsed_entry *e)
{
        uint16_t nf;
        unsigned k;

        memcpy(&e->pid, p, 4);
        p += 4;
        p = get_str(p, &e->process, &e->process_len);
        p = get_str(p, &e->comm, &e->comm_len);
        e->n_labels = *p++;
        for (k = 0; k < e->n_labels; k++) {
                p = get_str(p, &e->labels[k].key, &e->labels[k].key_len);
                p = get_str(p, &e->labels[k].value, &e->labels[k].value_len);
        }
        e->has_span = *p++;
        e->span_id = 0;
        if (e->has_span) {
                memcpy(&e->span_id, p, 8);
                p += 8;
        }
        e->truncated = *p++;
        memcpy(&nf, p, 2);
        p += 2;
        e->n_frames = nf;
        memcpy(e->frames, p, nf * sizeof(struct ctxprof_frame));
        e->count = count;
}

int collapsed_foreach(const struct collapsed *c,
                      int (*fn)(void *arg, const struct collapsed_entry *e), void *arg)
{
        struct collapsed_entry *e = malloc(sizeof(*e));
        int err = 0;

        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < c->cap && !err; i++) {
                if (!c->tab[i].key)
                        continue;
                decode_key(c->tab[i].key, c->tab[i].count, e);
                err = fn(arg, e);
        }
        free(e);
        return err;
}

void collapsed_write_frames(FILE *f, const struct frame_names *names,
                            const struct collapsed_entry *e)
{
        unsigned k;

        if (e->truncated)
                fputs(e->n_frames ? "[truncated];" : "[truncated]", f);
        if (!e->n_frames)
                fputs(e->truncated ? ";[no stack]" : "[no stack]", f);
        for (k = e->n_frames; k-- > 0;) {
                put_frame(f, names, &e->frames[k]);
                if (k)
                        fputc(';', f);
        }
}

struct write_ctx {
        FILE *f;
        const struct frame_names *names;
};

static int write_line(void *arg, const struct collapsed_entry *e)
{
        struct write_ctx *w = arg;
        FILE *f = w->f;
        unsigned k;

        put_clean(f, e->process_len ? e->process : "?", e->process_len ? e->process_len : 1);
        fprintf(f, "-%u;", e->pid);
        put_clean(f, e->comm_len ? e->comm : "?", e->comm_len ? e->comm_len : 1);
        for (k = 0; k < e->n_labels; k++) {
                fputc(';', f);
                put_label(f, e->labels[k].key, e->labels[k].key_len, 1);
                fputc('=', f);
                put_label(f, e->labels[k].value, e->labels[k].value_len, 0);
        }
        if (e->has_span)
                fprintf(f, ";span=%016llx", (unsigned long long)e->span_id);
        fputc(';', f);
        collapsed_write_frames(f, w->names, e);
        fprintf(f, " %llu\n", (unsigned long long)e->count);
        return 0;
}

int collapsed_write_named(const struct collapsed *c, FILE *f, const struct frame_names *names)
{
        struct write_ctx w = {f, names};
        int err = collapsed_foreach(c, write_line, &w);

        if (err)
                return err;
        if (fflush(f) || ferror(f))
                return -EIO;
        return 0;
}

int collapsed_write(struct collapsed *c, FILE *f, struct modules *mods)
{
        struct frame_names_sym s;
        int err;

        frame_names_sym_init(&s, mods);
        err = collapsed_write_named(c, f, &s.names);
        frame_names_sym_free(&s);
        return err;
}
