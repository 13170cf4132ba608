/* SPDX-License-Identifier: MIT */
/*
 * record_stats.h — what `record` reports at exit: its counters as the human-readable lines
 * on stderr, and (--stats-json FILE) the same counters as one JSON object, for scripts and
 * tests, which must not scrape the human-readable line.
 */
#ifndef CTXPROF_RECORD_STATS_H
#define CTXPROF_RECORD_STATS_H

#include "engine/sampler.h"
#include "sink/collapsed.h"
#include "sink/jfr_sink.h"

/* The counters line (and the modules where DWARF unwinding stopped early) on stderr; c: the
 * collapsed output, or NULL. */
void record_stats_print(struct sampler *s, struct collapsed *c);
/* The same counters, those of the output (c: collapsed, jc: JFR; either may be NULL) and of
 * the parser helper (ps; NULL: none ran) included, as one JSON object replacing path. 0, or -1
 * (printed). */
struct parser_stats;
int record_stats_write_json(const char *path, struct sampler *s, struct collapsed *c,
                            const struct jfr_sink_counters *jc, const struct parser_stats *ps);

#endif
