/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/tsan_libctx_otel_keys.c — the OTel attribute key registry and the process
 * context publisher under concurrency (also run under TSan): threads register overlapping
 * keys and set labels with them at once. Every key must get exactly one index (all threads
 * agree), the indexes must be 0..n-1, and the published key map (decoded with protobuf-c,
 * seqlock read) must name each index with its key, and each thread's record must carry its
 * own values under those indexes.
 * A plain program (exit 0 = pass), not Criterion: Criterion aborts under TSan (see
 * tsan_libctx_isolation.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx/ctx.h"
#include "plain_check.h"
#include "otel/processcontext.pb-c.h"

#define NTHREADS 4
#define NKEYS    40

extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

static int got[NTHREADS][NKEYS];
static int record_ok[NTHREADS];
static pthread_barrier_t start;

static void key_name(int k, char *out, size_t cap)
{
        snprintf(out, cap, "tsan.key.%02d", k);
}

static void *worker(void *p)
{
        int t = (int)(intptr_t)p;
        pthread_barrier_wait(&start);
        char key[32], val[32];
        for (int j = 0; j < NKEYS; j++) {
                int k = (j + t * 7) % NKEYS; /* each thread in its own order */
                key_name(k, key, sizeof(key));
                got[t][k] = ctx_register_key(key, strlen(key));
                if (j < 6) { /* a few labels: the record has room for them */
                        snprintf(val, sizeof(val), "t%d-k%d", t, k);
                        if (ctx_set_label_str(key, val) != 0)
                                got[t][k] = -1000;
                }
        }
        /* read back this thread's own record: its labels under the agreed indexes */
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        int seen = 0;
        for (unsigned off = 0; r && off + 2 <= r->attrs_data_size;) {
                unsigned idx = r->attrs_data[off], len = r->attrs_data[off + 1];
                for (int k = 0; k < NKEYS; k++) {
                        if (got[t][k] != (int)idx)
                                continue;
                        snprintf(val, sizeof(val), "t%d-k%d", t, k);
                        seen += len == strlen(val) && !memcmp(&r->attrs_data[off + 2], val, len);
                }
                off += 2 + len;
        }
        record_ok[t] = seen == 6;
        return NULL;
}

static const struct otel_process_ctx_header *find_mapping(void)
{
        FILE *f = fopen("/proc/self/maps", "r");
        char line[512];
        unsigned long lo = 0;
        while (f && fgets(line, sizeof(line), f))
                if (strstr(line, "OTEL_CTX") && sscanf(line, "%lx-", &lo) == 1)
                        break;
        if (f)
                fclose(f);
        return (const struct otel_process_ctx_header *)lo;
}

int main(void)
{
        pthread_t th[NTHREADS];
        CHECK(pthread_barrier_init(&start, NULL, NTHREADS) == 0, "barrier");
        for (int t = 0; t < NTHREADS; t++)
                CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "create");
        for (int t = 0; t < NTHREADS; t++)
                pthread_join(th[t], NULL);
        int used[NKEYS] = {0};
        for (int k = 0; k < NKEYS; k++) {
                for (int t = 0; t < NTHREADS; t++) {
                        CHECK(got[t][k] >= 0, "thread %d key %d: %d", t, k, got[t][k]);
                        CHECK(got[t][k] == got[0][k], "key %d: two indexes", k);
                }
                CHECK(got[0][k] < NKEYS, "index %d", got[0][k]);
                used[got[0][k]]++;
        }
        for (int i = 0; i < NKEYS; i++)
                CHECK(used[i] == 1, "index %d used %d times", i, used[i]);
        for (int t = 0; t < NTHREADS; t++)
                CHECK(record_ok[t], "thread %d's record lacks its labels", t);

        /* the published map names each index with its key (read with the seqlock) */
        const struct otel_process_ctx_header *h = find_mapping();
        CHECK(h, "no OTEL_CTX mapping");
        static uint8_t buf[1 << 16];
        uint32_t n = 0;
        for (;;) {
                uint64_t t0 = __atomic_load_n(&h->monotonic_published_at_ns, __ATOMIC_ACQUIRE);
                n = __atomic_load_n(&h->payload_size, __ATOMIC_ACQUIRE);
                memcpy(buf, (const void *)(uintptr_t)h->payload, n);
                if (t0 && __atomic_load_n(&h->monotonic_published_at_ns, __ATOMIC_ACQUIRE) == t0)
                        break;
        }
        Opentelemetry__Proto__Processcontext__V1development__ProcessContext *pc =
            opentelemetry__proto__processcontext__v1development__process_context__unpack(NULL, n,
                                                                                         buf);
        CHECK(pc, "payload does not decode");
        Opentelemetry__Proto__Common__V1__ArrayValue *map = NULL;
        for (size_t i = 0; i < pc->n_attributes; i++)
                if (!strcmp(pc->attributes[i]->key, OTEL_KEY_MAP_KEY))
                        map = pc->attributes[i]->value->array_value;
        CHECK(map, "no key map");
        CHECK(map->n_values == NKEYS, "map has %zu keys", map->n_values);
        char key[32];
        for (int k = 0; k < NKEYS; k++) {
                key_name(k, key, sizeof(key));
                CHECK(!strcmp(map->values[got[0][k]]->string_value, key), "index %d is %s",
                      got[0][k], map->values[got[0][k]]->string_value);
        }
        opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(pc,
                                                                                            NULL);
        printf("PASS %d threads registered %d keys: one index each, all published\n", NTHREADS,
               NKEYS);
        return 0;
}
