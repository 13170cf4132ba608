/*
 * report_convert.h — `ctxprof report --format collapsed|pprof|otlp -o OUT FILE.jfr`: turns a
 * JFR file's jdk.ExecutionSample events back into the collapsed aggregation table
 * (sink/collapsed.h) and writes it with the same sinks `record` writes directly, so labels,
 * spans and frames come out the same way. A JFR frame keeps what the file says: its method
 * name, its module (the frame's class) and line; a frame of type Kernel is a kernel frame.
 * JFR carries no process per sample: every sample is of process "?" (pid 0). At most
 * CTXPROF_MAX_FRAMES frames per stack (a deeper one is cut at the root end and marked
 * truncated). cmd_report.c reads the file and prints errors; this file converts one event at
 * a time and writes. Never prints except to the FILE given.
 */
#ifndef CTXPROF_REPORT_CONVERT_H
#define CTXPROF_REPORT_CONVERT_H

#include <stdint.h>
#include <stdio.h>

#include "jfr/jfr_reader.h"

struct report_convert;

/* format: "collapsed", "pprof" or "otlp" (pprof and otlp keep the span in the key, as
 * record does). NULL on -ENOMEM. */
struct report_convert *report_convert_new(const char *format);
void report_convert_free(struct report_convert *rc);
/* Adds one jdk.ExecutionSample (stack, thread, span, context labels). 0 or -ENOMEM. */
int report_convert_event(struct report_convert *rc, const struct jfr_reader *r,
                         const struct jfr_event *ev);
/* The labels of a sample event's `context` chain ({key, value, next} nodes, docs/jfr.md)
 * into key[i], value[i] (at most max; a loop in a hostile file ends the walk). The count. */
unsigned report_context_labels(const struct jfr_reader *r, const struct jfr_value *ev,
                               const char **key, const char **value, unsigned max);
/* Writes the format to out; period_ns (0 = unknown), the file's time range in wall clock
 * nanoseconds. 0 or -errno. */
int report_convert_write(struct report_convert *rc, FILE *out, uint64_t period_ns,
                         uint64_t start_ns, uint64_t end_ns);

#endif
