/* SPDX-License-Identifier: MIT */
/*
 * report_html.c — one jdk.ExecutionSample to one flame graph sample (report_html.h): frames
 * root first, named by their method (module names only for frames without a function);
 * thread "NAME (tid N)"; spanId as the span; the `context` chain as labels (docs/jfr.md).
 * Never reads the file or prints (cmd_report.c does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink/jfr_convert.h"
#include "cli/report_html.h"

#define FRAME_NAME_MAX  1024
#define THREAD_NAME_MAX 300

/* A frame's name: the method, or "[unknown] (module)" when the symbolizer had none. */
static void frame_name(const struct jfr_reader *r, const struct jfr_value *fr, char *out,
                       size_t cap)
{
        const struct jfr_value *m = jfr_value_field(r, fr, "method");
        const char *name = jfr_value_str(r, jfr_value_field(r, m, "name"));
        const char *cls =
            jfr_value_str(r, jfr_value_field(r, jfr_value_field(r, m, "type"), "name"));

        if (name && strcmp(name, "[unknown]"))
                snprintf(out, cap, "%s", name);
        else
                snprintf(out, cap, "[unknown] (%s)", cls ? cls : "?");
}

/* The labels of the event's `context` chain into l (at most max). */
static unsigned context_labels(const struct jfr_reader *r, const struct jfr_value *v,
                               struct flame_label *l, unsigned max)
{
        const char *k[CTXPROF_MAX_LABELS], *val[CTXPROF_MAX_LABELS];
        unsigned n =
            jfr_context_labels(r, v, k, val, max < CTXPROF_MAX_LABELS ? max : CTXPROF_MAX_LABELS);

        for (unsigned i = 0; i < n; i++)
                l[i] = (struct flame_label){k[i], val[i], strlen(k[i]), strlen(val[i])};
        return n;
}

int report_html_event(struct flame_html *h, const struct jfr_reader *r, const struct jfr_event *ev)
{
        const struct jfr_value *v = ev->value;
        const struct jfr_value *frames =
            jfr_value_field(r, jfr_value_field(r, v, "stackTrace"), "frames");
        const struct jfr_value *th = jfr_value_field(r, v, "sampledThread");
        const char *tname = jfr_value_str(r, jfr_value_field(r, th, "osName"));
        struct flame_label labels[CTXPROF_MAX_LABELS];
        char thread[THREAD_NAME_MAX];
        uint32_t n = frames && frames->kind == JFR_V_ARRAY ? frames->n : 0;
        char *names = malloc((size_t)(n ? n : 1) * FRAME_NAME_MAX);
        const char **ptrs = malloc((n ? n : 1) * sizeof(*ptrs));
        uint64_t tid = 0, span = 0;
        int err = -ENOMEM;

        if (names && ptrs) {
                struct flame_sample s = {
                    .frames = ptrs, .n_frames = n, .thread = thread, .labels = labels, .count = 1};

                /* JFR lists the leaf first; the flame graph wants the root first */
                for (uint32_t i = 0; i < n; i++) {
                        char *dst = names + (size_t)(n - 1 - i) * FRAME_NAME_MAX;

                        frame_name(r, &frames->items[i], dst, FRAME_NAME_MAX);
                        ptrs[n - 1 - i] = dst;
                }
                if (!n) {
                        ptrs[0] = "[no stack]";
                        s.n_frames = 1;
                }
                jfr_value_u64(r, jfr_value_field(r, th, "osThreadId"), &tid);
                snprintf(thread, sizeof(thread), "%s (tid %llu)", tname ? tname : "?",
                         (unsigned long long)tid);
                s.has_span = !jfr_value_u64(r, jfr_value_field(r, v, "spanId"), &span) && span;
                s.span_id = span;
                s.n_labels = context_labels(r, v, labels, CTXPROF_MAX_LABELS);
                err = flame_html_add(h, &s);
        }
        free(names);
        free(ptrs);
        return err;
}
