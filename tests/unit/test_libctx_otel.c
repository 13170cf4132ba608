/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_otel.c — libctx's OpenTelemetry structures read back the way an
 * outside reader reads them: the OTEL_CTX mapping found through /proc/self/maps, its header
 * checked and its payload decoded with protobuf-c (resource, schema version, key map, the
 * seqlock timestamp moving on a new key); the otel_thread_ctx_v1 record's bytes per OTEP 4947
 * (header, packed entries, one entry per key); the same context in the span record and the
 * mirror labels; the ABI switches; a SIGPROF handler reading the record while the thread
 * rewrites it as fast as it can (never a valid record mixing two writes); a forked child
 * without the parent's mapping (MADV_DONTFORK); a handler that sets the trace while the
 * thread's first write is taking its slot (single-stepped to that window, then signalled).
 */
/* The seqlock read below is an outside reader's, with full fences; this file is built in the
 * TSan variant too (where only tsan_* tests run), and GCC refuses fences under TSan. */
#pragma GCC diagnostic ignored "-Wtsan"
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "ctx/ctx_inline.h" /* the TLS block's layout: where the child's busy flag is */
#include "libctx_reader.h"
#include "otel/processcontext.pb-c.h"

extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext ProcessContext;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

/* The OTEL_CTX mapping's start from /proc/self/maps, NULL if none. */
static const struct otel_process_ctx_header *find_mapping(char *name, size_t cap)
{
        FILE *f = fopen("/proc/self/maps", "r");
        cr_assert_not_null(f);
        char line[512];
        const struct otel_process_ctx_header *h = NULL;
        while (fgets(line, sizeof(line), f)) {
                if (!strstr(line, "/memfd:OTEL_CTX") && !strstr(line, "[anon:OTEL_CTX]") &&
                    !strstr(line, "[anon_shmem:OTEL_CTX]"))
                        continue;
                unsigned long lo;
                if (sscanf(line, "%lx-", &lo) == 1)
                        h = (const struct otel_process_ctx_header *)lo;
                if (name)
                        snprintf(name, cap, "%s", strchr(line, '/') ? strchr(line, '/') : line);
                break;
        }
        fclose(f);
        return h;
}

/* The OTEP 4719 reader protocol: timestamp, fence, header + payload copy, fence, timestamp. */
static ProcessContext *read_context(const struct otel_process_ctx_header *h, uint64_t *ts)
{
        static uint8_t buf[1 << 16];
        for (int tries = 0; tries < 1000; tries++) {
                uint64_t t0 = __atomic_load_n(&h->monotonic_published_at_ns, __ATOMIC_SEQ_CST);
                if (!t0)
                        continue;
                __atomic_thread_fence(__ATOMIC_SEQ_CST);
                uint32_t n = h->payload_size;
                const void *p = (const void *)(uintptr_t)h->payload;
                cr_assert_leq(n, sizeof(buf));
                memcpy(buf, p, n);
                __atomic_thread_fence(__ATOMIC_SEQ_CST);
                if (__atomic_load_n(&h->monotonic_published_at_ns, __ATOMIC_SEQ_CST) != t0)
                        continue;
                *ts = t0;
                return opentelemetry__proto__processcontext__v1development__process_context__unpack(
                    NULL, n, buf);
        }
        return NULL;
}

static const char *str_attr(KeyValue **kv, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(kv[i]->key, key) && kv[i]->value &&
                    kv[i]->value->value_case ==
                        OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE)
                        return kv[i]->value->string_value;
        return NULL;
}

/* Index of `key` in the published key map, -1 if absent; *nkeys = map size. */
static int key_map_index(const ProcessContext *pc, const char *key, size_t *nkeys)
{
        *nkeys = 0;
        for (size_t i = 0; i < pc->n_attributes; i++) {
                KeyValue *kv = pc->attributes[i];
                if (strcmp(kv->key, OTEL_KEY_MAP_KEY))
                        continue;
                cr_assert_eq(kv->value->value_case,
                             OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE);
                Opentelemetry__Proto__Common__V1__ArrayValue *a = kv->value->array_value;
                *nkeys = a->n_values;
                for (size_t j = 0; j < a->n_values; j++)
                        if (!strcmp(a->values[j]->string_value, key))
                                return (int)j;
        }
        return -1;
}

