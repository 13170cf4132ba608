/* SPDX-License-Identifier: MIT */
/*
 * util/maps_line.h — the one parser of /proc/PID/maps, shared by the module registry's
 * mapping table (stack/proc_maps.c), the TLS locator (tls/tls_locate.c) and the process
 * context reader (engine/otel_process_ctx.c). Lines come from the capped reader
 * (proc_lines.h, PROC_LINE_MAX_MAPS): a line longer than that is refused and counted, never
 * parsed, so a path the target chose cannot end up parsed as a mapping line of its own.
 * Never prints, never opens the files the lines name.
 */
#ifndef CTXPROF_UTIL_MAPS_LINE_H
#define CTXPROF_UTIL_MAPS_LINE_H

#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

/* One line of /proc/PID/maps, as the parser hands it out. */
struct maps_line {
        uint64_t start, end, pgoff;
        dev_t dev;
        ino_t ino;
        char perms[5];
        int deleted;      /* path ended in " (deleted)" (stripped from path) */
        const char *path; /* "" for anonymous; "[vdso]", "[stack]", ... for special ones */
};

/* Parse one line (NUL-terminated, no newline; the path is cut in place). 0, or -EINVAL for
 * a line that is not a mapping line. */
int maps_line_parse(char *line, size_t len, struct maps_line *out);

/* Calls cb for every mapping line of pid's maps; stops when cb returns non-zero and returns
 * that value. 0 at the end, -errno if the file cannot be read (-ESRCH for a dead process).
 * st (may be NULL) counts the lines refused for their length. */
int maps_foreach(pid_t pid, int (*cb)(const struct maps_line *, void *), void *arg,
                 struct target_stats *st);
/* The same for the maps of the /proc/PID directory procdir (a pinned one, util/proc_pin.h). */
int maps_foreach_at(int procdir, int (*cb)(const struct maps_line *, void *), void *arg,
                    struct target_stats *st);

#endif
