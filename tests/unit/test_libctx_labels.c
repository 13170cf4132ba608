/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_labels.c — libctx's label and span API, checked through the raw ABI
 * memory with the reader of tests/libctx_reader.h: set/replace, truncation (UTF-8 at the
 * cut), capacity, remove and re-add, clear, span mirrors, tags, the scoped helper, thread
 * isolation, slots recycled at thread exit, graceful pool exhaustion, and a signal handler
 * writing while it interrupts a label write on the same thread (-EBUSY, deferred mirrors).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "ctx/ctx.h"
#include "libctx_reader.h"

static struct rd_set now(void)
{
        struct rd_set s;
        rd_read_set(custom_labels_current_set, &s);
        cr_assert_eq(s.structural, 0);
        return s;
}

static void expect(const char *key, const char *val)
{
        struct rd_set s = now();
        const struct rd_label *l = rd_find(&s, key);
        if (!val) {
                cr_assert_null(l, "key %s should be absent", key);
                return;
        }
        cr_assert_not_null(l, "key %s missing", key);
        cr_assert_eq(l->vlen, strlen(val), "key %s: len %zu, want %zu", key, l->vlen, strlen(val));
        cr_assert(memcmp(l->val, val, l->vlen) == 0, "key %s: wrong bytes", key);
}

Test(libctx_labels, set_replace_and_no_set_before_first_write)
{
        cr_assert_null(custom_labels_current_set, "a thread that never wrote has no set");
        cr_assert_eq(ctx_set_label_str("route", "/a"), 0);
        expect("route", "/a");
        cr_assert_eq(ctx_set_label("route", 5, "/bb", 3), 0);
        expect("route", "/bb");
        cr_assert_eq(now().n, 1);
        cr_assert_eq(ctx_set_label("empty", 5, NULL, 0), 0);
        expect("empty", "");
        cr_assert_eq(custom_labels_current_set->capacity, CTX_MAX_LABELS);
        cr_assert_eq(now().duplicates, 0);
}

Test(libctx_labels, invalid_arguments)
{
        cr_assert_eq(ctx_set_label(NULL, 3, "v", 1), -EINVAL);
        cr_assert_eq(ctx_set_label("k", 0, "v", 1), -EINVAL);
        cr_assert_eq(ctx_set_label("k", 1, NULL, 1), -EINVAL);
        cr_assert_eq(ctx_set_label_str("", "v"), -EINVAL);
        cr_assert_eq(ctx_set_label_str("k", NULL), -EINVAL);
        cr_assert_eq(ctx_remove_label(NULL, 1), -EINVAL);
        cr_assert_eq(ctx_set_tag(CTX_SPAN_TAGS, 1), -EINVAL);
        cr_assert_eq(ctx_with_labels(NULL, 0, NULL, NULL), -EINVAL);
}

