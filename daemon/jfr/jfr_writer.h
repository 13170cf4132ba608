/* SPDX-License-Identifier: MIT */
/*
 * jfr_writer.h — JFR (chunk format 2.1) writer: builds one chunk at a time in memory and
 * hands it, complete, to jfr_file (which appends it so the file only ever grows by whole
 * chunks). Owns the encoding and the per-file constant-pool key spaces; never probes the
 * host (the caller passes its facts in). Never prints; returns negative errno. Not
 * thread-safe: one owner calls everything.
 *
 * Lifecycle, per file:      jfr_writer_open
 *   per chunk:              jfr_writer_begin_chunk
 *                           add_thread / add_stack / add_labels / add_sample / set_stats,
 *                           in any order (samples may name traces and label sets added later)
 *                           jfr_writer_finish_chunk   (encode + append + fsync)
 *                           jfr_writer_close
 *
 * What ends up in each chunk (see docs/jfr.md): one jdk.ExecutionSample per CPU sample and
 * one ctxprof.OffCPU per off-CPU interval (start, duration, thread, stack, state, blockedIn,
 * runQueueDelay, then the same context fields); for a sample (the
 * JDK's four fields, then contextBytes, contextId, spanId, localRootSpanId and context, the
 * label set as a ctxprof.types.Context chain); jdk.ActiveRecording, jdk.ActiveSetting,
 * jdk.OSInformation, jdk.CPUInformation and ctxprof.Statistics. Metadata id = chunk sequence
 * number; pool keys never change meaning within a file (threads: the tid, or a per-file
 * identity key; everything else: fresh keys per chunk from per-file counters).
 *
 * Time: callers pass ticks as CLOCK_MONOTONIC nanoseconds. The file stores microsecond
 * ticks relative to a per-chunk base (4-byte varints instead of 8); a sample more than
 * JFR_TICK_SLACK_NS before its chunk's start is clamped to that bound.
 */
#ifndef CTXPROF_JFR_WRITER_H
#define CTXPROF_JFR_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jfr/jfr_file.h"

#define JFR_TICK_SLACK_NS 10000000000ull /* 10 s */
/* Bounds (hostile labels must not make chunks unbounded). Excess is dropped and counted. */
#define JFR_MAX_STRING         1024 /* bytes kept of any one string (names, labels) */
#define JFR_MAX_LABELS_PER_SET 16

enum jfr_frame_type { /* values = the FrameType pool keys async-profiler and Datadog use */
                      JFR_FRAME_NATIVE = 3,
                      JFR_FRAME_CPP = 4,
                      JFR_FRAME_KERNEL = 5,
};

struct jfr_frame {
        const char *function; /* demangled name; NULL = "[unknown]" */
        const char *module;   /* becomes the frame's class name (basename advised); NULL = "" */
        int32_t line;         /* source line, -1 unknown */
        enum jfr_frame_type type;
};

/* Native unless kernel; C++ when the demangled name contains "::". */
enum jfr_frame_type jfr_frame_type_for(const char *function, int kernel);

struct jfr_label {
        const char *key, *value; /* arbitrary bytes: sanitized to UTF-8 without NUL */
        size_t key_len, value_len;
};

/* How an off-CPU interval's thread waited (the ThreadState pool keys it is written as). */
enum jfr_offcpu_state {
        JFR_OFFCPU_SLEEPING = 2,        /* interruptible sleep (S): STATE_SLEEPING */
        JFR_OFFCPU_UNINTERRUPTIBLE = 3, /* uninterruptible sleep (D), usually I/O */
        JFR_OFFCPU_OTHER = 4,           /* stopped, traced, ... */
};

struct jfr_sample {
        uint64_t ticks;    /* CLOCK_MONOTONIC ns */
        uint64_t trace_id; /* a trace added with jfr_writer_add_stack (else "[unknown stack]") */
        uint64_t span_id;  /* 0 = none */
        uint64_t root_span_id; /* local root span id, 0 = none */
        uint32_t context_id;   /* a label set added with jfr_writer_add_labels; 0 = no labels */
        pid_t tid;             /* a thread added with jfr_writer_add_thread (else "tid-N") */
};

