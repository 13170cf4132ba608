/* SPDX-License-Identifier: MIT */
/*
 * jfr_metadata.c — declares ctxprof's JFR types (JDK field order for the built-ins, so
 * readers that hard-code layouts keep working) and encodes the metadata event. Must never
 * emit constantPool="false" (the JDK tests presence), an undeclared type id, or a class
 * name that is not a dotted Java identifier.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jfr/jfr_dict.h"
#include "jfr/jfr_metadata.h"

enum { F_CP = 1, F_ARRAY = 2 };

struct fdesc {
        const char *name;
        int type;
        int flags;
        int ann;             /* 0 or a content annotation (JFR_A_TIMESTAMP, ...) */
        const char *ann_val; /* its value, NULL for none */
        const char *label;
};

struct tdesc {
        int id;
        const char *name;
        const char *super;
        int simple;
        const char *label;
        const char *cat0, *cat1; /* Category value-0/value-1, NULL for none */
        int content_type;        /* annotated with jdk.jfr.ContentType */
        const struct fdesc *f;
        int nf;
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define START_TIME                                                                                 \
        {                                                                                          \
                "startTime", JFR_T_LONG, 0, JFR_A_TIMESTAMP, "TICKS", "Start Time"                 \
        }
#define DURATION                                                                                   \
        {                                                                                          \
                "duration", JFR_T_LONG, 0, JFR_A_TIMESPAN, "TICKS", "Duration"                     \
        }

static const struct fdesc f_value_str[] = {{"value", JFR_T_STRING, 0, 0, NULL, NULL}};
static const struct fdesc f_category[] = {{"value", JFR_T_STRING, F_ARRAY, 0, NULL, NULL}};
static const struct fdesc f_thread[] = {
    {"osName", JFR_T_STRING, 0, 0, NULL, "OS Thread Name"},
    {"osThreadId", JFR_T_LONG, 0, 0, NULL, "OS Thread Id"},
    {"javaName", JFR_T_STRING, 0, 0, NULL, "Java Thread Name"},
    {"javaThreadId", JFR_T_LONG, 0, 0, NULL, "Java Thread Id"},
    /* ours, after the JDK's four (positional readers skip what follows them): the
     * thread's process, so that a host file's samples can be split by process */
    {"pid", JFR_T_LONG, 0, 0, NULL, "Process Id"},
};
static const struct fdesc f_class[] = {
    {"classLoader", JFR_T_CLASSLOADER, F_CP, 0, NULL, "Class Loader"},
    {"name", JFR_T_SYMBOL, F_CP, 0, NULL, "Name"},
    {"package", JFR_T_PACKAGE, F_CP, 0, NULL, "Package"},
    {"modifiers", JFR_T_INT, 0, 0, NULL, "Access Modifiers"},
};
static const struct fdesc f_classloader[] = {
    {"type", JFR_T_CLASS, F_CP, 0, NULL, "Type"},
    {"name", JFR_T_SYMBOL, F_CP, 0, NULL, "Name"},
};
static const struct fdesc f_package[] = {{"name", JFR_T_SYMBOL, F_CP, 0, NULL, "Name"}};
static const struct fdesc f_symbol[] = {{"string", JFR_T_STRING, 0, 0, NULL, NULL}};
static const struct fdesc f_method[] = {
    {"type", JFR_T_CLASS, F_CP, 0, NULL, "Type"},
    {"name", JFR_T_SYMBOL, F_CP, 0, NULL, "Name"},
    {"descriptor", JFR_T_SYMBOL, F_CP, 0, NULL, "Descriptor"},
    {"modifiers", JFR_T_INT, 0, 0, NULL, "Access Modifiers"},
    {"hidden", JFR_T_BOOLEAN, 0, 0, NULL, "Hidden"},
};
static const struct fdesc f_frame[] = {
    {"method", JFR_T_METHOD, F_CP, 0, NULL, "Java Method"},
    {"lineNumber", JFR_T_INT, 0, 0, NULL, "Line Number"},
    {"bytecodeIndex", JFR_T_INT, 0, 0, NULL, "Bytecode Index"},
    {"type", JFR_T_FRAMETYPE, F_CP, 0, NULL, "Frame Type"},
};
static const struct fdesc f_stacktrace[] = {
    {"truncated", JFR_T_BOOLEAN, 0, 0, NULL, "Truncated"},
    {"frames", JFR_T_STACKFRAME, F_ARRAY, 0, NULL, "Stack Frames"},
};
static const struct fdesc f_frametype[] = {{"description", JFR_T_STRING, 0, 0, NULL, NULL}};
static const struct fdesc f_threadstate[] = {{"name", JFR_T_STRING, 0, 0, NULL, NULL}};
/* The JDK's four fields first (positional readers stop there), then the context fields as
 * plain longs where Pyroscope binds them by name; contextBytes lets positional readers skip
 * the rest as one event of an unknown type (docs/jfr.md, "Event layout"). */
static const struct fdesc f_execution_sample[] = {
    START_TIME,
    {"sampledThread", JFR_T_THREAD, F_CP, 0, NULL, "Thread"},
    {"stackTrace", JFR_T_STACKTRACE, F_CP, 0, NULL, "Stack Trace"},
    {"state", JFR_T_THREADSTATE, F_CP, 0, NULL, "Thread State"},
    {"contextBytes", JFR_T_INT, 0, 0, NULL, "Context Bytes"},
    {"contextId", JFR_T_LONG, 0, 0, NULL, "Context Id"},
    {"spanId", JFR_T_LONG, 0, JFR_A_UNSIGNED, NULL, "Span Id"},
    {"localRootSpanId", JFR_T_LONG, 0, JFR_A_UNSIGNED, NULL, "Local Root Span Id"},
    {"context", JFR_T_CONTEXT, F_CP, 0, NULL, "Context"},
};
/* An off-CPU interval: a duration event (JMC shows it with its stack); by-name readers
 * only (async-profiler's converter skips an event it does not know by its size). The
 * context fields are named as on jdk.ExecutionSample. */
static const struct fdesc f_offcpu[] = {
    START_TIME,
    DURATION,
    {"eventThread", JFR_T_THREAD, F_CP, 0, NULL, "Event Thread"},
    {"stackTrace", JFR_T_STACKTRACE, F_CP, 0, NULL, "Stack Trace"},
    {"state", JFR_T_THREADSTATE, F_CP, 0, NULL, "Thread State"},
    {"blockedIn", JFR_T_STRING, 0, 0, NULL, "Blocked In"},
    {"runQueueDelay", JFR_T_LONG, 0, JFR_A_TIMESPAN, "NANOSECONDS", "Run Queue Delay"},
    {"contextId", JFR_T_LONG, 0, 0, NULL, "Context Id"},
    {"spanId", JFR_T_LONG, 0, JFR_A_UNSIGNED, NULL, "Span Id"},
    {"localRootSpanId", JFR_T_LONG, 0, JFR_A_UNSIGNED, NULL, "Local Root Span Id"},
    {"context", JFR_T_CONTEXT, F_CP, 0, NULL, "Context"},
};
static const struct fdesc f_context[] = {
    {"key", JFR_T_STRING, 0, 0, NULL, "Key"},
    {"value", JFR_T_STRING, 0, 0, NULL, "Value"},
    {"next", JFR_T_CONTEXT, F_CP, 0, NULL, "Next Label"},
};
static const struct fdesc f_active_recording[] = {
    START_TIME,
    DURATION,
    {"id", JFR_T_LONG, 0, 0, NULL, "Id"},
    {"name", JFR_T_STRING, 0, 0, NULL, "Name"},
    {"destination", JFR_T_STRING, 0, 0, NULL, "Destination"},
    {"maxAge", JFR_T_LONG, 0, JFR_A_TIMESPAN, "MILLISECONDS", "Max Age"},
    {"maxSize", JFR_T_LONG, 0, JFR_A_DATA_AMOUNT, "BYTES", "Max Size"},
    {"recordingStart", JFR_T_LONG, 0, JFR_A_TIMESTAMP, "MILLISECONDS_SINCE_EPOCH", "Start Time"},
    {"recordingDuration", JFR_T_LONG, 0, JFR_A_TIMESPAN, "MILLISECONDS", "Recording Duration"},
};
static const struct fdesc f_active_setting[] = {
    START_TIME,
    DURATION,
    {"id", JFR_T_LONG, 0, 0, NULL, "Event Id"},
    {"name", JFR_T_STRING, 0, 0, NULL, "Setting Name"},
    {"value", JFR_T_STRING, 0, 0, NULL, "Setting Value"},
};
static const struct fdesc f_os_information[] = {
    START_TIME,
    {"osVersion", JFR_T_STRING, 0, 0, NULL, "OS Version"},
};
static const struct fdesc f_cpu_information[] = {
    START_TIME,
    {"cpu", JFR_T_STRING, 0, 0, NULL, "Type"},
    {"description", JFR_T_STRING, 0, 0, NULL, "Description"},
    {"sockets", JFR_T_INT, 0, 0, NULL, "Sockets"},
    {"cores", JFR_T_INT, 0, 0, NULL, "Cores"},
    {"hwThreads", JFR_T_INT, 0, 0, NULL, "Hardware Threads"},
};
static const struct fdesc f_process_context[] = {
    START_TIME,
    {"pid", JFR_T_LONG, 0, 0, NULL, "Process Id"},
    {"serviceName", JFR_T_STRING, 0, 0, NULL, "Service Name"},
    {"resourceAttributes", JFR_T_STRING, 0, 0, NULL, "Resource Attributes"},
};
static const struct fdesc f_statistics[] = {
    START_TIME,
    DURATION,
    {"samples", JFR_T_LONG, 0, 0, NULL, "Samples"},
    {"lost", JFR_T_LONG, 0, 0, NULL, "Lost Samples"},
    {"tornSpanReads", JFR_T_LONG, 0, 0, NULL, "Torn Span Reads"},
    {"labelFaults", JFR_T_LONG, 0, 0, NULL, "Label Faults"},
    {"unwindErrors", JFR_T_LONG, 0, 0, NULL, "Unwind Errors"},
    {"traceTableUsed", JFR_T_LONG, 0, 0, NULL, "Trace Table Entries Used"},
    {"traceTableCapacity", JFR_T_LONG, 0, 0, NULL, "Trace Table Capacity"},
    {"bpfNsPerSample", JFR_T_LONG, 0, JFR_A_TIMESPAN, "NANOSECONDS", "BPF Time per Sample"},
    {"unknownStacks", JFR_T_LONG, 0, 0, NULL, "Samples without Stack"},
    {"droppedLabelKeys", JFR_T_LONG, 0, 0, NULL, "Label Keys Dropped"},
    /* in enum jfr_ctx_missing order */
    {"ctxMissingPending", JFR_T_LONG, 0, 0, NULL, "No Context: Before Location (Not Recorded)"},
    {"ctxMissingStale", JFR_T_LONG, 0, 0, NULL, "No Context: Stale Location"},
    {"ctxMissingNotLocated", JFR_T_LONG, 0, 0, NULL, "No Context: Not Located"},
    {"ctxMissingNoThreadPointer", JFR_T_LONG, 0, 0, NULL, "No Context: No Thread Pointer"},
    {"ctxMissingNoStorage", JFR_T_LONG, 0, 0, NULL, "No Context: No TLS Block"},
    {"ctxMissingReadFaults", JFR_T_LONG, 0, 0, NULL, "No Context: Read Faults"},
    {"ctxMissingNotSet", JFR_T_LONG, 0, 0, NULL, "No Context: Not Set"},
    /* per-chunk store bounds (docs/daemon.md, "Memory bounds") */
    {"stacksOverShare", JFR_T_LONG, 0, 0, NULL, "New Stacks Refused: Process Share Used"},
    {"labelSetsRefused", JFR_T_LONG, 0, 0, NULL, "New Label Sets Refused: Store Bound"},
    {"threadsRefused", JFR_T_LONG, 0, 0, NULL, "New Threads Refused: Thread Table Bound"},
    {"filtered", JFR_T_LONG, 0, 0, NULL, "Samples Dropped by the Context Filter"},
};

#define PRIM(id, n)                                                                                \
        {                                                                                          \
                id, n, NULL, 0, NULL, NULL, NULL, 0, NULL, 0                                       \
        }
#define ANN(id, n, ct, f)                                                                          \
        {                                                                                          \
                id, n, "java.lang.annotation.Annotation", 0, NULL, NULL, NULL, ct, f, N(f)         \
        }
#define ANN0(id, n, ct)                                                                            \
        {                                                                                          \
                id, n, "java.lang.annotation.Annotation", 0, NULL, NULL, NULL, ct, NULL, 0         \
        }
#define TYPE(id, n, simple, label, f)                                                              \
        {                                                                                          \
                id, n, NULL, simple, label, NULL, NULL, 0, f, N(f)                                 \
        }
#define EVENT(id, n, label, c0, c1, f)                                                             \
        {                                                                                          \
                id, n, "jdk.jfr.Event", 0, label, c0, c1, 0, f, N(f)                               \
        }

static const struct tdesc types[] = {
    PRIM(JFR_T_BOOLEAN, "boolean"),
    PRIM(JFR_T_CHAR, "char"),
    PRIM(JFR_T_FLOAT, "float"),
    PRIM(JFR_T_DOUBLE, "double"),
    PRIM(JFR_T_BYTE, "byte"),
    PRIM(JFR_T_SHORT, "short"),
    PRIM(JFR_T_INT, "int"),
    PRIM(JFR_T_LONG, "long"),
    PRIM(JFR_T_STRING, "java.lang.String"),
    ANN(JFR_A_LABEL, "jdk.jfr.Label", 0, f_value_str),
    ANN(JFR_A_DESCRIPTION, "jdk.jfr.Description", 0, f_value_str),
    ANN(JFR_A_CATEGORY, "jdk.jfr.Category", 0, f_category),
    ANN0(JFR_A_CONTENT_TYPE, "jdk.jfr.ContentType", 0),
    ANN(JFR_A_TIMESTAMP, "jdk.jfr.Timestamp", 1, f_value_str),
    ANN(JFR_A_TIMESPAN, "jdk.jfr.Timespan", 1, f_value_str),
    ANN(JFR_A_DATA_AMOUNT, "jdk.jfr.DataAmount", 1, f_value_str),
    ANN0(JFR_A_UNSIGNED, "jdk.jfr.Unsigned", 1),
    TYPE(JFR_T_THREAD, "java.lang.Thread", 0, "Thread", f_thread),
    TYPE(JFR_T_CLASS, "java.lang.Class", 0, "Java Class", f_class),
    TYPE(JFR_T_CLASSLOADER, "jdk.types.ClassLoader", 0, "Java Class Loader", f_classloader),
    TYPE(JFR_T_PACKAGE, "jdk.types.Package", 0, "Package", f_package),
    TYPE(JFR_T_SYMBOL, "jdk.types.Symbol", 1, "Symbol", f_symbol),
    TYPE(JFR_T_METHOD, "jdk.types.Method", 0, "Java Method", f_method),
    TYPE(JFR_T_STACKFRAME, "jdk.types.StackFrame", 0, NULL, f_frame),
    TYPE(JFR_T_STACKTRACE, "jdk.types.StackTrace", 0, "Stack Trace", f_stacktrace),
    TYPE(JFR_T_FRAMETYPE, "jdk.types.FrameType", 1, "Frame type", f_frametype),
    TYPE(JFR_T_THREADSTATE, "jdk.types.ThreadState", 1, "Java Thread State", f_threadstate),
    TYPE(JFR_T_CONTEXT, "ctxprof.types.Context", 0, "Context Label", f_context),
    EVENT(JFR_E_EXECUTION_SAMPLE, "jdk.ExecutionSample", "Method Profiling Sample",
          "Java Virtual Machine", "Profiling", f_execution_sample),
    EVENT(JFR_E_ACTIVE_RECORDING, "jdk.ActiveRecording", "Flight Recording", "Flight Recorder",
          NULL, f_active_recording),
    EVENT(JFR_E_ACTIVE_SETTING, "jdk.ActiveSetting", "Recording Setting", "Flight Recorder", NULL,
          f_active_setting),
    EVENT(JFR_E_OS_INFORMATION, "jdk.OSInformation", "OS Information", "Operating System", NULL,
          f_os_information),
    EVENT(JFR_E_CPU_INFORMATION, "jdk.CPUInformation", "CPU Information", "Operating System",
          "Processor", f_cpu_information),
    EVENT(JFR_E_STATISTICS, "ctxprof.Statistics", "ctxprof Statistics", "ctxprof", NULL,
          f_statistics),
    EVENT(JFR_E_PROCESS_CONTEXT, "ctxprof.ProcessContext", "OpenTelemetry Process Context",
          "ctxprof", NULL, f_process_context),
    /* last: left out of chunks without off-CPU intervals (jfr_metadata_write_ext) */
    EVENT(JFR_E_OFFCPU, "ctxprof.OffCPU", "Off-CPU Interval", "ctxprof", "Profiling", f_offcpu),
};

struct md {
        struct jfr_strtab s;
        struct jfr_buf el;
        int err;
};

static void S(struct md *m, const char *str)
{
        uint32_t i = 0;
        int err = jfr_strtab_intern(&m->s, str, strlen(str), &i, NULL);
        if (err)
                m->err = err;
        jfr_buf_varint(&m->el, i);
}

static void head(struct md *m, const char *name, unsigned nattr)
{
        S(m, name);
        jfr_buf_varint(&m->el, nattr);
}

static void attr(struct md *m, const char *k, const char *v)
{
        S(m, k);
        S(m, v);
}

static void attr_int(struct md *m, const char *k, long v)
{
        char t[24];
        snprintf(t, sizeof(t), "%ld", v);
        attr(m, k, t);
}

static void children(struct md *m, unsigned n)
{
        jfr_buf_varint(&m->el, n);
}

/* annotation element with an optional value */
static void annotation(struct md *m, int cls, const char *value)
{
        head(m, "annotation", value ? 2 : 1);
        attr_int(m, "class", cls);
        if (value)
                attr(m, "value", value);
        children(m, 0);
}

static void field(struct md *m, const struct fdesc *f)
{
        unsigned na = 2 + !!(f->flags & F_CP) + !!(f->flags & F_ARRAY);
        head(m, "field", na);
        attr(m, "name", f->name);
        attr_int(m, "class", f->type);
        if (f->flags & F_CP)
                attr(m, "constantPool", "true");
        if (f->flags & F_ARRAY)
                attr(m, "dimension", "1");
        children(m, !!f->label + !!f->ann);
        if (f->label)
                annotation(m, JFR_A_LABEL, f->label);
        if (f->ann)
                annotation(m, f->ann, f->ann_val);
}

static void class(struct md *m, const struct tdesc *t)
{
        head(m, "class", 2 + !!t->super + !!t->simple);
        attr(m, "name", t->name);
        attr_int(m, "id", t->id);
        if (t->super)
                attr(m, "superType", t->super);
        if (t->simple)
                attr(m, "simpleType", "true");
        children(m, (unsigned)t->nf + !!t->label + !!t->cat0 + !!t->content_type);
        for (int i = 0; i < t->nf; i++)
                field(m, &t->f[i]);
        if (t->label)
                annotation(m, JFR_A_LABEL, t->label);
        if (t->cat0) {
                head(m, "annotation", t->cat1 ? 3 : 2);
                attr_int(m, "class", JFR_A_CATEGORY);
                attr(m, "value-0", t->cat0);
                if (t->cat1)
                        attr(m, "value-1", t->cat1);
                children(m, 0);
        }
        if (t->content_type)
                annotation(m, JFR_A_CONTENT_TYPE, NULL);
}

int jfr_metadata_write(struct jfr_buf *out, uint64_t start_ticks, uint64_t metadata_id)
{
        return jfr_metadata_write_ext(out, start_ticks, metadata_id, 0);
}

int jfr_metadata_write_ext(struct jfr_buf *out, uint64_t start_ticks, uint64_t metadata_id,
                           int with_offcpu)
{
        int ntypes = N(types) - (with_offcpu ? 0 : 1); /* ctxprof.OffCPU is last */
        struct md m = {.err = 0};
        jfr_strtab_init(&m.s);
        jfr_buf_init(&m.el);

        head(&m, "root", 0);
        children(&m, 2);
        head(&m, "metadata", 0);
        children(&m, (unsigned)ntypes);
        for (int i = 0; i < ntypes; i++)
                class(&m, &types[i]);
        head(&m, "region", 2);
        attr(&m, "locale", "en_US");
        attr(&m, "gmtOffset", "0");
        children(&m, 0);

        int err = m.err ? m.err : m.el.err;
        if (!err) {
                size_t start = out->len;
                size_t szoff = jfr_buf_varint_fixed(out, 0, 5);
                jfr_buf_varint(out, 0); /* type: metadata */
                jfr_buf_varint(out, start_ticks);
                jfr_buf_varint(out, 0); /* duration */
                jfr_buf_varint(out, metadata_id);
                jfr_buf_varint(out, m.s.n);
                for (uint32_t i = 0; i < m.s.n; i++)
                        jfr_buf_string(out, jfr_strtab_str(&m.s, i), m.s.len[i]);
                jfr_buf_put(out, m.el.data, m.el.len);
                jfr_buf_patch_varint(out, szoff, out->len - start, 5);
                err = out->err;
        }
        jfr_strtab_free(&m.s);
        jfr_buf_free(&m.el);
        return err;
}