Test(libctx_labels, truncation_at_utf8_boundary)
{
        char key[200], val[300], want[300];
        memset(key, 'k', sizeof(key));
        cr_assert_eq(ctx_set_label(key, sizeof(key), "v", 1), CTX_TRUNCATED);
        struct rd_set s = now();
        cr_assert_eq(s.n, 1);
        cr_assert_eq(s.l[0].klen, CTX_MAX_KEY_LEN);

        /* exactly the limit: not truncated */
        memset(val, 'a', CTX_MAX_VALUE_LEN);
        cr_assert_eq(ctx_set_label("v", 1, val, CTX_MAX_VALUE_LEN), 0);
        s = now();
        cr_assert_eq(rd_find(&s, "v")->vlen, CTX_MAX_VALUE_LEN);

        /* a 2-, 3- and 4-byte character straddling the limit is dropped whole */
        static const char *chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
        for (int c = 0; c < 3; c++) {
                size_t cl = strlen(chars[c]);
                for (size_t before = CTX_MAX_VALUE_LEN - cl + 1; before < CTX_MAX_VALUE_LEN;
                     before++) {
                        memset(val, 'a', before);
                        memcpy(val + before, chars[c], cl);
                        memcpy(val + before + cl, "zz", 2);
                        cr_assert_eq(ctx_set_label("u", 1, val, before + cl + 2), CTX_TRUNCATED);
                        memset(want, 'a', before);
                        want[before] = 0;
                        expect("u", want);
                }
        }
        /* the character ends exactly at the limit: kept */
        memset(val, 'a', CTX_MAX_VALUE_LEN - 3);
        memcpy(val + CTX_MAX_VALUE_LEN - 3, "\xe2\x82\xac", 3);
        val[CTX_MAX_VALUE_LEN] = 'x';
        cr_assert_eq(ctx_set_label("u", 1, val, CTX_MAX_VALUE_LEN + 1), CTX_TRUNCATED);
        s = now();
        cr_assert_eq(rd_find(&s, "u")->vlen, CTX_MAX_VALUE_LEN);
        cr_assert(memcmp(rd_find(&s, "u")->val + CTX_MAX_VALUE_LEN - 3, "\xe2\x82\xac", 3) == 0);
        /* _str form: a long NUL-terminated value is truncated the same way */
        memset(val, 'b', 299);
        val[299] = 0;
        cr_assert_eq(ctx_set_label_str("w", val), CTX_TRUNCATED);
        s = now();
        cr_assert_eq(rd_find(&s, "w")->vlen, CTX_MAX_VALUE_LEN);
        /* a truncated key is found again by the same long key */
        cr_assert_eq(now().n, 4);
        cr_assert_eq(ctx_remove_label(key, sizeof(key)), 0);
        cr_assert_eq(now().n, 3);
}

Test(libctx_labels, capacity_remove_readd_clear)
{
        char k[16];
        for (int i = 0; i < CTX_MAX_USER_LABELS; i++) {
                snprintf(k, sizeof(k), "key%d", i);
                cr_assert_eq(ctx_set_label_str(k, k), 0);
        }
        cr_assert_eq(ctx_set_label_str("one-too-many", "x"), -ENOSPC);
        expect("one-too-many", NULL);
        cr_assert_eq(ctx_set_label_str("key3", "replaced"), 0, "replacing in a full set works");
        expect("key3", "replaced");
        cr_assert_eq(now().n, CTX_MAX_USER_LABELS);

        cr_assert_eq(ctx_remove_label_str("key3"), 0);
        expect("key3", NULL);
        cr_assert_eq(ctx_remove_label_str("key3"), 0, "removing an absent key is fine");
        cr_assert_eq(ctx_set_label_str("new", "n"), 0, "the freed slot is reused");
        expect("new", "n");
        cr_assert_eq(ctx_set_label_str("key3", "back"), -ENOSPC);
        cr_assert_eq(ctx_remove_label_str("key7"), 0);
        cr_assert_eq(ctx_set_label_str("key3", "back"), 0);
        expect("key3", "back");
        expect("key0", "key0");

        cr_assert_eq(ctx_set_span(7, 8), 0);
        cr_assert_eq(ctx_clear_labels(), 0);
        struct rd_set s = now();
        cr_assert_eq(s.n, 2, "only the span mirrors remain, got %d", s.n);
        expect(CTX_SPAN_ID_KEY, "7");
        cr_assert_eq(ctx_set_label_str("after", "clear"), 0);
        expect("after", "clear");
        expect("key0", NULL);
}