Test(libctx_otel, process_context_mapping_and_payload)
{
        char name[512];
        const struct otel_process_ctx_header *h = find_mapping(name, sizeof(name));
        cr_assert_not_null(h, "no OTEL_CTX mapping in /proc/self/maps");
        cr_assert_eq(memcmp(h->signature, "OTEL_CTX", 8), 0);
        cr_assert_eq(h->version, 2);
        uint64_t ts0;
        ProcessContext *pc = read_context(h, &ts0);
        cr_assert_not_null(pc, "payload does not decode");
        cr_assert_not_null(pc->resource);
        KeyValue **ra = pc->resource->attributes;
        size_t rn = pc->resource->n_attributes;
        const char *svc = str_attr(ra, rn, "service.name");
        cr_assert_not_null(svc);
        if (!getenv("OTEL_SERVICE_NAME"))
                cr_assert(!strncmp(svc, "unknown_service:", 16) && svc[16],
                          "the SDKs' default, unknown_service:EXECUTABLE: %s", svc);
        const char *id = str_attr(ra, rn, "service.instance.id");
        cr_assert(id && strlen(id) == 36 && id[14] == '4', "instance id %s", id ? id : "-");
        char idcopy[37];
        snprintf(idcopy, sizeof(idcopy), "%s", id);
        cr_assert_str_eq(str_attr(pc->attributes, pc->n_attributes, OTEL_SCHEMA_VERSION_KEY),
                         "tlsdesc_v1_dev");
        size_t n0;
        key_map_index(pc, "", &n0);
        opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(pc,
                                                                                            NULL);

        /* a new key: appended at the end, republished (the timestamp moves), stable index */
        int k = ctx_register_key("test.new_key", 12);
        cr_assert_geq(k, 0);
        cr_assert_eq(ctx_register_key("test.new_key", 12), k, "same key, same index");
        uint64_t ts1;
        pc = read_context(h, &ts1);
        cr_assert_not_null(pc);
        size_t n1;
        cr_assert_eq(key_map_index(pc, "test.new_key", &n1), k);
        cr_assert_eq(n1, n0 + 1);
        cr_assert_gt(ts1, ts0, "published_at did not advance");
        opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(pc,
                                                                                            NULL);

        /* the resource API */
        cr_assert_eq(ctx_set_resource("svc-a", "1.2.3", NULL, "prod"), 0);
        uint64_t ts2;
        pc = read_context(h, &ts2);
        cr_assert_not_null(pc);
        ra = pc->resource->attributes;
        rn = pc->resource->n_attributes;
        cr_assert_str_eq(str_attr(ra, rn, "service.name"), "svc-a");
        cr_assert_str_eq(str_attr(ra, rn, "service.version"), "1.2.3");
        cr_assert_str_eq(str_attr(ra, rn, "deployment.environment.name"), "prod");
        cr_assert_str_eq(str_attr(ra, rn, "service.instance.id"), idcopy, "kept");
        opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(pc,
                                                                                            NULL);
}

/* Parse attrs_data the OTEP way; the last duplicate wins. */
static int entry(const struct otel_thread_ctx_record *r, int key, char *out, int *dups)
{
        int found = -1;
        *dups = 0;
        for (unsigned off = 0; off + 2 <= r->attrs_data_size;) {
                unsigned len = r->attrs_data[off + 1];
                if (off + 2 + len > r->attrs_data_size)
                        break;
                if (r->attrs_data[off] == key) {
                        memcpy(out, &r->attrs_data[off + 2], len);
                        out[len] = '\0';
                        found = (int)len;
                        (*dups)++;
                }
                off += 2 + len;
        }
        return found;
}

