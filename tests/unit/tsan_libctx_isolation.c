/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/tsan_libctx_isolation.c — libctx under real concurrency (also run under TSan):
 * threads write their own labels and spans and open scoped sets (pool pops/pushes on the
 * shared lock-free free stack) while a churn thread keeps creating short-lived threads that
 * take and give back slots at exit. Every thread checks, through the raw ABI, that it only
 * ever sees its own values; at the end every slot taken has been given back.
 *
 * A plain program (own main, exit 0 = pass), not Criterion: Criterion 2.4.1's runner aborts
 * under ThreadSanitizer before any test runs ("Could not initialize inheritable arena",
 * Snaipe/Criterion#274), reproduced here with an empty test.
 */
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ctx/ctx.h"
#include "plain_check.h"
#include "libctx_reader.h"

#define NWORKERS 4
#define ITERS    20000

static int own(const char *key, const char *want)
{
        struct rd_set s;
        rd_read_set(custom_labels_current_set, &s);
        const struct rd_label *l = rd_find(&s, key);
        return l && l->vlen == strlen(want) && memcmp(l->val, want, l->vlen) == 0 && !s.duplicates;
}

struct scope {
        const char *me;
        int bad;
};

static void scoped(void *p)
{
        struct scope *s = p;
        if (!own("who", s->me) || !own("scope", s->me))
                s->bad++;
}

static void *worker(void *p)
{
        long id = (long)p;
        char me[32], v[48];
        snprintf(me, sizeof(me), "worker-%ld", id);
        int bad = 0;
        if (id & 1)
                ctx_thread_init();
        for (int i = 0; i < ITERS; i++) {
                snprintf(v, sizeof(v), "%s-%d", me, i % 7);
                if (ctx_set_label_str("who", me) < 0 || ctx_set_label_str("iter", v) < 0)
                        bad++;
                ctx_set_span((uint64_t)id << 32 | (uint64_t)i, (uint64_t)id);
                if (!own("who", me) || !own("iter", v) ||
                    ctx_span_context_v1.root_span_id != (uint64_t)id)
                        bad++;
                if (i % 16 == 0) {
                        struct scope s = {me, 0};
                        ctx_label_kv kv[] = {{"scope", me}};
                        if (ctx_with_labels(kv, 1, scoped, &s) < 0)
                                bad++;
                        bad += s.bad;
                        if (!own("who", me) || own("scope", me))
                                bad++;
                }
                if (i % 64 == 0)
                        ctx_remove_label_str("iter");
        }
        return (void *)(long)bad;
}

static void *short_lived(void *p)
{
        (void)p;
        int ok = ctx_set_label_str("who", "short") >= 0 && own("who", "short");
        return (void *)(long)!ok;
}

static volatile int churn_stop;

static void *churn(void *p)
{
        (void)p;
        long bad = 0;
        while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
                pthread_t t;
                void *r;
                if (pthread_create(&t, NULL, short_lived, NULL) != 0)
                        continue;
                pthread_join(t, &r);
                bad += (long)r;
        }
        return (void *)bad;
}

int main(void)
{
        struct ctx_stats s0, s1;
        ctx_get_stats(&s0);
        pthread_t w[NWORKERS], c;
        CHECK(pthread_create(&c, NULL, churn, NULL) == 0, "pthread_create");
        for (long i = 0; i < NWORKERS; i++)
                CHECK(pthread_create(&w[i], NULL, worker, (void *)(i + 1)) == 0, "pthread_create");
        long bad = 0;
        for (int i = 0; i < NWORKERS; i++) {
                void *r;
                pthread_join(w[i], &r);
                bad += (long)r;
        }
        __atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
        void *r;
        pthread_join(c, &r);
        CHECK((long)r == 0, "short-lived threads saw wrong labels");
        CHECK(bad == 0, "%ld wrong observations in workers", bad);
        ctx_get_stats(&s1);
        fprintf(stderr, "claims %lu releases %lu slots %lu exhausted %lu\n",
                (unsigned long)(s1.claims - s0.claims), (unsigned long)(s1.releases - s0.releases),
                (unsigned long)s1.slots_total, (unsigned long)s1.pool_exhausted);
        CHECK(s1.claims - s0.claims == s1.releases - s0.releases, "slots not given back");
        CHECK(s1.pool_exhausted == 0, "pool exhausted");
        puts("PASS libctx isolation and pool churn");
        return 0;
}