Test(libctx_labels, span_record_mirrors_and_tags)
{
        struct ctx_span_context *r = &ctx_span_context_v1;
        cr_assert_eq((uintptr_t)r % 64, 0);
        cr_assert_eq(r->checksum, 0, "no span in a new thread");
        cr_assert_eq(ctx_set_span(18446744073709551615ULL, 1234567890123ULL), 0);
        uint64_t sp, rt;
        cr_assert_eq(rd_read_span(r, &sp, &rt), 1);
        cr_assert_eq(sp, 18446744073709551615ULL);
        cr_assert_eq(rt, 1234567890123ULL);
        expect(CTX_SPAN_ID_KEY, "18446744073709551615");
        expect(CTX_ROOT_SPAN_ID_KEY, "1234567890123");
        cr_assert_eq(ctx_set_span(0, 9), 0);
        expect(CTX_SPAN_ID_KEY, "0");
        expect(CTX_ROOT_SPAN_ID_KEY, "9");
        /* a user label named span-id loses to the mirror (first duplicate wins) */
        cr_assert_eq(ctx_set_label_str(CTX_SPAN_ID_KEY, "user"), 0);
        struct rd_set s = now();
        cr_assert_eq(s.duplicates, 1);
        expect(CTX_SPAN_ID_KEY, "0");
        cr_assert_eq(ctx_remove_label_str(CTX_SPAN_ID_KEY), 0);
        expect(CTX_SPAN_ID_KEY, "0");

        ctx_set_span_mirroring(0);
        cr_assert_eq(ctx_set_span(5, 6), 0);
        expect(CTX_SPAN_ID_KEY, NULL);
        expect(CTX_ROOT_SPAN_ID_KEY, NULL);
        cr_assert_eq(rd_read_span(r, &sp, &rt), 1);
        cr_assert_eq(sp, 5);
        ctx_set_span_mirroring(1);
        cr_assert_eq(ctx_set_span(5, 6), 0);
        expect(CTX_SPAN_ID_KEY, "5");

        cr_assert_eq(ctx_clear_span(), 0);
        cr_assert_eq(rd_read_span(r, &sp, &rt), 0);
        expect(CTX_SPAN_ID_KEY, NULL);
        expect(CTX_ROOT_SPAN_ID_KEY, NULL);

        for (unsigned i = 0; i < CTX_SPAN_TAGS; i++)
                cr_assert_eq(ctx_set_tag(i, 0xA0000000u + i), 0);
        for (unsigned i = 0; i < CTX_SPAN_TAGS; i++)
                cr_assert_eq(r->tags[i], 0xA0000000u + i);
}

static void inner(void *arg)
{
        int *calls = arg;
        (*calls)++;
        expect("outer", "o");
        expect("route", "/scoped");
        expect("extra", "e");
        cr_assert_eq(ctx_set_label_str("inside", "dropped at scope exit"), 0);
        expect("inside", "dropped at scope exit");
        cr_assert_eq(ctx_set_span(77, 78), 0);
}

static void middle(void *arg)
{
        ctx_label_kv kv[] = {{"extra", "e"}};
        expect("route", "/scoped");
        cr_assert_eq(ctx_with_labels(kv, 1, inner, arg), 0);
        expect("extra", NULL);
        expect("inside", NULL);
        expect("route", "/scoped");
        expect(CTX_SPAN_ID_KEY, "77"); /* the span changed inside: mirrors follow */
}

static void count_calls(void *arg)
{
        (*(int *)arg)++;
}

static void count_calls_ok(void *arg)
{
        (*(int *)arg)++;
        expect("ok", "fine");
}

Test(libctx_labels, scoped_helper_restores_previous_set)
{
        cr_assert_eq(ctx_set_span(1, 2), 0);
        cr_assert_eq(ctx_set_label_str("outer", "o"), 0);
        cr_assert_eq(ctx_set_label_str("route", "/plain"), 0);
        const custom_labels_labelset_t *before = custom_labels_current_set;
        ctx_label_kv kv[] = {{"route", "/scoped"}};
        int calls = 0;
        struct ctx_stats st0, st1;
        ctx_get_stats(&st0);
        cr_assert_eq(ctx_with_labels(kv, 1, middle, &calls), 0);
        cr_assert_eq(calls, 1);
        cr_assert_eq(custom_labels_current_set, before, "the previous set is published again");
        expect("route", "/plain");
        expect("outer", "o");
        expect("inside", NULL);
        expect(CTX_SPAN_ID_KEY, "77");
        expect(CTX_ROOT_SPAN_ID_KEY, "78");
        ctx_get_stats(&st1);
        cr_assert_eq(st1.claims - st0.claims, 2, "two scoped slots taken");
        cr_assert_eq(st1.releases - st0.releases, 2, "and both given back");

        /* bad entries: fn still runs once, the valid ones apply, the status says so */
        ctx_label_kv bad[] = {{NULL, "x"}, {"ok", "fine"}};
        calls = 0;
        cr_assert_eq(ctx_with_labels(bad, 2, count_calls_ok, &calls), -EINVAL);
        cr_assert_eq(calls, 1);
        expect("ok", NULL);
        calls = 0;
        cr_assert_eq(ctx_with_labels(NULL, 1, count_calls, &calls), -EINVAL);
        cr_assert_eq(calls, 1, "fn runs even when labels is NULL");
}

