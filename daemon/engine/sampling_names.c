/* SPDX-License-Identifier: MIT */
/*
 * sampling_names.c — the names of events, call-graph methods and target modes (see
 * sampling_names.h). Owns only the table; never prints.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "engine/sampling_names.h"

/* Indexed by set, then by enum value. */
static const char *const names[][4] = {
    [SAMPLING_NAMES_EVENT] = {[SAMPLER_EV_CPU_CLOCK] = "cpu-clock",
                              [SAMPLER_EV_CYCLES] = "cycles",
                              [SAMPLER_EV_OFFCPU] = "off-cpu",
                              [SAMPLER_EV_WALL] = "wall"},
    [SAMPLING_NAMES_CALLGRAPH] = {[SAMPLER_CG_FP] = "fp",
                                  [SAMPLER_CG_DWARF] = "dwarf",
                                  [SAMPLER_CG_DWARF_COPY] = "dwarf-copy",
                                  [SAMPLER_CG_DWARF_CHECK] = "dwarf-check"},
    [SAMPLING_NAMES_MODE] = {[TARGET_MODE_ALL] = "all",
                             [TARGET_MODE_CONTEXT] = "context",
                             [TARGET_MODE_SELECTORS] = "selectors"},
};

#define NSETS   (sizeof(names) / sizeof(names[0]))
#define NVALUES (sizeof(names[0]) / sizeof(names[0][0]))

int sampling_name_parse(enum sampling_name_set set, const char *s)
{
        size_t i;

        if ((size_t)set >= NSETS || !s)
                return -EINVAL;
        for (i = 0; i < NVALUES; i++)
                if (names[set][i] && !strcmp(s, names[set][i]))
                        return (int)i;
        return -EINVAL;
}

const char *sampling_name(enum sampling_name_set set, int value)
{
        if ((size_t)set >= NSETS || value < 0 || (size_t)value >= NVALUES)
                return NULL;
        return names[set][value];
}
