/* SPDX-License-Identifier: MIT */
/*
 * flame_html.h — the HTML flame graph output (`record --format html`, `report --html`): a
 * self-contained page (sink/flame_page.h: d3-flame-graph, search, zoom, a filter and a split
 * selector over every label key, label value, span and thread) with the profile embedded as
 * JSON. The caller adds aggregated samples (frames already named, root first); equal
 * (stack, thread, span, labels) add up. Layout of the JSON: docs/html.md. Owns copies of
 * every string it is given. Not thread-safe; never prints except to the FILE given to
 * flame_html_write.
 */
#ifndef CTXPROF_FLAME_HTML_H
#define CTXPROF_FLAME_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sink/collapsed.h"

struct flame_html;

struct flame_label {
        const char *key, *value;
        size_t key_len, value_len;
};

struct flame_sample {
        const char *const *frames; /* NUL-terminated names, root first */
        size_t n_frames;
        const char *thread; /* as the page shows it, e.g. "worker-1 (demo_app-1234)" */
        int has_span;
        uint64_t span_id;
        const struct flame_label *labels;
        unsigned n_labels; /* any order; the page looks them up by key */
        uint64_t count;
};

/* 0 or -ENOMEM. */
int flame_html_new(struct flame_html **out);
void flame_html_free(struct flame_html *h);
/* Adds s (copied). 0 or -ENOMEM. */
int flame_html_add(struct flame_html *h, const struct flame_sample *s);
/* Adds every entry of a collapsed table, frames named by a symbolizer over mods (NULL:
 * unnamed) exactly as the folded output names them. 0 or -ENOMEM. */
int flame_html_add_collapsed(struct flame_html *h, const struct collapsed *c, struct modules *mods);
/* Samples added so far. */
uint64_t flame_html_samples(const struct flame_html *h);
/* Writes the page with the profile; title is shown on it. 0 or -EIO / -ENOMEM. */
int flame_html_write(struct flame_html *h, FILE *out, const char *title);

#endif