/* --- threads --- */

struct iso_arg {
        int id;
        pthread_barrier_t *bar;
        int ok;
        const custom_labels_labelset_t *set;
};

static void *iso_thread(void *p)
{
        struct iso_arg *a = p;
        char v[32];
        snprintf(v, sizeof(v), "thread-%d", a->id);
        int ok = ctx_set_label_str("who", v) == 0 && ctx_set_span(1000 + a->id, 1) == 0;
        pthread_barrier_wait(a->bar); /* all threads have written */
        struct rd_set s;
        rd_read_set(custom_labels_current_set, &s);
        const struct rd_label *l = rd_find(&s, "who");
        ok = ok && l && l->vlen == strlen(v) && memcmp(l->val, v, l->vlen) == 0;
        ok = ok && ctx_span_context_v1.span_id == (uint64_t)(1000 + a->id);
        a->set = custom_labels_current_set;
        pthread_barrier_wait(a->bar); /* nobody exits (and frees a slot) before all checked */
        a->ok = ok;
        return NULL;
}

Test(libctx_labels, thread_isolation)
{
        enum { N = 8 };
        pthread_t t[N];
        struct iso_arg a[N];
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, N);
        for (int i = 0; i < N; i++) {
                a[i] = (struct iso_arg){.id = i, .bar = &bar};
                cr_assert_eq(pthread_create(&t[i], NULL, iso_thread, &a[i]), 0);
        }
        for (int i = 0; i < N; i++)
                pthread_join(t[i], NULL);
        for (int i = 0; i < N; i++) {
                cr_assert(a[i].ok, "thread %d saw a foreign or missing value", i);
                for (int j = 0; j < i; j++)
                        cr_assert_neq(a[i].set, a[j].set, "threads %d and %d share a set", i, j);
        }
        cr_assert_null(custom_labels_current_set, "the main thread never wrote");
        pthread_barrier_destroy(&bar);
}

static void *write_once(void *p)
{
        (void)p;
        return (void *)(intptr_t)(ctx_set_label_str("short", "lived") == 0 &&
                                  ctx_set_span(1, 2) == 0);
}

Test(libctx_labels, slots_recycled_at_thread_exit)
{
        struct ctx_stats s0, s1;
        ctx_get_stats(&s0);
        for (int i = 0; i < 200; i++) { /* more threads than one pool block */
                pthread_t t;
                void *ok;
                cr_assert_eq(pthread_create(&t, NULL, write_once, NULL), 0);
                pthread_join(t, &ok);
                cr_assert(ok);
        }
        ctx_get_stats(&s1);
        cr_assert_eq(s1.claims - s0.claims, 200);
        cr_assert_eq(s1.releases - s0.releases, 200, "every slot given back at thread exit");
        cr_assert_eq(s1.slots_total, s0.slots_total, "no growth: slots were reused");
        cr_assert_eq(s1.pool_exhausted, s0.pool_exhausted);
        cr_assert_eq(s1.exit_hook_missing, 0);
        cr_assert_eq(s1.abi_interposed, 0);
}

struct hold_arg {
        pthread_barrier_t *bar;
        int rc;
        int init;
};

static void *hold_slot(void *p)
{
        struct hold_arg *a = p;
        a->rc = a->init ? ctx_thread_init() : ctx_set_label_str("k", "v");
        pthread_barrier_wait(a->bar);
        return NULL;
}