Test(libctx_otel, thread_record_bytes_and_coherence)
{
        cr_assert_null(otel_thread_ctx_v1, "no record before the thread's first write");
        static const uint8_t trace[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                          0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
        cr_assert_eq(ctx_set_trace(trace, 0x00f067aa0ba902b7ULL, 42, 1), 0);
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        cr_assert_not_null(r);
        cr_assert_eq((uintptr_t)r % 2, 0, "record 2-aligned");
        const uint8_t *b = (const uint8_t *)r;
        cr_assert_eq(memcmp(b, trace, 16), 0);
        static const uint8_t span[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
        cr_assert_eq(memcmp(b + 16, span, 8), 0, "span id in W3C byte order");
        cr_assert_eq(b[24], 1, "valid");
        cr_assert_eq(b[25], 1, "trace flags");
        cr_assert_eq(b[26] | b[27] << 8, 0, "no attributes yet");
        /* the same span in the span record and the mirror labels */
        cr_assert_eq(ctx_span_context_v1.span_id, 0x00f067aa0ba902b7ULL);
        cr_assert_eq(ctx_span_context_v1.root_span_id, 42);
        struct rd_set set;
        rd_read_set(custom_labels_current_set, &set);
        cr_assert_eq(set.n, 2, "two mirror labels");

        /* attributes: one entry per key, replaced in place or moved to the end */
        int kr = ctx_register_key("http.route", 10);
        cr_assert_geq(kr, 0);
        cr_assert_eq(ctx_set_label_str("http.route", "/a"), 0);
        cr_assert_eq(ctx_set_label_str("user", "alice"), 0);
        int ku = ctx_register_key("user", 4);
        cr_assert_eq(ctx_set_label_str("http.route", "/orders"), 0);
        cr_assert_eq(ctx_set_attr(ku, "bob", 3), 0);
        char v[256];
        int dups;
        cr_assert_eq(entry(r, kr, v, &dups), 7);
        cr_assert_str_eq(v, "/orders");
        cr_assert_eq(dups, 1, "a key appears once");
        cr_assert_eq(entry(r, ku, v, &dups), 3);
        cr_assert_str_eq(v, "bob");
        cr_assert_eq(r->attrs_data_size, (2 + 7) + (2 + 3));
        rd_read_set(custom_labels_current_set, &set);
        cr_assert_eq(set.n, 4, "the Custom Labels set has the same two labels + mirrors");
        /* remove and clear */
        cr_assert_eq(ctx_remove_label_str("http.route"), 0);
        cr_assert_eq(entry(r, kr, v, &dups), -1);
        cr_assert_eq(r->attrs_data_size, 2 + 3);
        cr_assert_eq(ctx_clear_labels(), 0);
        cr_assert_eq(r->attrs_data_size, 0);
        /* no trace: zero ids (OTEP: both or neither), record still valid */
        cr_assert_eq(ctx_set_span(5, 6), 0);
        cr_assert_eq(r->valid, 1);
        static const uint8_t zero[24];
        cr_assert_eq(memcmp(b, zero, 24), 0, "ctx_set_span has no trace id: none in OTel");
        cr_assert_eq(ctx_span_context_v1.span_id, 5);
        cr_assert_eq(ctx_clear_trace(), 0);
        cr_assert_eq(ctx_span_context_v1.checksum, 0);
        cr_assert_eq(otel_thread_ctx_v1, r, "the pointer never moves");
}

static int scope_seen, scope_kb, scope_ks;
static void in_scope(void *p)
{
        (void)p;
        char v[256];
        int d;
        scope_seen = entry(otel_thread_ctx_v1, scope_ks, v, &d) == 3 &&
                     entry(otel_thread_ctx_v1, scope_kb, v, &d) == 1;
}

Test(libctx_otel, scoped_labels_in_the_otel_record)
{
        cr_assert_eq(ctx_set_label_str("base", "1"), 0);
        int kb = ctx_register_key("base", 4), ks = ctx_register_key("scoped", 6);
        scope_kb = kb, scope_ks = ks;
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        ctx_label_kv kv[] = {{"scoped", "yes"}};
        cr_assert_eq(ctx_with_labels(kv, 1, in_scope, NULL), 0);
        cr_assert(scope_seen, "scoped label not in the OTel record inside the scope");
        char v[256];
        int d;
        cr_assert_eq(entry(r, ks, v, &d), -1, "scoped label left behind");
        cr_assert_eq(entry(r, kb, v, &d), 1);
}

Test(libctx_otel, abi_switches)
{
        static const uint8_t trace[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        ctx_set_abis(CTX_ABI_OTEL_THREAD | CTX_ABI_OTEL_PROCESS);
        cr_assert_eq(ctx_get_abis(), CTX_ABI_OTEL_THREAD | CTX_ABI_OTEL_PROCESS);
        cr_assert_eq(ctx_set_trace(trace, 77, 78, 0), 0);
        cr_assert_eq(ctx_set_label_str("only", "otel"), 0);
        cr_assert_null(custom_labels_current_set, "Custom Labels off: never published");
        cr_assert_eq(ctx_span_context_v1.checksum, 0, "span record off: not written");
        cr_assert_not_null(otel_thread_ctx_v1);
        cr_assert_eq(otel_thread_ctx_v1->span_id[7], 77);
        ctx_set_abis(CTX_ABI_CUSTOM_LABELS | CTX_ABI_SPAN_RECORD);
        cr_assert_eq(ctx_set_trace(trace, 99, 1, 0), 0);
        cr_assert_eq(otel_thread_ctx_v1->span_id[7], 77, "OTel off: record not written");
        cr_assert_eq(ctx_span_context_v1.span_id, 99);
        ctx_set_abis(CTX_ABI_ALL);
}

/* --- a reader in a signal handler while the thread rewrites its record --- */
static volatile unsigned long h_reads, h_valid, h_invalid, h_wrong, h_attr_checked;
static int h_key;

static void trace_of(uint64_t i, uint8_t t[16])
{
        for (int j = 0; j < 16; j++)
                t[j] = (uint8_t)(i * 131 + (uint64_t)j * 7 + 1);
}

static void on_prof(int sig)
{
        (void)sig;
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        h_reads++;
        if (!r)
                return;
        if (r->valid != 1) {
                h_invalid++;
                return;
        }
        h_valid++;
        /* span id = bytes of i (big-endian) and the trace is derived from the same i */
        uint64_t be, i;
        memcpy(&be, r->span_id, 8);
        i = __builtin_bswap64(be);
        if (i == 0)
                return;
        uint8_t t[16];
        trace_of(i, t);
        if (memcmp(t, r->trace_id, 16) != 0 || r->trace_flags != (uint8_t)(i & 1))
                h_wrong++;
        /* the attribute value: n bytes, all equal to (n + 'a'); n varies per write */
        for (unsigned off = 0; off + 2 <= r->attrs_data_size;) {
                unsigned len = r->attrs_data[off + 1];
                if (off + 2 + len > r->attrs_data_size || off + 2 + len > 612) {
                        h_wrong++;
                        break;
                }
                if (r->attrs_data[off] == h_key) {
                        h_attr_checked++;
                        for (unsigned j = 0; j < len; j++)
                                if (r->attrs_data[off + 2 + j] != (uint8_t)('a' + len % 26))
                                        h_wrong++;
                }
                off += 2 + len;
        }
}

Test(libctx_otel, signal_reader_never_sees_a_mixed_record, .timeout = 60)
{
        h_key = ctx_register_key("attr", 4);
        cr_assert_geq(h_key, 0);
        struct sigaction sa = {0};
        sa.sa_handler = on_prof;
        sa.sa_flags = SA_RESTART;
        cr_assert_eq(sigaction(SIGPROF, &sa, NULL), 0);
        timer_t tm;
        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_SIGNAL; /* one thread: the signal lands on this one */
        sev.sigev_signo = SIGPROF;
        cr_assert_eq(timer_create(CLOCK_MONOTONIC, &sev, &tm), 0);
        struct itimerspec its = {{0, 100000}, {0, 100000}}; /* 10 kHz */
        cr_assert_eq(timer_settime(tm, 0, &its, NULL), 0);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        char val[64];
        uint64_t writes = 0;
        for (uint64_t i = 1; h_reads < 20000; i++) {
                if ((i & 0xffff) == 0) {
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        if (now.tv_sec - t0.tv_sec >= 4)
                                break;
                }
                uint8_t t[16];
                trace_of(i, t);
                cr_assert_eq(ctx_set_trace(t, i, i, (uint8_t)(i & 1)), 0);
                size_t len = 1 + i % 60;
                memset(val, 'a' + (int)(len % 26), len);
                cr_assert_eq(ctx_set_attr(h_key, val, len), 0);
                writes++;
        }
        timer_delete(tm);
        printf("otel record under SIGPROF: %" PRIu64 " writes, %lu reads: %lu valid, %lu during an "
               "update (valid 0), %lu attribute values checked, %lu wrong\n",
               writes, h_reads, h_valid, h_invalid, h_attr_checked, h_wrong);
        cr_assert_gt(h_reads, 1000, "too few interrupts");
        cr_assert_gt(h_valid, 0);
        cr_assert_eq(h_wrong, 0, "%lu valid records mixed two writes", h_wrong);
}

Test(libctx_otel, fork_child_has_no_mapping)
{
        cr_assert_not_null(find_mapping(NULL, 0));
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
                _exit(find_mapping(NULL, 0) ? 1 : 0);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child inherited OTEL_CTX");
}

/* --- a handler that sets the trace while the thread is setting it --- */
#define OTEL_HEADER_BYTES 28 /* trace_id, span_id, valid, trace_flags, attrs_data_size */
static volatile uint64_t n_main_i, n_handler_i, n_hw, n_herr, n_mixed, n_lands;
static volatile int n_in_call;

/* i -> (trace, span): span = i, trace derived from i; flags = i & 1 */
static int record_is(const struct otel_thread_ctx_record *r, uint64_t i)
{
        uint8_t t[16];
        uint64_t be = __builtin_bswap64(i);
        trace_of(i, t);
        return r->valid == 1 && !memcmp(r->trace_id, t, 16) && !memcmp(r->span_id, &be, 8) &&
               r->trace_flags == (uint8_t)(i & 1);
}

static void on_nested(int sig)
{
        (void)sig;
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        if (r && r->valid == 1) { /* a reader first: a valid record is one write's */
                uint64_t be, i;
                memcpy(&be, r->span_id, 8);
                i = __builtin_bswap64(be);
                if (i && !record_is(r, i))
                        n_mixed++;
        }
        n_lands += n_in_call;
        uint64_t h = (1ull << 40) + ++n_hw; /* the handler's own traces */
        uint8_t t[16];
        trace_of(h, t);
        n_handler_i = h;
        if (ctx_set_trace(t, h, h, (uint8_t)(h & 1)) != 0)
                n_herr++;
}

Test(libctx_otel, handler_sets_trace_inside_set_trace, .timeout = 60)
{
        struct sigaction sa = {0};
        sa.sa_handler = on_nested;
        sa.sa_flags = SA_RESTART;
        cr_assert_eq(sigaction(SIGPROF, &sa, NULL), 0);
        timer_t tm;
        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = SIGPROF;
        cr_assert_eq(timer_create(CLOCK_MONOTONIC, &sev, &tm), 0);
        struct itimerspec its = {{0, 50000}, {0, 50000}}; /* 20 kHz */
        cr_assert_eq(timer_settime(tm, 0, &its, NULL), 0);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t bad_after = 0, calls = 0;
        for (uint64_t i = 1; n_hw < 20000; i++) {
                if ((i & 0xffff) == 0) {
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        if (now.tv_sec - t0.tv_sec >= 4)
                                break;
                }
                uint8_t t[16];
                trace_of(i, t);
                uint64_t hw0 = n_hw;
                n_in_call = 1;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                cr_assert_eq(ctx_set_trace(t, i, i, (uint8_t)(i & 1)), 0);
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                n_in_call = 0;
                calls++;
                /* after the call: this call's trace, or the last handler's if one ran in it.
                 * A handler may land in this check too: take the record's header and the
                 * handler's last trace as one snapshot (no handler ran during the copy). */
                static struct otel_thread_ctx_record snap;
                uint64_t hw1, hlast;
                do {
                        hw1 = n_hw;
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        hlast = n_handler_i;
                        memcpy(&snap, (const void *)otel_thread_ctx_v1, OTEL_HEADER_BYTES);
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                } while (hw1 != n_hw);
                if (!record_is(&snap, i) && !(hw1 != hw0 && record_is(&snap, hlast)))
                        bad_after++;
        }
        timer_delete(tm);
        printf("otel nested trace writes: %" PRIu64 " calls, %" PRIu64 " handler writes (%" PRIu64
               " inside a call, %" PRIu64 " errors); %" PRIu64 " mixed records seen, %" PRIu64
               " bad after return\n",
               calls, (uint64_t)n_hw, (uint64_t)n_lands, (uint64_t)n_herr, (uint64_t)n_mixed,
               bad_after);
        cr_assert_gt(n_lands, 100, "too few handler writes inside a call");
        cr_assert_eq(n_herr, 0);
        cr_assert_eq(n_mixed, 0);
        cr_assert_eq(bad_after, 0);
}

/* --- a handler that sets the trace inside the thread's first write (the slot attach) --- */
static volatile int first_h_ret = 1;
static void on_first(int sig)
{
        (void)sig;
        uint8_t t[16];
        trace_of(99, t);
        first_h_ret = ctx_set_trace(t, 99, 98, 1);
}

/* The child, forked before this thread ever wrote: its first write attaches the slot with
 * the label-write guard held. The parent steps it to the window where the guard is held and
 * no slot is taken yet and delivers SIGUSR1 there. Exit status: 0 ok, 3 the handler's call
 * failed, 4 its trace is not in the record, 5 not in the span record. */
static void first_write_child(void)
{
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
                _exit(2);
        signal(SIGUSR1, on_first);
        raise(SIGSTOP);
        ctx_set_label_str("first", "write");
        if (first_h_ret != 0)
                _exit(3);
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        uint8_t t[16];
        trace_of(99, t);
        uint64_t be = __builtin_bswap64(99);
        if (!r || r->valid != 1 || memcmp(r->trace_id, t, 16) || memcmp(r->span_id, &be, 8))
                _exit(4);
        uint64_t sp = 0, rt = 0;
        if (rd_read_span(&ctx_span_context_v1, &sp, &rt) != 1 || sp != 99 || rt != 98)
                _exit(5);
        _exit(0);
}

static int child_word(pid_t c, const void *addr, size_t n, void *out)
{
        struct iovec l = {out, n}, r = {(void *)(uintptr_t)addr, n};
        return process_vm_readv(c, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

Test(libctx_otel, handler_sets_trace_inside_first_write, .timeout = 60)
{
        /* this thread's block, at the same address in the child (a fork of this thread) */
        struct ctxi_tls *blk = (struct ctxi_tls *)(void *)&ctx_span_context_v1;
        fflush(NULL);
        pid_t c = fork();
        cr_assert_geq(c, 0);
        if (c == 0)
                first_write_child();
        int st;
        cr_assert_eq(waitpid(c, &st, 0), c);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
                cr_skip_test("SKIPPED: ptrace(PTRACE_TRACEME) is not permitted here");
        cr_assert(WIFSTOPPED(st), "child state %#x", st);
        long steps = 0;
        for (;; steps++) {
                uint32_t busy = 1;
                struct ctxi_slot *home = (struct ctxi_slot *)1;
                cr_assert_eq(child_word(c, &blk->self.busy, sizeof(busy), &busy), 0);
                cr_assert_eq(child_word(c, &blk->self.home, sizeof(home), &home), 0);
                if (busy && !home)
                        break;
                cr_assert_lt(steps, 1000000, "the first write never held the guard");
                cr_assert_eq(ptrace(PTRACE_SINGLESTEP, c, 0, 0), 0);
                cr_assert_eq(waitpid(c, &st, 0), c);
                cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "child state %#x", st);
        }
        cr_assert_eq(ptrace(PTRACE_CONT, c, 0, SIGUSR1), 0); /* the handler runs here */
        cr_assert_eq(waitpid(c, &st, 0), c);
        cr_assert(WIFEXITED(st), "child state %#x", st);
        cr_assert_eq(WEXITSTATUS(st), 0,
                     "exit %d: 3 = the handler's ctx_set_trace failed (-EBUSY), 4 = its trace "
                     "is not in the OTel record, 5 = not in the span record",
                     WEXITSTATUS(st));
}
