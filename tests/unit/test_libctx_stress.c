/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_stress.c — the interrupted-reader stress test. Writer threads update
 * spans and labels (set, replace, remove, clear, scoped sets) in tight loops while a
 * per-thread 10 kHz timer signal (timer_create + SIGEV_THREAD_ID) interrupts them. The
 * handler reads the raw ABI memory exactly like an outside reader (tests/libctx_reader.h)
 * and checks every visible key against what the writer had committed or was writing:
 *  - a value encodes (thread, version) in its first 16 bytes and derives its length and
 *    every other byte from them, and consecutive versions differ in every byte and in
 *    length, so any mix of old and new bytes or a stale length is detected;
 *  - the version must be the key's committed one or the one being written (old or new);
 *  - a valid span must satisfy root = mix(span) and be the committed or started one;
 *    the span mirrors likewise; scoped-only keys only while in the scope.
 * Every 4th interrupt the handler also writes (sets and removes its own key): it must get 0,
 * or -EBUSY exactly when it interrupted a libctx call, and leave nothing behind.
 * Runs in the normal and ASan variants (TSan and signal-handler readers do not mix: the
 * multi-thread test is tsan_libctx_isolation.c). Prints interrupt counts; asserts zero
 * inconsistencies and zero wrong spans.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "libctx_reader.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define NTHREADS  3
#define NKEYS     5              /* + 1 scoped key + 2 mirrors <= 10 */
#define MIN_MS    2000           /* run at least this long, */
#define MAX_MS    10000          /* at most this long, */
#define WANT_IRQS 20000          /* and stop early once this many interrupts landed */
static unsigned long total_irqs; /* all threads (lock-free atomic: fine in a handler) */
#define TIMER_NSEC 100000        /* 10 kHz */

struct counters {
        unsigned long interrupts, in_call, hidden_seen, torn_span, no_span;
        unsigned long valid_span, labels_checked, inconsistent, wrong_span;
        unsigned long handler_writes, handler_ebusy;
};

/* Writer-published state the handler compares with (same thread: volatile suffices). */
static __thread volatile uint64_t committed_v[NKEYS], started_v[NKEYS];
static __thread volatile uint64_t committed_seq, started_seq;
static __thread volatile int in_call, in_scope, tid_idx;
static __thread struct counters c;
static __thread int first_bad_line;
#define BAD() (c.inconsistent++, first_bad_line = first_bad_line ? first_bad_line : __LINE__)

static uint64_t span_of(int t, uint64_t seq)
{
        return seq ? ((uint64_t)t << 48) | seq : 0;
}
static uint64_t mix(uint64_t s)
{
        s ^= s >> 31;
        s *= 0xBF58476D1CE4E5B9ULL;
        return s ^ (s >> 29) ^ 0x5555;
}

/* value of (t, key k, version v): 16 hex digits (t:4, v:12), then body bytes */
static size_t value_len(int k, uint64_t v)
{
        return 16 + (size_t)((v * 37 + (uint64_t)k * 11) % 230);
}
static unsigned char body_byte(int t, int k, uint64_t v, size_t i)
{
        return (unsigned char)('a' + (v * 7 + i + (uint64_t)k + 3u * (uint64_t)t) % 26);
}
static void make_value(int t, int k, uint64_t v, char *out, size_t *len)
{
        static const char hx[] = "0123456789abcdef";
        uint64_t code = ((uint64_t)t << 48) | v;
        for (int i = 0; i < 16; i++)
                out[i] = hx[(code >> (60 - 4 * i)) & 15];
        *len = value_len(k, v);
        for (size_t i = 16; i < *len; i++)
                out[i] = (char)body_byte(t, k, v, i);
}
static int parse_hex(const unsigned char *p, uint64_t *out)
{
        uint64_t x = 0;
        for (int i = 0; i < 16; i++) {
                int d = p[i] >= '0' && p[i] <= '9'   ? p[i] - '0'
                        : p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10
                                                     : -1;
                if (d < 0)
                        return -1;
                x = x << 4 | (uint64_t)d;
        }
        *out = x;
        return 0;
}
static int parse_dec(const unsigned char *p, size_t n, uint64_t *out)
{
        uint64_t x = 0;
        if (n == 0 || n > 20)
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -1;
                x = x * 10 + (p[i] - '0');
        }
        *out = x;
        return 0;
}

static int check_value(int t, int k, const struct rd_label *l)
{
        uint64_t code, v;
        if (l->vlen < 16 || parse_hex(l->val, &code) || (int)(code >> 48) != t)
                return 0;
        v = code & 0xFFFFFFFFFFFFULL;
        if (l->vlen != value_len(k, v))
                return 0;
        for (size_t i = 16; i < l->vlen; i++)
                if (l->val[i] != body_byte(t, k, v, i))
                        return 0;
        return v != 0 && (v == committed_v[k] || v == started_v[k]); /* old or new */
}

