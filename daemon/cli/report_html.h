/* SPDX-License-Identifier: MIT */
/*
 * report_html.h — `ctxprof report --html`: turns a JFR file's jdk.ExecutionSample events
 * into the HTML flame graph (sink/flame_html.h). cmd_report.c reads the file and prints
 * errors; this file only converts one event at a time.
 */
#ifndef CTXPROF_REPORT_HTML_H
#define CTXPROF_REPORT_HTML_H

#include "jfr/jfr_reader.h"
#include "sink/flame_html.h"

/* Adds one jdk.ExecutionSample (stack, thread, span, context labels) with count 1.
 * 0 or -ENOMEM. */
int report_html_event(struct flame_html *h, const struct jfr_reader *r, const struct jfr_event *ev);

#endif
