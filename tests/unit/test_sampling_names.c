/* SPDX-License-Identifier: MIT */
/*
 * test_sampling_names.c — the one table of event / call-graph / mode names
 * (engine/sampling_names.c): every name parses to its enum value and back, unknown and
 * out-of-range inputs are refused, and the daemon's config reads the same names.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "engine/sampling_names.h"
#include "service/config.h"

Test(sampling_names, both_directions)
{
        static const struct {
                enum sampling_name_set set;
                const char *name;
                int value;
        } known[] = {
            {SAMPLING_NAMES_EVENT, "cpu-clock", SAMPLER_EV_CPU_CLOCK},
            {SAMPLING_NAMES_EVENT, "cycles", SAMPLER_EV_CYCLES},
            {SAMPLING_NAMES_EVENT, "off-cpu", SAMPLER_EV_OFFCPU},
            {SAMPLING_NAMES_EVENT, "wall", SAMPLER_EV_WALL},
            {SAMPLING_NAMES_CALLGRAPH, "fp", SAMPLER_CG_FP},
            {SAMPLING_NAMES_CALLGRAPH, "dwarf", SAMPLER_CG_DWARF},
            {SAMPLING_NAMES_CALLGRAPH, "dwarf-copy", SAMPLER_CG_DWARF_COPY},
            {SAMPLING_NAMES_CALLGRAPH, "dwarf-check", SAMPLER_CG_DWARF_CHECK},
            {SAMPLING_NAMES_MODE, "all", TARGET_MODE_ALL},
            {SAMPLING_NAMES_MODE, "context", TARGET_MODE_CONTEXT},
            {SAMPLING_NAMES_MODE, "selectors", TARGET_MODE_SELECTORS},
        };
        size_t i;

        for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
                cr_assert_eq(sampling_name_parse(known[i].set, known[i].name), known[i].value);
                cr_assert_str_eq(sampling_name(known[i].set, known[i].value), known[i].name);
        }
}

Test(sampling_names, refused)
{
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_EVENT, "dwarf"), -EINVAL);
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_EVENT, "Cycles"), -EINVAL);
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_CALLGRAPH, ""), -EINVAL);
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_MODE, NULL), -EINVAL);
        cr_assert_eq(sampling_name_parse((enum sampling_name_set)99, "fp"), -EINVAL);
        cr_assert_null(sampling_name(SAMPLING_NAMES_EVENT, SAMPLER_EV_WALL + 1));
        cr_assert_null(sampling_name(SAMPLING_NAMES_CALLGRAPH, -1));
        cr_assert_null(sampling_name((enum sampling_name_set)99, 0));
}

Test(sampling_names, config_uses_the_table)
{
        struct daemon_config c;

        config_defaults(&c);
        cr_assert_eq(config_set(&c, NULL, "event", "cycles"), 0);
        cr_assert_eq(config_set(&c, NULL, "call-graph", "dwarf"), 0);
        cr_assert_eq(config_set(&c, NULL, "mode", "all"), 0);
        cr_assert_eq(c.event, SAMPLER_EV_CYCLES);
        cr_assert_eq(c.call_graph, SAMPLER_CG_DWARF);
        cr_assert_eq(c.mode, TARGET_MODE_ALL);
        cr_assert_eq(config_set(&c, NULL, "mode", "everything"), -EINVAL);
}
