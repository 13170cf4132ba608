/* SPDX-License-Identifier: MIT */
/*
 * jfr_convert.h — `ctxprof report --format collapsed|pprof|otlp -o OUT FILE.jfr`: turns a
 * JFR file's jdk.ExecutionSample events back into the collapsed aggregation table
 * (sink/collapsed.h) and writes it with the same sinks `record` writes directly, so labels,
 * spans and frames come out the same way. A JFR frame keeps what the file says: its method
 * name, its module (the frame's class) and line; a frame of type Kernel is a kernel frame.
 * Every sample is of the one process the caller names ("?" for report; the upload's series
 * name for an OTLP upload), pid 0 unless the caller names one; or, for an upload of a host
 * file (OTLP resources, or Pyroscope's one pprof per process), of the process its thread names (the
 * thread's `pid` field) when the caller knows that process (jfr_convert_resources.resource_of). At
 * most CTXPROF_MAX_FRAMES frames per stack (a deeper one is cut at the root end and marked
 * truncated). cmd_report.c reads the file itself and prints errors (one event at a time); the
 * uploader converts a whole file (jfr_convert_file). Never prints except to the FILE given.
 */
#ifndef CTXPROF_JFR_CONVERT_H
#define CTXPROF_JFR_CONVERT_H

#include <stdint.h>
#include <stdio.h>

#include "jfr/jfr_reader.h"
#include "sink/otlp.h"

struct jfr_convert;

/* format: "collapsed", "pprof" or "otlp" (pprof and otlp keep the span in the key, as
 * record does); process: the samples' process name (NULL: "?"; copied). NULL on -ENOMEM. */
struct jfr_convert *jfr_convert_new(const char *format, const char *process);
void jfr_convert_free(struct jfr_convert *rc);
/* Adds one jdk.ExecutionSample (stack, thread, span, context labels). 0 or -ENOMEM. */
int jfr_convert_event(struct jfr_convert *rc, const struct jfr_reader *r,
                      const struct jfr_event *ev);
/* The labels of a sample event's `context` chain ({key, value, next} nodes, docs/jfr.md)
 * into key[i], value[i] (at most max; a loop in a hostile file ends the walk). The count. */
unsigned jfr_context_labels(const struct jfr_reader *r, const struct jfr_value *ev,
                            const char **key, const char **value, unsigned max);
/* Writes the format to out; period_ns (0 = unknown), the file's time range in wall clock
 * nanoseconds. 0 or -errno. */
int jfr_convert_write(struct jfr_convert *rc, FILE *out, uint64_t period_ns, uint64_t start_ns,
                      uint64_t end_ns);

/* A jdk.ActiveSetting event: when it is the "frequency" ("99 Hz") of the samples,
 * *period_ns = the sampling period; else nothing. */
void jfr_setting_period(const struct jfr_reader *r, const struct jfr_event *ev,
                        uint64_t *period_ns);
/* OTLP: what jfr_convert_file says of the resources. */
struct jfr_convert_resources {
        int64_t pid;                             /* process.pid of every resource (0: none) */
        const struct otlp_resource_attrs *attrs; /* NULL: none */
        /* Optional: split by process. A sample's thread names its process (the JFR thread's
         * `pid`, docs/jfr.md); when resource_of gives that pid a resource, the sample goes
         * into it, else (NULL; a file without pids) into the one resource of process, pid
         * and attrs above. The caller bounds how many pids it names. */
        const struct otlp_resource *(*resource_of)(void *ctx, uint32_t pid);
        void *ctx;
};

/* Reads the complete chunks of the JFR file at path into rc, its samples split by process
 * as res says (NULL: one process), and notes its sampling period and time range. 0 or -errno
 * (-EBADMSG: a corrupt chunk, or no chunk at all). */
int jfr_convert_read_file(struct jfr_convert *rc, const char *path,
                          const struct jfr_convert_resources *res);
/* After jfr_convert_read_file with res->resource_of (format "pprof"): the samples counted
 * under process pid (0: of no process resource_of named), and those alone written as a
 * gzip'd pprof (a Pyroscope upload of a host file, one request per process). */
uint64_t jfr_convert_samples_of(const struct jfr_convert *rc, uint32_t pid);
int jfr_convert_write_pid(struct jfr_convert *rc, FILE *out, uint32_t pid);

/* The complete chunks of the JFR file at path, converted as jfr_convert_new(format,
 * process) says, to out; OTLP: resources as res says (NULL: process alone). 0 or -errno
 * (-EBADMSG: a corrupt chunk, or no chunk at all). */
int jfr_convert_file(const char *path, const char *format, const char *process,
                     const struct jfr_convert_resources *res, FILE *out);

#endif
