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
 *
 * The second test covers nested span writes: the thread only sets and clears spans while the
 * timer handler itself calls ctx_set_span (its own ids) or ctx_clear_span. After every call
 * returns, the thread checks that its record validates and holds its own ids, or those of a
 * handler that ran during the call (with mirroring on, that the mirrors show the same span).
 * When a tick lands inside a record write, the handler also sets the x86-64 trap flag in the
 * interrupted context, so the rest of the interrupted call runs one instruction at a time
 * with a reader after each (SIGTRAP). That makes the mixed records a nested write leaves for
 * a few instructions visible to a reader (torn), and checks that none is ever a wrong span.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
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

/* SIGPROF to this thread every nsec */
static int start_timer(timer_t *timer, long nsec)
{
        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGPROF;
        sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
        if (timer_create(CLOCK_MONOTONIC, &sev, timer) != 0)
                return -1;
        struct itimerspec its = {{0, nsec}, {0, nsec}};
        return timer_settime(*timer, 0, &its, NULL);
}

static void *worker_main(void *p)
{
        struct worker *w = p;
        tid_idx = w->idx;
        char key[8] = {'t', (char)('0' + w->idx / 10), (char)('0' + w->idx % 10), '.', 'k', '0', 0};
        char scoped_key[8] = {'t', key[1], key[2], '.', 's', '0', 0};
        char val[256];
        uint64_t version = 0, seq = 0, rnd = 0x9E3779B97F4A7C15ULL * (uint64_t)(w->idx + 1);

        timer_t timer;
        if (start_timer(&timer, TIMER_NSEC) != 0) {
                w->errors = 1000000;
                return NULL;
        }

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

/* --- nested span writes: the handler sets spans too --- */

#define NEST_THREADS    2
#define NEST_TIMER_NSEC 50000 /* 20 kHz */
#define NEST_MIN_MS     300   /* mirroring off: run at least this long, */
#define NEST_MAX_MS     20000 /* at most this long (a loaded host: few ticks land), */
#define NEST_WANT_MID   40    /* and stop once this many ticks landed inside a record write */
#define NEST_MIRROR_MS  400   /* mirroring on (the call is mostly mirror writes): this long */
#define STEP_BUDGET     64    /* instructions single-stepped after such a tick */
#define X86_TF          0x100

struct nest_counters {
        unsigned long interrupts, in_call, mid_record, stepped, steps;
        unsigned long torn, no_span, valid, wrong_span; /* reads: at ticks and at steps */
        unsigned long handler_sets, handler_clears, handler_errors;
        unsigned long calls, handler_won, bad_record, bad_mirror;
};
static __thread struct nest_counters nc;
static __thread volatile uint64_t o_started, o_committed; /* the thread's span, 0 = clear */
static __thread volatile int o_in_call;
static __thread volatile uint64_t h_last; /* the handler's last write: its span, 0 = clear */
static __thread volatile unsigned long h_writes;
static __thread uint64_t h_seq;
static __thread volatile int step_left;
static __thread uint64_t bad_s, bad_r, bad_c, bad_want;
static unsigned long nest_mid_total; /* all threads, this mode */

static uint64_t handler_span(int t, uint64_t n)
{
        return 0xFE00000000000000ULL | ((uint64_t)t << 48) | n; /* never a span_of() */
}

static void nest_read(void)
{
        uint64_t span, root;
        int r = rd_read_span(&ctx_span_context_v1, &span, &root);
        if (r < 0) {
                nc.torn++;
        } else if (r == 0) {
                nc.no_span++;
        } else {
                nc.valid++;
                if (span == 0 || root != mix(span) ||
                    (span != o_started && span != o_committed && span != h_last))
                        nc.wrong_span++;
        }
}

static void on_nested_tick(int sig, siginfo_t *si, void *ucv)
{
        (void)sig, (void)si;
        int t = tid_idx;
        nc.interrupts++;
        if (step_left > 0) { /* single-stepping a call: read only, one nested write per call */
                nest_read();
                return;
        }
        int landed = o_in_call;
        nc.in_call += landed != 0;
        /* inside the outer record write: its checksum is 0 and one of its ids is stored */
        const volatile struct ctx_span_context *rec = &ctx_span_context_v1;
        uint64_t a = o_started;
        int mid =
            landed && a && rec->checksum == 0 && (rec->span_id == a || rec->root_span_id == mix(a));
        if (mid) {
                nc.mid_record++;
                __atomic_fetch_add(&nest_mid_total, 1, __ATOMIC_RELAXED);
        }
        nest_read();

        int rc;
        uint64_t n = ++h_seq;
        if (n % 4 == 0) {
                h_last = 0;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                rc = ctx_clear_span();
                nc.handler_clears++;
        } else {
                uint64_t hs = handler_span(t, n);
                h_last = hs;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                rc = ctx_set_span(hs, mix(hs));
                nc.handler_sets++;
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        h_writes++;
        if (rc != 0)
                nc.handler_errors++;

#ifdef __x86_64__
        /* watch the interrupted call finish one instruction at a time (every landing inside
         * a record write, and every 8th other landing inside a call) */
        if (landed && (mid || nc.in_call % 8 == 0)) {
                ucontext_t *uc = ucv;
                uc->uc_mcontext.gregs[REG_EFL] |= X86_TF;
                step_left = STEP_BUDGET;
                nc.stepped++;
        }
#else
        (void)ucv;
#endif
}

#ifdef __x86_64__
static void on_step(int sig, siginfo_t *si, void *ucv)
{
        (void)sig, (void)si;
        nc.steps++;
        nest_read();
        if (--step_left <= 0 || !o_in_call) {
                ucontext_t *uc = ucv;
                uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)X86_TF;
                step_left = 0;
        }
}
#endif

/* The record (and, with mirroring on, the mirrors) right after a call that wrote span sp
 * (0: a clear) returned: sp's, or that of a handler that ran during the call. */
static void check_after(uint64_t sp, unsigned long writes_before, int mirrors)
{
        const volatile struct ctx_span_context *r = &ctx_span_context_v1;
        uint64_t s, rt, ck, h, xs = 0, xr = 0;
        int has_s, has_r, bad_dec;
        unsigned long w0;
        do { /* a snapshot no handler wrote into (every handler run bumps h_writes); the
              * label bytes are parsed inside it too, since a handler may rewrite them */
                w0 = h_writes;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                s = r->span_id, rt = r->root_span_id, ck = r->checksum;
                h = h_last;
                struct rd_set set;
                rd_read_set(custom_labels_current_set, &set);
                const struct rd_label *ms = rd_find(&set, CTX_SPAN_ID_KEY);
                const struct rd_label *mr = rd_find(&set, CTX_ROOT_SPAN_ID_KEY);
                has_s = ms != NULL, has_r = mr != NULL;
                bad_dec = (ms && parse_dec(ms->val, ms->vlen, &xs)) ||
                          (mr && parse_dec(mr->val, mr->vlen, &xr));
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
        } while (h_writes != w0);
        int valid = ck != 0 && ck == ctx_span_checksum(s, rt);
        int zero = s == 0 && rt == 0 && ck == 0;
        int own = sp ? valid && s == sp && rt == mix(sp) : zero;
        int theirs = w0 != writes_before && (h ? valid && s == h && rt == mix(h) : zero);
        nc.calls++;
        if (!own && theirs)
                nc.handler_won++;
        if (!own && !theirs && nc.bad_record++ == 0)
                bad_s = s, bad_r = rt, bad_c = ck, bad_want = sp;
        if (mirrors && valid)
                nc.bad_mirror += !has_s || !has_r || bad_dec || xs != s || xr != rt;
        else
                nc.bad_mirror += has_s || has_r;
}

struct nworker {
        int idx, mirrors;
        volatile int *stop;
        struct nest_counters out;
        int errors;
        uint64_t bad_s, bad_r, bad_c, bad_want;
};

static void *nested_worker(void *p)
{
        struct nworker *w = p;
        tid_idx = w->idx;
        if (ctx_thread_init() != 0)
                w->errors++;
        timer_t timer;
        if (start_timer(&timer, NEST_TIMER_NSEC) != 0) {
                w->errors = 1000000;
                return NULL;
        }
        uint64_t seq = 0, rnd = 0x9E3779B97F4A7C15ULL * (uint64_t)(w->idx + 7);
        while (!*w->stop) {
                rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
                uint64_t sp = rnd % 8 == 0 ? 0 : span_of(w->idx, ++seq);
                unsigned long before = h_writes;
                o_started = sp;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                o_in_call = 1;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                int rc = sp ? ctx_set_span(sp, mix(sp)) : ctx_clear_span();
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                o_in_call = 0;
                __atomic_signal_fence(__ATOMIC_SEQ_CST);
                if (rc != 0)
                        w->errors++;
                check_after(sp, before, w->mirrors);
                o_committed = sp;
        }
        timer_delete(timer);
        w->out = nc;
        w->bad_s = bad_s, w->bad_r = bad_r, w->bad_c = bad_c, w->bad_want = bad_want;
        return NULL;
}

static void nested_phase(int mirrors, int min_ms, int max_ms)
{
        ctx_set_span_mirroring(mirrors);
        __atomic_store_n(&nest_mid_total, 0, __ATOMIC_RELAXED);
        volatile int stop = 0;
        struct nworker w[NEST_THREADS];
        pthread_t th[NEST_THREADS];
        for (int i = 0; i < NEST_THREADS; i++) {
                w[i] = (struct nworker){.idx = i + 1, .mirrors = mirrors, .stop = &stop};
                cr_assert_eq(pthread_create(&th[i], NULL, nested_worker, &w[i]), 0);
        }
        int ms = 0;
        for (; ms < max_ms; ms += 20) {
                if (ms >= min_ms &&
                    __atomic_load_n(&nest_mid_total, __ATOMIC_RELAXED) >= NEST_WANT_MID)
                        break;
                usleep(20000);
        }
        stop = 1;
        struct nest_counters t = {0};
        int errors = 0;
        for (int i = 0; i < NEST_THREADS; i++) {
                pthread_join(th[i], NULL);
                struct nest_counters *x = &w[i].out;
                t.interrupts += x->interrupts, t.in_call += x->in_call;
                t.mid_record += x->mid_record, t.stepped += x->stepped, t.steps += x->steps;
                t.torn += x->torn, t.no_span += x->no_span, t.valid += x->valid;
                t.wrong_span += x->wrong_span, t.handler_sets += x->handler_sets;
                t.handler_clears += x->handler_clears, t.handler_errors += x->handler_errors;
                t.calls += x->calls, t.handler_won += x->handler_won;
                t.bad_record += x->bad_record, t.bad_mirror += x->bad_mirror;
                errors += w[i].errors;
                if (x->bad_record)
                        fprintf(stderr,
                                "thread %d: first bad record after a call that wrote %#llx: "
                                "{%#llx, %#llx, checksum %#llx}\n",
                                w[i].idx, (unsigned long long)w[i].bad_want,
                                (unsigned long long)w[i].bad_s, (unsigned long long)w[i].bad_r,
                                (unsigned long long)w[i].bad_c);
        }
        fprintf(stderr,
                "libctx nested spans (mirroring %s, %d ms): %lu calls, %lu interrupts, "
                "%lu inside a set/clear-span call, %lu inside its record write; handler: %lu "
                "sets, %lu clears, won %lu calls; %lu single-stepped calls, %lu steps; reads: "
                "%lu torn, %lu no-span, %lu valid, %lu wrong spans; %lu bad records after "
                "return, %lu bad mirrors\n",
                mirrors ? "on" : "off", ms, t.calls, t.interrupts, t.in_call, t.mid_record,
                t.handler_sets, t.handler_clears, t.handler_won, t.stepped, t.steps, t.torn,
                t.no_span, t.valid, t.wrong_span, t.bad_record, t.bad_mirror);
        cr_assert_eq(errors, 0, "libctx calls failed in the writers");
        cr_assert_eq(t.handler_errors, 0, "libctx calls failed in the handler");
        cr_assert_gt(t.in_call, 0, "no tick landed inside a set/clear-span call");
        cr_assert_eq(t.bad_record, 0, "%lu records invalid or foreign after the call returned",
                     t.bad_record);
        cr_assert_eq(t.bad_mirror, 0, "%lu times the mirrors did not match the record",
                     t.bad_mirror);
        cr_assert_eq(t.wrong_span, 0, "%lu wrong spans", t.wrong_span);
        if (mirrors)
                return;
        cr_assert_gt(t.mid_record, 0, "no tick landed inside a span record write");
#ifdef __x86_64__
        /* a tick inside a record write is followed by a mixed record for the next few
         * instructions, and the stepping reader sees it */
        cr_assert_gt(t.torn, 0, "the stepping reader never saw a torn record");
#endif
}

Test(libctx_stress, handler_sets_span_inside_set_span, .timeout = 60)
{
        struct sigaction sa = {0};
        sa.sa_sigaction = on_nested_tick;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGTRAP);
        cr_assert_eq(sigaction(SIGPROF, &sa, NULL), 0);
#ifdef __x86_64__
        sa.sa_sigaction = on_step;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGPROF);
        cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
#endif
        nested_phase(0, NEST_MIN_MS, NEST_MAX_MS);
        nested_phase(1, NEST_MIRROR_MS, NEST_MIRROR_MS);
        signal(SIGPROF, SIG_IGN);
        ctx_set_span_mirroring(1);
}
