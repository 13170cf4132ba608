/* SPDX-License-Identifier: MIT */
/*
 * frame_names.c — a recording's frame names (see frame_names.h): the symbolizer and the
 * module registry behind struct frame_names. Owns the symbolizer it creates.
 */
#include <errno.h>
#include <stddef.h>

#include "sink/frame_names.h"

static int sym_frame(void *ctx, const struct ctxprof_frame *fr, struct sym_frame *out, int max)
{
        struct frame_names_sym *s = ctx;

        return s->sym ? symbolize(s->sym, fr, out, max) : -EINVAL;
}

static int sym_module(void *ctx, uint32_t module_id, struct module_info *out)
{
        struct frame_names_sym *s = ctx;

        return s->mods ? modules_info(s->mods, module_id, out) : -ENOENT;
}

void frame_names_sym_init(struct frame_names_sym *s, struct modules *mods)
{
        s->mods = mods;
        s->sym = mods ? symbolizer_new(mods) : NULL;
        s->names = (struct frame_names){s, sym_frame, sym_module};
}

void frame_names_sym_free(struct frame_names_sym *s)
{
        symbolizer_free(s->sym);
        s->sym = NULL;
}

int frame_names_lookup(const struct frame_names *n, const struct ctxprof_frame *fr,
                       struct sym_frame *out, int max)
{
        int got;

        if (max < 1)
                return 0;
        if (fr->module_id == PSEUDO_MODULE) {
                out[0] = (struct sym_frame){
                    .function = fr->offset == PSEUDO_TRUNCATED ? "[truncated]" : "[no stack]",
                    .line = -1};
                return 1;
        }
        got = n->frame ? n->frame(n->ctx, fr, out, max) : 0;
        if (got < 1 || !out[got - 1].function)
                return got == -ENOMEM ? -ENOMEM : 0;
        return got;
}
