/* SPDX-License-Identifier: MIT */
/*
 * jfr_sink.h — the JFR output of `ctxprof record`: a struct sample_sink that deduplicates
 * stacks in the triple-buffered trace table, interns label sets, and every chunk period
 * (and at the end) cuts a chunk that a writer thread symbolizes and appends to the file.
 *
 * Threads: the consuming thread (the one that drives the sampler) calls the sink callback,
 * jfr_sink_tick and jfr_sink_finish; the sink owns one writer thread that does the slow part
 * (symbolization, encoding, I/O). Never prints; errors are negative errno and counters.
 */
#ifndef CTXPROF_JFR_SINK_H
#define CTXPROF_JFR_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "jfr/jfr_writer.h"
#include "stack/modules.h"
#include "engine/sample_sink.h"

struct symbolizer;

struct jfr_sink_opts {
        const char *path; /* output file (created or truncated), unless use_fd: */
        /* use_fd: write fd instead (O_RDWR; taken over, closed even when jfr_sink_new fails);
         * path then only names it */
        int use_fd, fd;
        uint64_t chunk_period_ns;     /* 0 = 60 s */
        uint32_t table_capacity;      /* traces per trace table; 0 = the table's default */
        size_t max_samples_per_chunk; /* 0 = 1,000,000; excess samples are dropped and counted */
        /* info.host NULL: the sink probes the host (sink/host_facts.h) */
        struct jfr_recording_info info;
        /* JFR_WRITER_REPLACE: readers (and a SIGKILL) never see a partial chunk, at the cost
         * of a copy of the file per chunk where the filesystem cannot clone it. 0: chunks
         * are appended in place (a torn tail is possible until jfr_file recovers it). */
        unsigned file_flags;
        /* Also write PATH.labels.pb: every chunk's label sets as Pyroscope's LabelsSnapshot
         * (contextId -> labels), appended after each chunk (truncated at open). */
        int labels_snapshot;
        /* With use_fd and labels_snapshot: the snapshot's descriptor (open for writing,
         * empty), the sink's from the call on, even when it fails; no file is opened. */
        int labels_fd;
        /* Every sample is one process's (split = process): the stores are not shared out. */
        int one_target;
        /* Optional: a symbolizer shared with other sinks (thread-safe, not owned, must outlive
         * the sink); NULL = the writer thread makes its own from the modules. */
        struct symbolizer *symbolizer;
};

/* Cumulative counters of the sampling engine, passed in at every tick: the sink turns them
 * into per-chunk ctxprof.Statistics. */
struct jfr_sink_engine_counters {
        uint64_t samples, lost, torn_span_reads, label_faults, unwind_errors;
        uint64_t bpf_ns_per_sample;              /* 0 = not measured */
        uint64_t ctx_missing[JFR_CTX_MISSING_N]; /* samples without context, by why */
        uint64_t filtered;                       /* dropped by the context filter */
};

/* Samples that lost part of what they carried to a store's per-chunk bound (cumulative). */
struct jfr_sink_refused {
        uint64_t stacks;     /* a new stack: its process had used its share of the trace table */
        uint64_t label_sets; /* a new label set: its process's share of the label store */
        uint64_t threads;    /* a new thread: its process's share of the thread table */
        uint64_t processes;  /* a resource of a process past RES_MAX in one chunk: not written */
};

/* What the sink did, cumulative. */
struct jfr_sink_counters {
        uint64_t chunks_written, bytes_written, samples_written;
        uint64_t chunks_cut_early; /* before their period ended: a store neared its bound */
        uint64_t samples_dropped;  /* chunk full, or its write failed */
        uint64_t traces_dropped;   /* trace table could not store the stack */
        uint64_t chunks_failed;    /* writes that failed (earlier chunks stay intact) */
        int last_error;            /* -errno of the last failed write, 0 if none */
        int latest_error;          /* -errno of the most recent write, 0 if it succeeded */
        uint64_t table_memory_bytes;
        struct jfr_sink_refused refused;
};

struct jfr_sink;

/* Opens the output file at once, so a bad path fails before sampling starts. */
int jfr_sink_new(const struct jfr_sink_opts *o, struct jfr_sink **out);
struct sample_sink jfr_sink_as_sink(struct jfr_sink *s);
/* The registry the sampled frames refer to; set before the first chunk is cut. */
void jfr_sink_set_modules(struct jfr_sink *s, struct modules *m);
/* Consuming thread, between polls: cuts a chunk when the period is over. 1 = cut, 0 = not. */
int jfr_sink_tick(struct jfr_sink *s, uint64_t now_mono_ns,
                  const struct jfr_sink_engine_counters *c);
/* When the current chunk's period ends (CLOCK_MONOTONIC ns): jfr_sink_tick cuts from then
 * on (unless the writer is behind), and only then needs the engine counters. Earlier (1 s
 * after the chunk began at the soonest) once a store of the chunk is 7/8 full: samples, new
 * stacks, label sets or threads; counted in chunks_cut_early. Consuming thread. */
uint64_t jfr_sink_next_cut(const struct jfr_sink *s);
/* Cuts the last chunk and waits until the writer has written everything. Returns 0 or the
 * first write error (-errno); every chunk written before an error stays readable. */
int jfr_sink_finish(struct jfr_sink *s, const struct jfr_sink_engine_counters *c);
/* jfr_sink_finish in halves, for a consuming thread that must not wait for a writer (one may
 * symbolize through the parser helper for seconds): _begin cuts the last chunk and lets the
 * writer stop once everything is written; _done says, without waiting, whether it has; _end
 * waits for it (at once after _done said 1) and returns what jfr_sink_finish returns. Between
 * _begin and _end only _done, jfr_sink_written_before and jfr_sink_get_counters. */
void jfr_sink_finish_begin(struct jfr_sink *s, const struct jfr_sink_engine_counters *c);
int jfr_sink_finish_done(struct jfr_sink *s);
int jfr_sink_finish_end(struct jfr_sink *s);
void jfr_sink_get_counters(struct jfr_sink *s, struct jfr_sink_counters *out);
/* A CLOCK_MONOTONIC time before which every sample this sink took has been written (the start
 * of the oldest batch its writer has not finished): module ids dead since before it are no
 * longer needed by this sink (modules_reap). Call from the thread that calls jfr_sink_tick. */
uint64_t jfr_sink_written_before(struct jfr_sink *s);
void jfr_sink_free(struct jfr_sink *s);

#endif