static int seq_ok(uint64_t span, int t)
{
        uint64_t seq = span & 0xFFFFFFFFFFFFULL;
        return span == span_of(t, seq) && seq != 0 && (seq == committed_seq || seq == started_seq);
}

static void on_tick(int sig)
{
        (void)sig;
        int t = tid_idx;
        c.interrupts++;
        __atomic_fetch_add(&total_irqs, 1, __ATOMIC_RELAXED);
        if (in_call)
                c.in_call++;
        uint64_t span, root;
        int r = rd_read_span(&ctx_span_context_v1, &span, &root);
        if (r < 0) {
                c.torn_span++;
        } else if (r == 0) {
                c.no_span++;
        } else {
                c.valid_span++;
                if (root != mix(span) || !seq_ok(span, t))
                        c.wrong_span++;
        }
        struct rd_set s;
        rd_read_set(custom_labels_current_set, &s);
        c.hidden_seen += s.hidden != 0;
        if (s.structural || s.duplicates)
                BAD();
        for (int i = 0; i < s.n; i++) {
                const struct rd_label *l = &s.l[i];
                c.labels_checked++;
                uint64_t x;
                if (l->klen == 7 && rd_bytes_eq(l->key, (const unsigned char *)"span-id", 7)) {
                        if (parse_dec(l->val, l->vlen, &x) || !seq_ok(x, t))
                                BAD();
                        continue;
                }
                if (l->klen == 12 &&
                    rd_bytes_eq(l->key, (const unsigned char *)"root-span-id", 12)) {
                        if (parse_dec(l->val, l->vlen, &x) ||
                            (x != mix(span_of(t, committed_seq)) &&
                             x != mix(span_of(t, started_seq))))
                                BAD();
                        continue;
                }
                /* keys: "tNN.kK" (regular) or "tNN.s0" (scoped only) */
                if (l->klen != 6 || l->key[0] != 't' || l->key[1] - '0' != t / 10 ||
                    l->key[2] - '0' != t % 10 || l->key[3] != '.') {
                        BAD();
                        continue;
                }
                if (l->key[4] == 'h') { /* the handler's own key: never left behind */
                        BAD();
                        continue;
                }
                if (l->key[4] == 's') {
                        if (!in_scope || l->vlen != 6 ||
                            !rd_bytes_eq(l->val, (const unsigned char *)"scoped", 6))
                                BAD();
                        continue;
                }
                int k = l->key[5] - '0';
                if (l->key[4] != 'k' || k < 0 || k >= NKEYS || !check_value(t, k, l))
                        BAD();
        }
        if (c.interrupts % 4 == 0) { /* a write from the handler (async-signal-safe API) */
                char hk[6] = {'t', (char)('0' + t / 10), (char)('0' + t % 10), '.', 'h', '0'};
                int rc = ctx_set_label(hk, 6, "h", 1);
                c.handler_writes++;
                if (rc == -EBUSY) {
                        c.handler_ebusy++;
                        if (!in_call)
                                BAD();
                } else if (rc != 0 || ctx_remove_label(hk, 6) != 0) {
                        BAD();
                }
        }
}

struct worker {
        int idx;
        volatile int *stop;
        struct counters out;
        unsigned long ops;
        int errors;
};

#define CALL(expr)                                                                                 \
        do {                                                                                       \
                in_call++;                                                                         \
                __atomic_signal_fence(__ATOMIC_SEQ_CST);                                           \
                int rc_ = (expr);                                                                  \
                __atomic_signal_fence(__ATOMIC_SEQ_CST);                                           \
                in_call--;                                                                         \
                if (rc_ < 0)                                                                       \
                        w->errors++;                                                               \
        } while (0)

static void set_span_seq(struct worker *w, uint64_t seq)
{
        started_seq = seq;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        uint64_t sp = span_of(w->idx, seq);
        if (seq)
                CALL(ctx_set_span(sp, mix(sp)));
        else
                CALL(ctx_clear_span());
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        committed_seq = seq;
}

struct scope_arg {
        struct worker *w;
        uint64_t *seq;
};

static void in_scope_fn(void *p)
{
        struct scope_arg *a = p;
        for (int i = 0; i < 20; i++)
                set_span_seq(a->w, ++*a->seq);
}

