/* SPDX-License-Identifier: MIT */
/*
 * ktrace_text.h — the kernel text of the tracing machinery that runs BPF programs
 * (bpf_prog_* images, bpf_trace_run*, __bpf_trace_*, __traceiter_*), as address ranges read
 * once from /proc/kallsyms (a range ends where the next symbol starts). A kernel stack taken
 * inside ctxprof's own programs (a CPU sample that interrupted one, a stack taken at a
 * tracepoint) starts with those frames; a profile must never show them (docs/offcpu.md).
 * Never prints; errors leave the table empty (nothing is recognized).
 */
#ifndef CTXPROF_KTRACE_TEXT_H
#define CTXPROF_KTRACE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ktrace_text;

/* The ranges from a kallsyms-format stream; NULL only when out of memory. */
struct ktrace_text *ktrace_text_read(FILE *kallsyms);

/* The same from /proc/kallsyms (addresses are 0 without CAP_SYSLOG: an empty table). */
struct ktrace_text *ktrace_text_load(void);

/* 1 if addr lies in one of the ranges. */
int ktrace_text_has(const struct ktrace_text *t, uint64_t addr);

/* Leaf-first kernel ips: how many leading ones to drop so that none of the machinery's frames
 * is left (everything up to the outermost such frame). */
size_t ktrace_text_skip(const struct ktrace_text *t, const uint64_t *ips, size_t n);

void ktrace_text_free(struct ktrace_text *t);

#endif
