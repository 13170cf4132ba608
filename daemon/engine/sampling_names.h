/* SPDX-License-Identifier: MIT */
/*
 * sampling_names.h — the one table of the user-visible names of how ctxprof samples: the
 * perf event ("cpu-clock", "cycles", "off-cpu", "wall"), the call-graph method ("fp", "dwarf") and
 * the target mode ("all", "context", "selectors"), with their enums. `record`'s options, the
 * daemon's configuration, its status file and log, and the JFR recording's settings all parse and
 * print these names here, so a name is spelled once. Pure: never prints, never allocates.
 */
#ifndef CTXPROF_SAMPLING_NAMES_H
#define CTXPROF_SAMPLING_NAMES_H

enum sampler_event {
        SAMPLER_EV_CPU_CLOCK = 0, /* software cpu-clock: works everywhere (VMs included) */
        SAMPLER_EV_CYCLES = 1,    /* hardware cycles: needs a PMU */
        SAMPLER_EV_OFFCPU = 2,    /* off-CPU intervals only (sched_switch), no perf event */
        SAMPLER_EV_WALL = 3,      /* cpu-clock samples plus off-CPU intervals: wall-clock time */
};
/* 1 when the event records off-CPU intervals. */
#define SAMPLER_EV_HAS_OFFCPU(ev) ((ev) == SAMPLER_EV_OFFCPU || (ev) == SAMPLER_EV_WALL)
/* 1 when the event opens perf sampling events. */
#define SAMPLER_EV_HAS_PERF(ev) ((ev) != SAMPLER_EV_OFFCPU)

enum sampler_callgraph {
        SAMPLER_CG_FP = 0,    /* frame pointers (sampler_opts.call_graph = 0) */
        SAMPLER_CG_DWARF = 1, /* .eh_frame unwinding in the kernel (compact tables in BPF maps) */
        SAMPLER_CG_DWARF_COPY = 2,  /* user stack copy, unwound in user space by libdwfl */
        SAMPLER_CG_DWARF_CHECK = 3, /* both on every sample; libdwfl's stack is recorded and the
                                     * in-kernel one compared with it (tests, diagnosis) */
};

/* Which processes the daemon samples (its [targets] mode). */
enum target_mode { TARGET_MODE_ALL = 0, TARGET_MODE_CONTEXT, TARGET_MODE_SELECTORS };

/* The name sets of the table. */
enum sampling_name_set {
        SAMPLING_NAMES_EVENT,     /* enum sampler_event */
        SAMPLING_NAMES_CALLGRAPH, /* enum sampler_callgraph */
        SAMPLING_NAMES_MODE,      /* enum target_mode */
};

/* The value named s in set (exact, case-sensitive match), or -EINVAL. */
int sampling_name_parse(enum sampling_name_set set, const char *s);
/* The name of value in set, or NULL when set has no such value. */
const char *sampling_name(enum sampling_name_set set, int value);

#endif
