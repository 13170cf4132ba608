/* SPDX-License-Identifier: MIT */
/*
 * frame_names.h — what names the frames of the outputs built from the collapsed table
 * (sink/collapsed.c, sink/pprof.c, sink/otlp.c, sink/flame_html.c): for a recording, a
 * symbolizer over its module registry (frame_names_sym_init); for frames read back from a
 * JFR file, that file's names (sink/jfr_convert.c). Never prints.
 */
#ifndef CTXPROF_FRAME_NAMES_H
#define CTXPROF_FRAME_NAMES_H

#include <stdint.h>

#include "stack/frame.h"
#include "stack/modules.h"
#include "stack/symbolize.h"

struct frame_names {
        void *ctx;
        /* up to max entries for fr, innermost inline first, the real function last
         * (symbolize()'s contract); < 1, or a last entry without a function: the frame has
         * no name (-ENOMEM: out of memory). NULL: no frame is named. */
        int (*frame)(void *ctx, const struct ctxprof_frame *fr, struct sym_frame *out, int max);
        /* a module's path and build id (strings valid until the provider is freed); nonzero:
         * unknown. NULL: no module is known. */
        int (*module)(void *ctx, uint32_t module_id, struct module_info *out);
};

/* Pseudo frames of the outputs built from the collapsed table (pprof, OTLP): keyed like
 * frames, module PSEUDO_MODULE, offset what they stand for. */
#define PSEUDO_MODULE    UINT32_MAX
#define PSEUDO_TRUNCATED 1 /* "[truncated]": the unwinder stopped early */
#define PSEUDO_NO_STACK  2 /* "[no stack]" */

/* fr's names (innermost inline first) into out, a pseudo frame's too: their count (>= 1),
 * 0 when fr has no name, -ENOMEM. */
int frame_names_lookup(const struct frame_names *n, const struct ctxprof_frame *fr,
                       struct sym_frame *out, int max);

/* A recording's names: a symbolizer over its modules. */
struct frame_names_sym {
        struct symbolizer *sym;
        struct modules *mods;
        struct frame_names names;
};

/* s->names over mods (NULL: nothing named; out of memory: frames unnamed, as without
 * mods). */
void frame_names_sym_init(struct frame_names_sym *s, struct modules *mods);
void frame_names_sym_free(struct frame_names_sym *s);

#endif
