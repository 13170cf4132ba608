/* SPDX-License-Identifier: MIT */
/*
 * flame_html.c — aggregates named samples for the HTML flame graph and writes the page
 * (format in flame_html.h, JSON layout in docs/html.md). Owns three interning tables
 * (strings; stacks as arrays of string ids; rows as (stack, thread, span, labels) id arrays)
 * and the count of each row. Must never symbolize on its own (names come in, or through
 * collapsed_write_frames) and never print anywhere but the FILE it is given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jfr/jfr_dict.h"
#include "sink/flame_html.h"
#include "sink/frame_names.h"
#include "sink/flame_page.h"
#include "stack/symbolize.h"
#include "util/grow.h"

#define SPAN_HEX_LEN 16
#define NO_SPAN      UINT32_MAX
/* a row: stack, thread, span, then a key and a value per label */
#define ROW_FIXED 3
#define ROW_MAX   (ROW_FIXED + 2 * CTXPROF_MAX_LABELS)

struct flame_html {
        struct jfr_strtab strs, stacks, rows;
        uint64_t *counts; /* per row */
        size_t counts_cap;
        uint64_t samples;
};

int flame_html_new(struct flame_html **out)
{
        struct flame_html *h = calloc(1, sizeof(*h));

        if (!h)
                return -ENOMEM;
        jfr_strtab_init(&h->strs);
        jfr_strtab_init(&h->stacks);
        jfr_strtab_init(&h->rows);
        *out = h;
        return 0;
}

void flame_html_free(struct flame_html *h)
{
        if (!h)
                return;
        jfr_strtab_free(&h->strs);
        jfr_strtab_free(&h->stacks);
        jfr_strtab_free(&h->rows);
        free(h->counts);
        free(h);
}

uint64_t flame_html_samples(const struct flame_html *h)
{
        return h->samples;
}

static int intern(struct flame_html *h, const char *s, size_t n, uint32_t *id)
{
        return jfr_strtab_intern(&h->strs, s, n, id, NULL);
}

static int intern_stack(struct flame_html *h, const struct flame_sample *s, uint32_t *id)
{
        uint32_t *ids = malloc((s->n_frames ? s->n_frames : 1) * sizeof(*ids));
        int err = ids ? 0 : -ENOMEM;

        for (size_t i = 0; !err && i < s->n_frames; i++)
                err = intern(h, s->frames[i], strlen(s->frames[i]), &ids[i]);
        if (!err)
                err = jfr_strtab_intern(&h->stacks, (const char *)ids, s->n_frames * sizeof(*ids),
                                        id, NULL);
        free(ids);
        return err;
}

int flame_html_add(struct flame_html *h, const struct flame_sample *s)
{
        uint32_t row[ROW_MAX], id;
        unsigned nl = s->n_labels < CTXPROF_MAX_LABELS ? s->n_labels : CTXPROF_MAX_LABELS;
        char span[SPAN_HEX_LEN + 1];
        int added = 0, err;

        err = intern_stack(h, s, &row[0]);
        if (!err)
                err = intern(h, s->thread, strlen(s->thread), &row[1]);
        row[2] = NO_SPAN;
        if (!err && s->has_span) {
                snprintf(span, sizeof(span), "%016llx", (unsigned long long)s->span_id);
                err = intern(h, span, SPAN_HEX_LEN, &row[2]);
        }
        for (unsigned i = 0; !err && i < nl; i++) {
                err = intern(h, s->labels[i].key, s->labels[i].key_len, &row[ROW_FIXED + 2 * i]);
                if (!err)
                        err = intern(h, s->labels[i].value, s->labels[i].value_len,
                                     &row[ROW_FIXED + 2 * i + 1]);
        }
        if (!err)
                err = jfr_strtab_intern(&h->rows, (const char *)row,
                                        (ROW_FIXED + 2 * nl) * sizeof(row[0]), &id, &added);
        if (!err && added)
                err = grow_array((void **)&h->counts, &h->counts_cap, sizeof(*h->counts),
                                 (size_t)id + 1, 256);
        if (err)
                return err;
        if (added)
                h->counts[id] = 0;
        h->counts[id] += s->count;
        h->samples += s->count;
        return 0;
}

/* Splits a ';'-separated frame list (collapsed_write_frames) in place into names. */
static size_t split_frames(char *line, const char **names, size_t max)
{
        size_t n = 0;

        for (char *p = line; p && n < max;) {
                char *semi = strchr(p, ';');

                if (semi)
                        *semi = 0;
                names[n++] = p;
                p = semi ? semi + 1 : NULL;
        }
        return n;
}

struct collapsed_ctx {
        struct flame_html *h;
        const struct frame_names *fn;
        const char **names;
};

