/* SPDX-License-Identifier: MIT */
/*
 * recording_set.h — the daemon's open recordings and which one a sample goes to. split=host:
 * one host recording, always open (reopened at once after a rotation, retried every 10 s after
 * a failure). split=process: one recording per sampled process, opened at its first sample,
 * rotated on its own, finished (renamed) about a second after the process stops being a
 * target (exit, exec into an unselected image) or at the next tick when it execs under a new
 * name (at once if its slot is needed for the new file);
 * at most max_open of them at a time, samples of further processes (or of one whose file
 * cannot be opened) go to a shared host recording opened on demand, and are counted. The
 * per-process recordings share one symbolizer, whose names are freed only with it: it is
 * recreated whenever no per-process recording is open, and past 64 MiB of names
 * (SHARED_SYM_MAX_BYTES) every per-process recording is finished so that it can be.
 * Every recording is a jfr_sink writing NAME.jfr.part (mode 0640) in the output directory,
 * which is opened once (output_dir_open: refused when another user could write or redirect
 * it) and again only if it is removed.
 *
 * Never prints (log lines go to the caller's callback), never deletes a recording (retention
 * is output_dir's; only the empty .part of a sink that failed to start, or of a recording
 * in which not one chunk could be written — a full disk —, is removed), never
 * drops a sample silently (no file: counted). One thread (the sampler's) calls everything.
 */
#ifndef CTXPROF_RECORDING_SET_H
#define CTXPROF_RECORDING_SET_H

#include <stdint.h>
#include <sys/types.h>

#include "service/config.h"
#include "service/workload_identity.h"
#include "sink/jfr_sink.h"
#include "stack/modules.h"
#include "engine/sample_sink.h"

/* A recording that was finished and renamed (for recording_set_opts.finished). */
struct recording_finished {
        const char *path;        /* DIRECTORY/NAME.jfr */
        const char *labels_path; /* its LabelsSnapshot, DIRECTORY/NAME.jfr.labels.pb (stays:
                                    retention deletes it with the recording) */
        pid_t pid;               /* split=process: its process; 0 = the host file */
        const char *comm;        /* split=process: the command in its name, else "" */
        /* split=process: the process's service, executable, container and pod; the host file:
         * the host name only */
        const struct workload_identity *id;
        /* the host file: the processes its samples came from (the JFR thread's pid names
         * them), each with its identity as first seen in the file; at most
         * RECORDING_HOST_SERIES_MAX, the samples of the rest counted (samples_grouped) */
        const struct workload_identity *procs;
        unsigned n_procs;
        uint64_t start_wall_s, end_wall_s;
};

#define RECORDING_HOST_SERIES_MAX 64 /* processes of one host file named for its uploads */

struct recording_set_opts {
        const struct daemon_config *cfg; /* [output] and [sampling] settings, copied */
        const char *host;                /* host name for file names, copied */
        struct modules *modules;         /* frames' module registry (the sampler's) */
        void *ctx;                       /* for the callbacks below */
        void (*log)(void *ctx, int level, const char *msg);
        /* Cumulative engine counters (host-wide), for ctxprof.Statistics. */
        void (*engine)(void *ctx, struct jfr_sink_engine_counters *out);
        /* 1 while pid is a target (split=process: a recording is finished when it is not). */
        int (*alive)(void *ctx, pid_t pid);
        /* Optional: called (on the calling thread) for every recording finished and renamed,
         * e.g. to hand it to the uploaders. */
        void (*finished)(void *ctx, const struct recording_finished *f);
        /* Optional: where reading a process's identity counts what it refused (its
         * /proc/PID/cgroup lines over their cap; workload_identity.h). */
        struct target_stats *target;
};

struct recording_set_counters {
        uint64_t files_written; /* finished and renamed */
        uint64_t chunks_written, bytes_written;
        uint64_t samples_no_file;    /* no recording could take them (dropped) */
        uint64_t samples_overflow;   /* split=process: went to the shared host file */
        unsigned open_process_files; /* split=process: per-process recordings open now */
        /* host file: samples of processes past RECORDING_HOST_SERIES_MAX in it (uploaded
         * under the application, not their service) */
        uint64_t samples_grouped;
};

struct recording_set;

struct recording_set *recording_set_new(const struct recording_set_opts *o); /* NULL: ENOMEM */
/* Creates the directory; split=host opens the host recording. 0 or -errno (logged). */
int recording_set_start(struct recording_set *rs);
/* The sample sink that routes samples (struct recording_set is its ctx). */
struct sample_sink recording_set_as_sink(struct recording_set *rs);
/* Between polls: cut chunks, rotate, finish recordings of processes that are gone, reopen
 * the host recording. Returns how many files were finished (the caller runs retention). */
unsigned recording_set_tick(struct recording_set *rs, uint64_t now_mono_ms);
/* When recording_set_tick has work next (CLOCK_MONOTONIC ms; UINT64_MAX: none): a chunk's cut,
 * a rotation, the per-process liveness check, a retired file, the host file's reopen. A
 * sample that opens a file changes it: ask again after every drain. */
uint64_t recording_set_next_tick(const struct recording_set *rs, uint64_t now_mono_ms);
/* The earliest jfr_sink_written_before of the open files (CLOCK_MONOTONIC ns; UINT64_MAX when
 * none is open): module ids dead since before it can be retired (modules_reap). */
uint64_t recording_set_written_before(struct recording_set *rs);
/* Finish (last chunk, rename) every open recording. 0 or the first error. */
int recording_set_finish(struct recording_set *rs);
void recording_set_free(struct recording_set *rs);

void recording_set_get_counters(struct recording_set *rs, struct recording_set_counters *out);
/* The .part being written for pid (split=process), or for the host (pid 0); NULL if none. */
const char *recording_set_file(struct recording_set *rs, pid_t pid);

#endif