/* What makes a sample an off-CPU interval (jfr_writer_add_offcpu). */
struct jfr_offcpu {
        uint64_t duration_ns, runq_ns; /* blocked (run-queue delay included); of it runnable */
        enum jfr_offcpu_state state;
        const char *blocked_in; /* the blocking kernel function, NULL = unknown (copied) */
};

/* Why a sample had no context (the sampler's reasons; docs/jfr.md explains each). */
enum jfr_ctx_missing {
        JFR_CTX_MISSING_PENDING,     /* taken before the location was known: not recorded */
        JFR_CTX_MISSING_STALE,       /* location refused: made before the last exec */
        JFR_CTX_MISSING_NOT_LOCATED, /* no context variable found in the process */
        JFR_CTX_MISSING_NO_TP,       /* thread pointer 0 */
        JFR_CTX_MISSING_NO_STORAGE,  /* no TLS block for this thread (never touched) */
        JFR_CTX_MISSING_READ_FAULT,  /* reading the variable faulted */
        JFR_CTX_MISSING_NOT_SET,     /* read fine, nothing set */
        JFR_CTX_MISSING_N,
};

/* Per-chunk ctxprof.Statistics (all counts for this chunk's period). */
struct jfr_stats {
        uint64_t samples, lost, torn_span_reads, label_faults, unwind_errors;
        uint64_t table_used, table_capacity; /* trace table fill */
        uint64_t bpf_ns_per_sample;
        /* samples without context, by why (ctxMissing* fields, in enum jfr_ctx_missing order) */
        uint64_t ctx_missing[JFR_CTX_MISSING_N];
        /* samples that lost a new stack / label set / thread to a store's bound */
        uint64_t stacks_refused, label_sets_refused, threads_refused;
        uint64_t filtered; /* samples the context filter dropped (not in the chunk) */
};

/* Facts about the host, written as jdk.OSInformation / jdk.CPUInformation in every chunk.
 * The caller probes them (sink/host_facts.h); NULL strings are written as "unknown". */
struct jfr_host_info {
        const char *os_version; /* e.g. "Debian GNU/Linux 12 (bookworm)\nuname: Linux ..." */
        const char *cpu_name, *cpu_description;
        uint32_t sockets, cores, hw_threads;
};

/* Written as jdk.ActiveRecording / jdk.ActiveSetting in every chunk. */
struct jfr_recording_info {
        const char *name;      /* recording name, e.g. "ctxprof" */
        const char *event;     /* perf event, e.g. "cpu-clock" */
        uint32_t frequency_hz; /* sampling frequency */
        const char *callgraph; /* call-graph mode, e.g. "fp" or "dwarf" */
        uint64_t start_wall_ns;
        const struct jfr_host_info *host; /* NULL = unknown; copied at open */
        const char *filter; /* context filter ("route=/x,!tier=free"); NULL or "" = none */
};

#define JFR_WRITER_APPEND   JFR_FILE_APPEND   /* keep an existing file (torn tail trimmed) */
#define JFR_WRITER_NO_FSYNC JFR_FILE_NO_FSYNC /* skip fsync after each chunk (benchmarks) */
#define JFR_WRITER_REPLACE  JFR_FILE_REPLACE  /* no instant with a partial chunk visible */

/* Writer-side counters (cumulative over the file). */
struct jfr_writer_counters {
        uint64_t chunks, bytes, samples, context_samples;
        uint64_t offcpu_intervals; /* ctxprof.OffCPU events (not in samples) */
        uint64_t unknown_stacks, unknown_threads, dropped_label_keys, append_errors;
        uint64_t trimmed_bytes; /* partial tail removed at open */
        uint64_t trim_errors;   /* a failed append's bytes could not be cut at once */
        /* threads past JFR_THREAD_IDENTITIES_MAX in one file: written as one placeholder */
        uint64_t thread_identities_refused;
};

/* Thread identities (tid, names) one file keeps; a new one past it becomes the placeholder
 * thread "[thread identities full]" (a thread renaming itself in a loop must not grow the
 * file's table without end). */
#define JFR_THREAD_IDENTITIES_MAX 65536u

struct jfr_writer;

