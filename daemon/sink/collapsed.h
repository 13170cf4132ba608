/* SPDX-License-Identifier: MIT */
/*
 * collapsed.h — the collapsed-stack output (`--format collapsed`): aggregates decoded
 * samples by (process; thread name; labels; [span]; stack) and writes one line per distinct
 * key with its count, the format flamegraph.pl and speedscope read:
 *
 *   PROCESS-PID;THREAD;key=value;...;[span=HEX;]root_fn;...;leaf_fn COUNT
 *
 * Labels are pseudo-frames at the root, sorted by key, so a flame graph splits by label and
 * equal label sets fold into one line; libctx's span mirror labels (span-id, root-span-id)
 * are left out when they repeat the span record. In keys '%', '=', ';' and control bytes,
 * in values '%', ';' and control bytes, are written as %XX. `span=` (span id, hex) is added
 * only when asked (it makes most lines unique). Frames are
 * named at write time with the symbolizer: `function` (inline frames expanded), kernel frames
 * suffixed `_[k]`, unknown ones `module+0xOFFSET`; `[truncated]` marks a stack the unwinder
 * could not finish, `[no stack]` an empty one. ';' and control characters in frame names
 * become '_'. Never prints except to the FILE given to collapsed_write.
 */
#ifndef CTXPROF_COLLAPSED_H
#define CTXPROF_COLLAPSED_H

#include <stdio.h>

#include "stack/modules.h"
#include "engine/sample_sink.h"

struct collapsed;

struct collapsed *collapsed_new(int span_frames);
void collapsed_free(struct collapsed *);
/* Time mode (events off-cpu and wall): a line's value is microseconds, a CPU sample
 * counting cpu_sample_us (its period) and an off-CPU interval its duration. Without it a
 * line's value is its number of records (an off-CPU interval still counts its duration). */
void collapsed_set_time_weights(struct collapsed *, uint64_t cpu_sample_us);
/* Aggregate one sample (copies what it needs). 0 or -ENOMEM. */
int collapsed_add(struct collapsed *, const struct decoded_sample *s);
/* A sink that calls collapsed_add. */
struct sample_sink collapsed_sink(struct collapsed *);
struct frame_names;
/* Write every line; frames are named by names (collapsed_write: a symbolizer over
 * `modules`). 0 or -errno (write error, -ENOMEM). */
int collapsed_write_named(const struct collapsed *, FILE *out, const struct frame_names *names);
int collapsed_write(struct collapsed *, FILE *out, struct modules *modules);
/* One aggregated key, decoded (strings are not NUL-terminated; they point into the table
 * and stay valid until the next collapsed_add or collapsed_free). */
struct collapsed_label {
        const char *key, *value;
        size_t key_len, value_len;
};
struct collapsed_entry {
        uint32_t pid;
        const char *process, *comm;
        size_t process_len, comm_len;
        unsigned n_labels; /* sorted by key, span mirrors left out */
        struct collapsed_label labels[CTXPROF_MAX_LABELS];
        int has_span; /* only with span_frames */
        uint64_t span_id;
        int truncated;
        unsigned n_frames; /* leaf first */
        struct ctxprof_frame frames[CTXPROF_MAX_FRAMES];
        uint64_t count;
};
/* Calls fn for every distinct key, in table order; stops at and returns fn's first nonzero
 * result, else 0. Other writers (sink/pprof.c) aggregate with this table. */
int collapsed_foreach(const struct collapsed *,
                      int (*fn)(void *arg, const struct collapsed_entry *e), void *arg);
/* Writes e's frames root to leaf as the folded line names them, separated by ';' (first
 * `[truncated]` when the unwinder stopped early, `[no stack]` for an empty stack; names
 * hold no ';'). Errors show in ferror(f). */
void collapsed_write_frames(FILE *f, const struct frame_names *names,
                            const struct collapsed_entry *e);
/* Distinct lines and samples aggregated so far. */
size_t collapsed_lines(const struct collapsed *);
uint64_t collapsed_samples(const struct collapsed *);

#endif