static void *worker_main(void *p)
{
        struct worker *w = p;
        tid_idx = w->idx;
        char key[8] = {'t', (char)('0' + w->idx / 10), (char)('0' + w->idx % 10), '.', 'k', '0', 0};
        char scoped_key[8] = {'t', key[1], key[2], '.', 's', '0', 0};
        char val[256];
        uint64_t version = 0, seq = 0, rnd = 0x9E3779B97F4A7C15ULL * (uint64_t)(w->idx + 1);

        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGPROF;
        sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
        timer_t timer;
        if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
                w->errors = 1000000;
                return NULL;
        }
        struct itimerspec its = {{0, TIMER_NSEC}, {0, TIMER_NSEC}};
        timer_settime(timer, 0, &its, NULL);

        while (!*w->stop) {
                rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
                unsigned op = (unsigned)(rnd % 100);
                int k = (int)((rnd >> 8) % NKEYS);
                key[5] = (char)('0' + k);
                if (op < 45) { /* set or replace */
                        size_t len;
                        uint64_t v = ++version;
                        make_value(w->idx, k, v, val, &len);
                        started_v[k] = v;
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        CALL(ctx_set_label(key, 6, val, len));
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        committed_v[k] = v;
                } else if (op < 55) { /* remove */
                        started_v[k] = 0;
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        CALL(ctx_remove_label(key, 6));
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        committed_v[k] = 0;
                } else if (op < 57) { /* clear */
                        for (int i = 0; i < NKEYS; i++)
                                started_v[i] = 0;
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        CALL(ctx_clear_labels());
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        for (int i = 0; i < NKEYS; i++)
                                committed_v[i] = 0;
                } else if (op < 90) {
                        set_span_seq(w, op == 89 ? 0 : ++seq);
                } else if (op < 95) {
                        CALL(ctx_set_tag((unsigned)k, (uint32_t)rnd));
                } else {
                        ctx_label_kv kv[] = {{scoped_key, "scoped"}};
                        struct scope_arg a = {w, &seq};
                        in_scope = 1;
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        CALL(ctx_with_labels(kv, 1, in_scope_fn, &a));
                        __atomic_signal_fence(__ATOMIC_SEQ_CST);
                        in_scope = 0;
                }
                w->ops++;
        }
        timer_delete(timer);
        w->out = c;
        if (first_bad_line)
                fprintf(stderr, "thread %d: first inconsistency at line %d\n", w->idx,
                        first_bad_line);
        return NULL;
}

Test(libctx_stress, interrupted_reader_sees_old_or_new, .timeout = 120)
{
        struct sigaction sa = {0};
        sa.sa_handler = on_tick;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        cr_assert_eq(sigaction(SIGPROF, &sa, NULL), 0);

        volatile int stop = 0;
        struct worker w[NTHREADS];
        pthread_t th[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) {
                w[i] = (struct worker){.idx = i + 1, .stop = &stop};
                cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
        }
        for (int ms = 0; ms < MAX_MS; ms += 50) {
                if (ms >= MIN_MS && __atomic_load_n(&total_irqs, __ATOMIC_RELAXED) >= WANT_IRQS)
                        break;
                usleep(50000);
        }
        stop = 1;
        struct counters tot = {0};
        unsigned long ops = 0;
        int errors = 0;
        for (int i = 0; i < NTHREADS; i++) {
                pthread_join(th[i], NULL);
                struct counters *x = &w[i].out;
                tot.interrupts += x->interrupts, tot.in_call += x->in_call;
                tot.hidden_seen += x->hidden_seen, tot.torn_span += x->torn_span;
                tot.no_span += x->no_span, tot.valid_span += x->valid_span;
                tot.labels_checked += x->labels_checked, tot.inconsistent += x->inconsistent;
                tot.wrong_span += x->wrong_span;
                tot.handler_writes += x->handler_writes, tot.handler_ebusy += x->handler_ebusy;
                ops += w[i].ops;
                errors += w[i].errors;
        }
        signal(SIGPROF, SIG_IGN);
        fprintf(stderr,
                "libctx stress: %d threads, %lu ops, %lu interrupts, %lu inside a libctx call, "
                "%lu saw a hidden key, %lu torn spans, %lu no-span, %lu valid spans, "
                "%lu labels checked, %lu handler writes (%lu -EBUSY), %lu inconsistencies, "
                "%lu wrong spans\n",
                NTHREADS, ops, tot.interrupts, tot.in_call, tot.hidden_seen, tot.torn_span,
                tot.no_span, tot.valid_span, tot.labels_checked, tot.handler_writes,
                tot.handler_ebusy, tot.inconsistent, tot.wrong_span);
        cr_assert_eq(errors, 0, "libctx calls failed in the writers");
        cr_assert_gt(tot.interrupts, 300, "too few interrupts to mean anything");
        cr_assert_gt(tot.labels_checked, 0);
        cr_assert_eq(tot.inconsistent, 0, "%lu inconsistent reads", tot.inconsistent);
        cr_assert_eq(tot.wrong_span, 0, "%lu wrong spans", tot.wrong_span);
}