/* Open (create, mode 0644) `path` (flags: JFR_WRITER_*, see jfr_file_open). Without
 * JFR_WRITER_APPEND an existing file is truncated. With it, complete chunks are kept, a
 * trailing partial chunk (a writer killed inside its append) is cut off, and this writer's
 * constant-pool keys and metadata ids start above every one already in the file (-EFBIG:
 * too many, start a new file). info (and info->host) is copied. */
int jfr_writer_open(struct jfr_writer **out, const char *path, int flags,
                    const struct jfr_recording_info *info);
/* The same on a file the caller opened (O_RDWR; taken over: closed by jfr_writer_close, or
 * at once on failure); path only names it (the recording's destination). */
int jfr_writer_open_fd(struct jfr_writer **out, int fd, const char *path, int flags,
                       const struct jfr_recording_info *info);
/* Close the file (the chunk in progress, if any, is discarded) and free everything. */
void jfr_writer_close(struct jfr_writer *w);

/* Start a chunk: wall clock (ns since epoch) and CLOCK_MONOTONIC ns of the same instant.
 * -EBUSY if a chunk is already in progress. */
int jfr_writer_begin_chunk(struct jfr_writer *w, uint64_t start_wall_ns, uint64_t start_ticks);
/* Declare a thread for this chunk. A tid added again with different names is a new thread
 * identity from then on (rename, or tid reused); samples use the latest identity for a tid.
 * java_name NULL = os_name. */
int jfr_writer_add_thread(struct jfr_writer *w, pid_t tid, const char *os_name,
                          const char *java_name);
/* The same for a thread of process pid (the thread's `pid` field, docs/jfr.md; 0 = not known,
 * as jfr_writer_add_thread writes it). The same tid with another pid is a new identity. */
int jfr_writer_add_thread_of(struct jfr_writer *w, pid_t tid, pid_t pid, const char *os_name,
                             const char *java_name);
/* One ctxprof.ProcessContext event in this chunk: process pid's OpenTelemetry resource
 * (service.name and every attribute as "key=value" lines). 0, -EINVAL (no chunk), -ENOMEM. */
int jfr_writer_add_process(struct jfr_writer *w, pid_t pid, const char *service,
                           const char *attributes);
/* Stack trace for trace_id, frames[0] = leaf. n may be 0. -EEXIST if trace_id was already
 * added in this chunk. */
int jfr_writer_add_stack(struct jfr_writer *w, uint64_t trace_id, const struct jfr_frame *frames,
                         size_t n, int truncated);
/* Label set for context_id (!= 0). First of duplicate keys wins; empty or NULL keys are
 * skipped; at most JFR_MAX_LABELS_PER_SET kept. -EEXIST if context_id already added. */
int jfr_writer_add_labels(struct jfr_writer *w, uint32_t context_id, const struct jfr_label *l,
                          size_t n);
int jfr_writer_add_sample(struct jfr_writer *w, const struct jfr_sample *s);
/* An off-CPU interval as a ctxprof.OffCPU event: s as for a sample (ticks = when it
 * blocked), o its duration, state and blocking function. */
int jfr_writer_add_offcpu(struct jfr_writer *w, const struct jfr_sample *s,
                          const struct jfr_offcpu *o);
void jfr_writer_set_stats(struct jfr_writer *w, const struct jfr_stats *st);
/* Encode the chunk and append it (jfr_file_append: one write then fsync, or a rename with
 * JFR_WRITER_REPLACE). On failure (-ENOSPC, -EFBIG, -EIO, ...) the file keeps its complete
 * chunks, the chunk is discarded (its keys are reused), and the writer stays usable. *chunk_bytes
 * (may be NULL) = bytes appended. */
int jfr_writer_finish_chunk(struct jfr_writer *w, uint64_t end_ticks, size_t *chunk_bytes);
/* Drop the chunk in progress without writing it. */
void jfr_writer_abort_chunk(struct jfr_writer *w);

void jfr_writer_counters(const struct jfr_writer *w, struct jfr_writer_counters *out);

/* The label sets of the last chunk written, as Pyroscope's LabelsSnapshot protobuf
 * (contextId -> labels): append it to FILE.labels.pb beside the file (protobuf messages
 * concatenate into one). Valid until the next finish_chunk; *len 0 when the chunk had none. */
const void *jfr_writer_labels_snapshot(const struct jfr_writer *w, size_t *len);

#endif