Test(libctx_labels, pool_exhaustion_is_graceful_and_counted)
{
        struct ctx_stats s0, s1;
        ctx_get_stats(&s0);
        enum { N = 100 };
        cr_assert_lt(s0.slots_total, N, "the first block is smaller than %d", N);
        pthread_t t[N];
        struct hold_arg a[N];
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, N + 1);
        for (int i = 0; i < N; i++) {
                a[i] = (struct hold_arg){.bar = &bar};
                cr_assert_eq(pthread_create(&t[i], NULL, hold_slot, &a[i]), 0);
        }
        pthread_barrier_wait(&bar); /* every thread has tried while all hold their slots */
        for (int i = 0; i < N; i++)
                pthread_join(t[i], NULL);
        int enomem = 0;
        for (int i = 0; i < N; i++) {
                cr_assert(a[i].rc == 0 || a[i].rc == -ENOMEM, "rc %d", a[i].rc);
                enomem += a[i].rc == -ENOMEM;
        }
        ctx_get_stats(&s1);
        cr_assert_eq(enomem, (int)(N - s0.slots_total), "lazy writes never grow the pool");
        cr_assert_eq(s1.pool_exhausted - s0.pool_exhausted, (uint64_t)enomem);
        /* outside signal context the pool grows: now everyone gets a slot */
        cr_assert_eq(ctx_reserve(N + 1), 0);
        pthread_barrier_destroy(&bar);
        pthread_barrier_init(&bar, NULL, N + 1);
        for (int i = 0; i < N; i++) {
                a[i] = (struct hold_arg){.bar = &bar, .init = i & 1};
                cr_assert_eq(pthread_create(&t[i], NULL, hold_slot, &a[i]), 0);
        }
        pthread_barrier_wait(&bar);
        for (int i = 0; i < N; i++) {
                pthread_join(t[i], NULL);
                cr_assert_eq(a[i].rc, 0);
        }
        pthread_barrier_destroy(&bar);
}

/* --- a signal handler that interrupts a label write on the same thread --- */

static char *guarded; /* the value's page: PROT_NONE until the handler runs */
static int nested_label_rc = 1, nested_span_rc = 1, nested_span_ok, nested_mirror_deferred;

static void on_segv(int sig)
{
        (void)sig;
        /* we are inside ctx_set_label, which was copying the value */
        nested_label_rc = ctx_set_label_str("nested", "x");
        nested_span_rc = ctx_set_span(111, 222);
        uint64_t sp = 0, rt = 0;
        nested_span_ok =
            rd_read_span(&ctx_span_context_v1, &sp, &rt) == 1 && sp == 111 && rt == 222;
        struct rd_set s;
        rd_read_set(custom_labels_current_set, &s);
        const struct rd_label *m = rd_find(&s, CTX_SPAN_ID_KEY);
        nested_mirror_deferred = m && m->vlen == 1 && m->val[0] == '1'; /* still the old span */
        mprotect(guarded, 4096, PROT_READ | PROT_WRITE); /* let the interrupted copy finish */
}

Test(libctx_labels, nested_write_from_signal_handler)
{
        cr_assert_eq(ctx_set_span(1, 2), 0);
        cr_assert_eq(ctx_set_label_str("k", "old"), 0);
        char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert_neq(pages, MAP_FAILED);
        guarded = pages + 4096;
        memcpy(guarded, "new-value", 9);
        cr_assert_eq(mprotect(guarded, 4096, PROT_NONE), 0);
        struct sigaction sa = {0}, old;
        sa.sa_handler = on_segv;
        sigemptyset(&sa.sa_mask);
        cr_assert_eq(sigaction(SIGSEGV, &sa, &old), 0);
        struct ctx_stats s0, s1;
        ctx_get_stats(&s0);

        int rc = ctx_set_label("k", 1, guarded, 9); /* faults inside libctx, while busy */

        sigaction(SIGSEGV, &old, NULL);
        ctx_get_stats(&s1);
        cr_assert_eq(rc, 0);
        cr_assert_eq(nested_label_rc, -EBUSY, "nested label write: %d", nested_label_rc);
        cr_assert_eq(s1.busy_rejected - s0.busy_rejected, 1);
        cr_assert_eq(nested_span_rc, 0);
        cr_assert(nested_span_ok, "the span record is written at once, even nested");
        cr_assert(nested_mirror_deferred, "mirrors are not touched inside the label write");
        expect("k", "new-value");
        expect("nested", NULL);
        expect(CTX_SPAN_ID_KEY, "111"); /* refreshed when the interrupted write left */
        expect(CTX_ROOT_SPAN_ID_KEY, "222");
        munmap(pages, 8192);
}