/* collapsed_foreach callback: one entry, its frames named as the folded output names them. */
static int add_entry(void *arg, const struct collapsed_entry *e)
{
        struct collapsed_ctx *cc = arg;
        struct flame_label labels[CTXPROF_MAX_LABELS];
        char *frames = NULL, *thread = NULL;
        size_t flen = 0, tlen = 0;
        FILE *ff = open_memstream(&frames, &flen), *tf = open_memstream(&thread, &tlen);
        int err = -ENOMEM;

        if (ff && tf) {
                collapsed_write_frames(ff, cc->fn, e);
                fprintf(tf, "%.*s (%.*s-%u)", (int)e->comm_len, e->comm, (int)e->process_len,
                        e->process, e->pid);
        }
        if (ff && fclose(ff))
                frames = NULL;
        if (tf && fclose(tf))
                thread = NULL;
        if (frames && thread) {
                struct flame_sample s = {
                    .frames = cc->names,
                    .n_frames =
                        split_frames(frames, cc->names, CTXPROF_MAX_FRAMES * SYM_MAX_INLINE + 2),
                    .thread = thread,
                    .has_span = e->has_span,
                    .span_id = e->span_id,
                    .labels = labels,
                    .n_labels = e->n_labels,
                    .count = e->count,
                };

                for (unsigned i = 0; i < e->n_labels; i++)
                        labels[i] =
                            (struct flame_label){e->labels[i].key, e->labels[i].value,
                                                 e->labels[i].key_len, e->labels[i].value_len};
                err = flame_html_add(cc->h, &s);
        }
        free(frames);
        free(thread);
        return err;
}

int flame_html_add_collapsed(struct flame_html *h, const struct collapsed *c, struct modules *mods)
{
        struct frame_names_sym s;
        struct collapsed_ctx cc = {
            .h = h,
            .fn = &s.names,
            .names = malloc((CTXPROF_MAX_FRAMES * SYM_MAX_INLINE + 2) * sizeof(char *)),
        };
        int err;

        frame_names_sym_init(&s, mods);
        err = cc.names ? collapsed_foreach(c, add_entry, &cc) : -ENOMEM;
        free(cc.names);
        frame_names_sym_free(&s);
        return err;
}

/* A JSON string: '"', '\\' and control bytes escaped, and '<' as \u003c so that no label
 * can close the page's <script> element. */
static void put_json_str(FILE *f, const char *s, size_t n)
{
        fputc('"', f);
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];

                if (ch == '"' || ch == '\\')
                        fprintf(f, "\\%c", ch);
                else if (ch < 0x20 || ch == 0x7f || ch == '<' || ch == '>' || ch == '&')
                        fprintf(f, "\\u%04x", ch);
                else
                        fputc(ch, f);
        }
        fputc('"', f);
}

static void put_id_array(FILE *f, const struct jfr_strtab *t, uint32_t i, const char *prefix)
{
        const char *ids = jfr_strtab_str(t, i);
        size_t n = t->len[i] / sizeof(uint32_t);

        fprintf(f, "[%s", prefix);
        for (size_t k = 0; k < n; k++) {
                uint32_t id;

                memcpy(&id, ids + k * sizeof(id), sizeof(id));
                if (id == NO_SPAN)
                        fprintf(f, "%s-1", k || *prefix ? "," : "");
                else
                        fprintf(f, "%s%u", k || *prefix ? "," : "", id);
        }
        fputc(']', f);
}

static void put_json(struct flame_html *h, FILE *f, const char *title)
{
        char count[32];

        fputs("{\"title\":", f);
        put_json_str(f, title, strlen(title));
        fprintf(f, ",\"total\":%llu,\n\"strings\":[", (unsigned long long)h->samples);
        for (uint32_t i = 0; i < h->strs.n; i++) {
                fputs(i ? ",\n" : "", f);
                put_json_str(f, jfr_strtab_str(&h->strs, i), h->strs.len[i]);
        }
        fputs("],\n\"stacks\":[", f);
        for (uint32_t i = 0; i < h->stacks.n; i++) {
                fputs(i ? ",\n" : "", f);
                put_id_array(f, &h->stacks, i, "");
        }
        fputs("],\n\"rows\":[", f);
        for (uint32_t i = 0; i < h->rows.n; i++) {
                fputs(i ? ",\n" : "", f);
                snprintf(count, sizeof(count), "%llu", (unsigned long long)h->counts[i]);
                put_id_array(f, &h->rows, i, count);
        }
        fputs("]}", f);
}

int flame_html_write(struct flame_html *h, FILE *out, const char *title)
{
        size_t len;
        const char *page = flame_page(&len);
        const char *slot = memmem(page, len, FLAME_PAGE_SLOT, strlen(FLAME_PAGE_SLOT));

        if (!slot)
                return -EINVAL;
        fwrite(page, 1, (size_t)(slot - page), out);
        put_json(h, out, title);
        slot += strlen(FLAME_PAGE_SLOT);
        fwrite(slot, 1, len - (size_t)(slot - page), out);
        if (fflush(out) || ferror(out))
                return -EIO;
        return 0;
}
