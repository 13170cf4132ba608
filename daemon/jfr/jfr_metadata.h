/* SPDX-License-Identifier: MIT */
/*
 * jfr_metadata.h — the JFR type system ctxprof writes: type ids, and the metadata event
 * (class/field/annotation tree + the required `region` element) for one chunk, including
 * the context fields of jdk.ExecutionSample. Pure encoding; never prints.
 */
#ifndef CTXPROF_JFR_METADATA_H
#define CTXPROF_JFR_METADATA_H

#include <stdint.h>

#include "jfr/jfr_buf.h"

/* Type ids (event ids < 128 so an event's type id is one byte). */
enum jfr_type_id {
        JFR_T_BOOLEAN = 4,
        JFR_T_CHAR,
        JFR_T_FLOAT,
        JFR_T_DOUBLE,
        JFR_T_BYTE,
        JFR_T_SHORT,
        JFR_T_INT,
        JFR_T_LONG,
        JFR_T_STRING = 20,
        JFR_T_THREAD,
        JFR_T_CLASS,
        JFR_T_CLASSLOADER,
        JFR_T_PACKAGE,
        JFR_T_SYMBOL,
        JFR_T_METHOD,
        JFR_T_STACKFRAME,
        JFR_T_STACKTRACE,
        JFR_T_FRAMETYPE,
        JFR_T_THREADSTATE,
        JFR_T_CONTEXT = JFR_T_THREADSTATE + 3, /* ctxprof.types.Context {key, value, next} */
        JFR_E_EXECUTION_SAMPLE = 101,
        JFR_E_CONTEXT_SAMPLE_UNUSED, /* was ctxprof.ExecutionSample: ids stay stable */
        JFR_E_ACTIVE_RECORDING,
        JFR_E_ACTIVE_SETTING,
        JFR_E_OS_INFORMATION,
        JFR_E_CPU_INFORMATION,
        JFR_E_STATISTICS,
        JFR_E_PROCESS_CONTEXT, /* ctxprof.ProcessContext: a process's OTel resource */
        JFR_E_OFFCPU,          /* ctxprof.OffCPU: one off-CPU interval */
        JFR_A_LABEL = 200,
        JFR_A_DESCRIPTION,
        JFR_A_CATEGORY,
        JFR_A_CONTENT_TYPE,
        JFR_A_TIMESTAMP,
        JFR_A_TIMESPAN,
        JFR_A_DATA_AMOUNT,
        JFR_A_UNSIGNED,
};

/* Append the complete metadata event (size, type 0, ..., root element) to out.
 * 0 or -ENOMEM. */
int jfr_metadata_write(struct jfr_buf *out, uint64_t start_ticks, uint64_t metadata_id);
/* The same, declaring ctxprof.OffCPU too when with_offcpu (only chunks that hold off-CPU
 * intervals carry the type, so CPU-only files stay as they were). */
int jfr_metadata_write_ext(struct jfr_buf *out, uint64_t start_ticks, uint64_t metadata_id,
                           int with_offcpu);

#endif
