/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/tsan_libctx_singlestep.c — a reader interrupting a libctx write at *every*
 * instruction: a forked child runs each write path once (add, replace same/other length,
 * set-attr, a key registered by its first set, remove, add into the hole, clear, set-span with
 * mirrors, set-trace, clear-span, and with mirroring off the library set-span (hiding the
 * mirrors, then the span-record-only fast path) and the inline set-span / clear-span of
 * <ctx/ctx_inline.h>) while the parent single-steps it with ptrace and, at every
 * stop, reads all three ABIs out of the child (process_vm_readv, the way an out-of-process reader
 * does: follow the set pointer, respect count and len, skip NULL keys, first duplicate wins;
 * checksum; OTel valid flag). Each view must be the state before or after the write in progress,
 * never a mix: per label key the old or new value (absent only during that key's own update); a
 * valid span record holding the old or new ids; a valid OTel record equal, as a whole, to the old
 * or new one. The child is a fork of this thread, so its TLS and pool addresses are this thread's.
 * A tsan_ test: it runs in all three builds (plain, ASan/UBSan, TSan), the sanitizers' own
 * instrumentation stepped through too. So a plain program (own main, exit 0 = pass, 77 =
 * skipped), not Criterion, whose runner aborts under TSan (tests/plain_check.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "ctx/ctx_inline.h"
#include "plain_check.h"

/* CHECK with the condition in the message, and the comparisons this test makes */
#define ASSERT(c, ...)        CHECK(c, "(" #c ") " __VA_ARGS__)
#define ASSERT_EQ(a, b, ...)  ASSERT((a) == (b), __VA_ARGS__)
#define ASSERT_NEQ(a, b, ...) ASSERT((a) != (b), __VA_ARGS__)
#define ASSERT_LT(a, b, ...)  ASSERT((a) < (b), __VA_ARGS__)
#define ASSERT_LEQ(a, b, ...) ASSERT((a) <= (b), __VA_ARGS__)
#define ASSERT_GT(a, b, ...)  ASSERT((a) > (b), __VA_ARGS__)
#define ASSERT_GEQ(a, b, ...) ASSERT((a) >= (b), __VA_ARGS__)

extern __thread custom_labels_labelset_t *custom_labels_current_set;
extern __thread struct ctx_span_context ctx_span_context_v1;
extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

#define SS_MAX_LABELS 16
#define SS_MAX_STEPS  2000000 /* a runaway guard, far above the few thousand needed */

/* ---- the model: what a reader must see between writes ---- */
struct ss_label {
        char key[CTX_MAX_KEY_LEN + 1];
        char val[CTX_MAX_VALUE_LEN + 1];
};
struct ss_state {
        int nl;
        struct ss_label l[SS_MAX_LABELS];
        int span_valid;
        uint64_t span, root;
        uint8_t trace_id[16], span_be[8], flags;
        int nattrs;
        struct {
                unsigned k;
                char val[256];
        } attrs[SS_MAX_LABELS];
};

enum ss_op {
        OP_LABEL,
        OP_ATTR,
        OP_REMOVE,
        OP_CLEAR_LABELS,
        OP_SPAN,
        OP_TRACE,
        OP_CLEAR_SPAN,
        OP_SPAN_NOMIRROR, /* ctx_set_span, mirroring off (the child switches it off) */
        OP_INLINE_SPAN,   /* ctx_inline_set_span, mirroring off */
        OP_INLINE_CLEAR,
};
struct ss_write {
        enum ss_op op;
        const char *key, *val;
        uint64_t span, root;
};

/* the first three are registered before the fork; the child registers "late.key" inside its
 * set (lock, republish of the process context), as the fourth key: index 3 */
#define SS_KEYS 4
static const char *const KEYS[SS_KEYS] = {"http.route", "tenant", "a.key.longer.than.16",
                                          "late.key"};
static int key_index[SS_KEYS] = {-1, -1, -1, 3};
static const uint8_t TRACE[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                  0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};

/* every write path once: add (append), replace (same length, other length), add a second
 * key, set-attr, spans with mirrors, trace, span without trace, remove (makes a hole), add
 * into the hole, clear-span, clear-labels */
static const struct ss_write WRITES[] = {
    {OP_LABEL, "http.route", "/orders/{id}", 0, 0},
    {OP_LABEL, "http.route", "/orders/{ID}", 0, 0},
    {OP_LABEL, "http.route", "/api/v1/customers/{customer}/orders", 0, 0},
    {OP_LABEL, "tenant", "acme", 0, 0},
    {OP_ATTR, "http.route", "/x", 0, 0},
    {OP_SPAN, NULL, NULL, 12345678901234567ull, 42},
    {OP_TRACE, NULL, NULL, 0x1122334455667788ull, 99},
    {OP_SPAN, NULL, NULL, 7, 42},
    {OP_LABEL, "a.key.longer.than.16", "v", 0, 0},
    {OP_LABEL, "late.key", "first set registers the key", 0, 0},
    {OP_REMOVE, "http.route", NULL, 0, 0},
    {OP_LABEL, "http.route", "back", 0, 0},
    {OP_CLEAR_SPAN, NULL, NULL, 0, 0},
    {OP_CLEAR_LABELS, NULL, NULL, 0, 0},
    {OP_SPAN, NULL, NULL, 99, 42},                  /* mirrors shown... */
    {OP_SPAN_NOMIRROR, NULL, NULL, 1234567890, 42}, /* ...hidden by the first span without */
    {OP_SPAN_NOMIRROR, NULL, NULL, 5678, 43},       /* the record-only fast path */
    {OP_INLINE_SPAN, NULL, NULL, 18446744073709551557ull, 77},
    {OP_INLINE_SPAN, NULL, NULL, 5, 77},
    {OP_INLINE_CLEAR, NULL, NULL, 0, 0},
};
#define NWRITES (sizeof(WRITES) / sizeof(WRITES[0]))

/*
 * The first set of a new key republishes the OTEP 4719 process context, stamped with
 * clock_gettime(CLOCK_BOOTTIME). Through the vDSO that is a seqlock retry loop: stepped at tens
 * of microseconds an instruction (a loaded VM), it never finishes before the next timer tick
 * moves the sequence, and the child spins there (CI: over 2,000,000 steps in one write). This
 * test is about libctx's stores, not the clock: this executable's clock_gettime, which the
 * libctx objects linked into it call, reads the clock with the syscall, one step.
 */
int clock_gettime(clockid_t id, struct timespec *ts)
{
        return (int)syscall(SYS_clock_gettime, id, ts);
}

static volatile int ss_phase; /* the child: index + 1 of the write in progress */

static int kidx_of(const char *key)
{
        for (int i = 0; i < SS_KEYS; i++)
                if (!strcmp(KEYS[i], key))
                        return key_index[i];
        return -1;
}

static void model_set(struct ss_state *s, const char *key, const char *val)
{
        int i = 0;
        while (i < s->nl && strcmp(s->l[i].key, key))
                i++;
        if (i == s->nl)
                snprintf(s->l[s->nl++].key, sizeof(s->l[0].key), "%s", key);
        snprintf(s->l[i].val, sizeof(s->l[i].val), "%s", val);
}

static void model_del(struct ss_state *s, const char *key)
{
        for (int i = 0; i < s->nl; i++)
                if (!strcmp(s->l[i].key, key))
                        s->l[i] = s->l[--s->nl];
}

static void model_attr(struct ss_state *s, unsigned k, const char *val)
{
        int i = 0;
        while (i < s->nattrs && s->attrs[i].k != k)
                i++;
        if (i == s->nattrs)
                s->attrs[s->nattrs++].k = k;
        snprintf(s->attrs[i].val, sizeof(s->attrs[i].val), "%s", val);
}

static void model_attr_del(struct ss_state *s, unsigned k)
{
        for (int i = 0; i < s->nattrs; i++)
                if (s->attrs[i].k == k)
                        s->attrs[i] = s->attrs[--s->nattrs];
}

static void model_span(struct ss_state *s, int valid, uint64_t span, uint64_t root)
{
        s->span_valid = valid;
        s->span = valid ? span : 0;
        s->root = valid ? root : 0;
        model_del(s, CTX_SPAN_ID_KEY);
        model_del(s, CTX_ROOT_SPAN_ID_KEY);
        if (!valid)
                return;
        char d[24];
        snprintf(d, sizeof(d), "%" PRIu64, span);
        model_set(s, CTX_SPAN_ID_KEY, d);
        snprintf(d, sizeof(d), "%" PRIu64, root);
        model_set(s, CTX_ROOT_SPAN_ID_KEY, d);
}

static void model_apply(struct ss_state *s, const struct ss_write *w)
{
        switch (w->op) {
        case OP_LABEL:
        case OP_ATTR:
                model_set(s, w->key, w->val);
                model_attr(s, (unsigned)kidx_of(w->key), w->val);
                break;
        case OP_REMOVE:
                model_del(s, w->key);
                model_attr_del(s, (unsigned)kidx_of(w->key));
                break;
        case OP_CLEAR_LABELS:
                for (int i = 0; i < SS_KEYS; i++)
                        model_del(s, KEYS[i]);
                s->nattrs = 0;
                break;
        case OP_SPAN:
        case OP_CLEAR_SPAN:
                model_span(s, w->op == OP_SPAN, w->span, w->root);
                memset(s->trace_id, 0, 16);
                memset(s->span_be, 0, 8);
                s->flags = 0;
                break;
        case OP_SPAN_NOMIRROR: /* mirroring off: the record, mirrors hidden, no trace */
                model_span(s, 1, w->span, w->root);
                model_del(s, CTX_SPAN_ID_KEY);
                model_del(s, CTX_ROOT_SPAN_ID_KEY);
                memset(s->trace_id, 0, 16);
                memset(s->span_be, 0, 8);
                s->flags = 0;
                break;
        case OP_INLINE_SPAN: /* mirroring off: the record only, no mirror labels */
        case OP_INLINE_CLEAR:
                s->span_valid = w->op == OP_INLINE_SPAN;
                s->span = s->span_valid ? w->span : 0;
                s->root = s->span_valid ? w->root : 0;
                break;
        case OP_TRACE: {
                model_span(s, 1, w->span, w->root);
                memcpy(s->trace_id, TRACE, 16);
                uint64_t be = __builtin_bswap64(w->span);
                memcpy(s->span_be, &be, 8);
                s->flags = 1;
                break;
        }
        }
}

/* ---- the child: each write once, ss_phase naming the one in progress ---- */
static void child_run(void)
{
        for (size_t i = 0; i < NWRITES; i++) {
                const struct ss_write *w = &WRITES[i];
                if (w->op == OP_SPAN_NOMIRROR || w->op == OP_INLINE_SPAN ||
                    w->op == OP_INLINE_CLEAR)
                        ctx_set_span_mirroring(0); /* a switch, not a write: between phases */
                ss_phase = (int)i + 1;
                switch (w->op) {
                case OP_LABEL:
                        ctx_set_label(w->key, strlen(w->key), w->val, strlen(w->val));
                        break;
                case OP_ATTR:
                        ctx_set_attr(kidx_of(w->key), w->val, strlen(w->val));
                        break;
                case OP_REMOVE:
                        ctx_remove_label(w->key, strlen(w->key));
                        break;
                case OP_CLEAR_LABELS:
                        ctx_clear_labels();
                        break;
                case OP_SPAN:
                case OP_SPAN_NOMIRROR:
                        ctx_set_span(w->span, w->root);
                        break;
                case OP_TRACE:
                        ctx_set_trace(TRACE, w->span, w->root, 1);
                        break;
                case OP_CLEAR_SPAN:
                        ctx_clear_span();
                        break;
                case OP_INLINE_SPAN:
                        ctx_inline_set_span(w->span, w->root);
                        break;
                case OP_INLINE_CLEAR:
                        ctx_inline_clear_span();
                        break;
                }
        }
        ss_phase = (int)NWRITES + 1;
}

/* ---- the reader (parent): the child's memory at the same addresses ---- */
static pid_t child;

static int rd(uint64_t addr, void *buf, size_t n)
{
        struct iovec l = {buf, n}, r = {(void *)(uintptr_t)addr, n};
        return process_vm_readv(child, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

struct ss_view {
        int nl, hidden;
        struct ss_label l[SS_MAX_LABELS];
        int span_state; /* 0 none, 1 valid, -1 torn */
        uint64_t span, root;
        int otel_valid;
        struct otel_thread_ctx_record rec;
};

static void read_view(struct ss_view *v)
{
        memset(v, 0, sizeof(*v));
        uint64_t setp = 0;
        ASSERT_EQ(rd((uint64_t)(uintptr_t)&custom_labels_current_set, &setp, 8), 0);
        if (setp) {
                custom_labels_labelset_t set;
                ASSERT_EQ(rd(setp, &set, sizeof(set)), 0);
                ASSERT_LEQ(set.count, CTX_MAX_LABELS, "count %zu", set.count);
                custom_labels_label_t ls[CTX_MAX_LABELS];
                ASSERT_EQ(rd((uint64_t)(uintptr_t)set.storage, ls, set.count * sizeof(ls[0])), 0);
                for (size_t i = 0; i < set.count; i++) {
                        if (!ls[i].key.buf) {
                                v->hidden++;
                                continue;
                        }
                        ASSERT_LEQ(ls[i].key.len, CTX_MAX_KEY_LEN);
                        ASSERT_LEQ(ls[i].value.len, CTX_MAX_VALUE_LEN);
                        struct ss_label c = {{0}, {0}};
                        ASSERT_EQ(rd((uint64_t)(uintptr_t)ls[i].key.buf, c.key, ls[i].key.len), 0);
                        ASSERT_EQ(rd((uint64_t)(uintptr_t)ls[i].value.buf, c.val, ls[i].value.len),
                                  0);
                        int dup = 0;
                        for (int j = 0; j < v->nl; j++)
                                dup |= !strcmp(v->l[j].key, c.key);
                        if (!dup)
                                v->l[v->nl++] = c;
                }
        }
        struct ctx_span_context sc;
        ASSERT_EQ(rd((uint64_t)(uintptr_t)&ctx_span_context_v1, &sc, sizeof(sc)), 0);
        v->span_state = sc.checksum == 0                                                ? 0
                        : sc.checksum == ctx_span_checksum(sc.span_id, sc.root_span_id) ? 1
                                                                                        : -1;
        v->span = sc.span_id;
        v->root = sc.root_span_id;
        uint64_t op = 0;
        ASSERT_EQ(rd((uint64_t)(uintptr_t)&otel_thread_ctx_v1, &op, 8), 0);
        ASSERT_NEQ(op, 0, "the OTel record pointer is set once and stays");
        ASSERT_EQ(rd(op, &v->rec, sizeof(v->rec)), 0);
        v->otel_valid = v->rec.valid == OTEL_THREAD_CTX_VALID;
}

static const char *label_of(const struct ss_label *l, int n, const char *key)
{
        for (int i = 0; i < n; i++)
                if (!strcmp(l[i].key, key))
                        return l[i].val;
        return NULL;
}

/* Does the valid OTel record equal the model s, as a whole? */
static int otel_is(const struct otel_thread_ctx_record *r, const struct ss_state *s)
{
        if (memcmp(r->trace_id, s->trace_id, 16) || memcmp(r->span_id, s->span_be, 8) ||
            r->trace_flags != s->flags)
                return 0;
        int n = 0;
        for (unsigned off = 0; off + 2 <= r->attrs_data_size; n++) {
                unsigned k = r->attrs_data[off], len = r->attrs_data[off + 1];
                int i = 0;
                while (i < s->nattrs && s->attrs[i].k != k)
                        i++;
                if (i == s->nattrs || strlen(s->attrs[i].val) != len ||
                    memcmp(s->attrs[i].val, &r->attrs_data[off + 2], len))
                        return 0;
                off += 2 + len;
        }
        return n == s->nattrs;
}

struct ss_seen {
        long steps, label_hidden, span_torn_or_none, otel_invalid, mid_write_new;
};

/* One stop of the child in write `phase` (1-based; NWRITES + 1: done) between old and new. */
static void check(int phase, const struct ss_state *old, const struct ss_state *new,
                  struct ss_seen *seen)
{
        struct ss_view v;
        read_view(&v);
        const struct ss_write *w = phase <= (int)NWRITES ? &WRITES[phase - 1] : NULL;
        /* labels: every key of either state, and nothing else */
        for (int i = 0; i < v.nl; i++)
                ASSERT(label_of(old->l, old->nl, v.l[i].key) ||
                           label_of(new->l, new->nl, v.l[i].key),
                       "write %d: unexpected label %s", phase, v.l[i].key);
        const struct ss_state *both[2] = {old, new};
        for (int b = 0; b < 2; b++) {
                for (int i = 0; i < both[b]->nl; i++) {
                        const char *key = both[b]->l[i].key;
                        const char *got = label_of(v.l, v.nl, key);
                        const char *o = label_of(old->l, old->nl, key);
                        const char *n = label_of(new->l, new->nl, key);
                        if (!got) {
                                ASSERT(w && (!o || !n || strcmp(o, n)),
                                       "write %d: label %s missing outside its update", phase, key);
                                seen->label_hidden++;
                                continue;
                        }
                        ASSERT((o && !strcmp(got, o)) || (n && !strcmp(got, n)),
                               "write %d: label %s = '%s', neither old '%s' nor new '%s'", phase,
                               key, got, o ? o : "-", n ? n : "-");
                        if (o && n && strcmp(o, n) && !strcmp(got, n) && w)
                                seen->mid_write_new++;
                }
        }
        /* span record: never a wrong span; "none" or torn only while the span changes */
        int changes =
            old->span_valid != new->span_valid || old->span != new->span || old->root != new->root;
        if (v.span_state == 1) {
                int is_old = old->span_valid && v.span == old->span && v.root == old->root;
                int is_new = new->span_valid &&v.span == new->span &&v.root == new->root;
                ASSERT(is_old || is_new, "write %d: valid span %" PRIu64 "/%" PRIu64, phase, v.span,
                       v.root);
        } else {
                ASSERT(changes || (v.span_state == 0 && !new->span_valid),
                       "write %d: span record %s outside a span change", phase,
                       v.span_state ? "torn" : "empty");
                seen->span_torn_or_none += changes;
        }
        /* OTel record: the old one or the new one, as a whole (or none while valid is 0) */
        if (v.otel_valid)
                ASSERT(otel_is(&v.rec, old) || otel_is(&v.rec, new),
                       "write %d: the OTel record mixes the old and the new one", phase);
        else
                seen->otel_invalid++;
        ASSERT(v.otel_valid || w, "the OTel record is left invalid");
}

static void every_instruction_of_every_write_shows_old_or_new(void)
{
        ASSERT_EQ(ctx_thread_init(), 0);
        ctx_set_abis(CTX_ABI_ALL);
        ctx_set_span_mirroring(1);
        for (int i = 0; i < 3; i++) /* registered up front: indexes known to both sides */
                ASSERT_EQ(key_index[i] = ctx_register_key(KEYS[i], strlen(KEYS[i])), i);
        /* this thread's state is the child's initial one: no labels, no span, no trace */
        fflush(NULL);
        child = fork();
        ASSERT_GEQ(child, 0);
        if (child == 0) {
                if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
                        _exit(2);
                raise(SIGSTOP);
                child_run();
                _exit(0);
        }
        int st;
        ASSERT_EQ(waitpid(child, &st, 0), child);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 2) {
                printf("SKIPPED: ptrace(PTRACE_TRACEME) is not permitted here\n");
                exit(77);
        }
        ASSERT(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "child did not stop (%#x)", st);
        struct ss_state states[NWRITES + 1];
        memset(&states[0], 0, sizeof(states[0]));
        for (size_t i = 0; i < NWRITES; i++) {
                states[i + 1] = states[i];
                model_apply(&states[i + 1], &WRITES[i]);
        }
        struct ss_seen seen = {0, 0, 0, 0, 0};
        long per_phase[NWRITES + 2] = {0};
        for (;;) {
                int phase = 0;
                ASSERT_EQ(rd((uint64_t)(uintptr_t)&ss_phase, &phase, sizeof(phase)), 0);
                ASSERT(phase >= 0 && phase <= (int)NWRITES + 1);
                if (phase == (int)NWRITES + 1) {
                        check(phase, &states[NWRITES], &states[NWRITES], &seen);
                        break;
                }
                if (phase >= 1) {
                        check(phase, &states[phase - 1], &states[phase], &seen);
                        per_phase[phase]++;
                }
                seen.steps++;
                ASSERT_LT(seen.steps, SS_MAX_STEPS);
                ASSERT_EQ(ptrace(PTRACE_SINGLESTEP, child, 0, 0), 0);
                ASSERT_EQ(waitpid(child, &st, 0), child);
                ASSERT(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "child state %#x", st);
        }
        kill(child, SIGKILL);
        waitpid(child, &st, 0);
        for (size_t i = 1; i <= NWRITES; i++)
                ASSERT_GT(per_phase[i], 5, "write %zu ran %ld instructions", i, per_phase[i]);
        /* the stepping really saw the transient states the protocol allows */
        ASSERT_GT(seen.label_hidden, 0);
        ASSERT_GT(seen.span_torn_or_none, 0);
        ASSERT_GT(seen.otel_invalid, 0);
        ASSERT_GT(seen.mid_write_new, 0);
        printf("%ld steps; label hidden %ld, span none/torn %ld, otel invalid %ld\n", seen.steps,
               seen.label_hidden, seen.span_torn_or_none, seen.otel_invalid);
}

int main(void)
{
        every_instruction_of_every_write_shows_old_or_new();
        printf("PASS every instruction of every libctx write shows the old or the new context\n");
        return 0;
}
