/* SPDX-License-Identifier: MIT */
/*
 * tsan_modules.c — the modules registry and the symbolizer are shared between the sampler's
 * consumer thread (registering files while resolving) and the writer thread (names). Here
 * several threads register, look up and symbolize at once; run under TSan as well. Their
 * maps reads share the registry's budget (stack/maps_budget.h): a read put off (-EAGAIN,
 * slow under TSan) is tried again once the budget has refilled.
 * Plain program, not Criterion: Criterion 2.4 cannot start under TSan on this machine
 * ("Could not initialize inheritable arena" / SEGV in libcriterion before any test runs).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stack/proc_maps.h"
#include "stack/symbolize.h"

#define NTHREADS        4
#define ROUNDS          40
#define PUT_OFF_WAIT_US 10000 /* a read put off by the maps budget: tried again after this */
#define PUT_OFF_MAX     6000  /* ... at most this many times (a minute) */

static struct modules *mods;
static struct symbolizer *sym;

/* an address inside this function's own code */
__attribute__((noinline)) static uint64_t here(void)
{
        return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static void *resolver(void *arg)
{
        (void)arg;
        for (int i = 0; i < ROUNDS; i++) {
                struct proc_maps *pm = NULL;
                int rc, tries = 0;
                while ((rc = proc_maps_open(mods, getpid(), &pm)) == -EAGAIN &&
                       tries++ < PUT_OFF_MAX)
                        usleep(PUT_OFF_WAIT_US);
                if (rc != 0)
                        return (void *)1;
                struct ctxprof_frame f;
                if (proc_maps_resolve(pm, here(), &f) != 0 || f.module_id < CTXPROF_MODULE_FIRST)
                        return (void *)2;
                f.flags = CTXPROF_FRAME_RETADDR;
                struct sym_frame sf[SYM_MAX_INLINE];
                int n = symbolize(sym, &f, sf, SYM_MAX_INLINE);
                if (n < 1 || !sf[n - 1].function || !strstr(sf[n - 1].function, "resolver"))
                        return (void *)3;
                struct module_info mi;
                if (modules_info(mods, f.module_id, &mi) != 0 || !strstr(mi.path, "tsan_modules"))
                        return (void *)4;
                proc_maps_free(pm);
        }
        return NULL;
}

static void *reader(void *arg)
{
        (void)arg;
        for (int i = 0; i < ROUNDS * 20; i++) {
                for (uint32_t id = CTXPROF_MODULE_FIRST; id < CTXPROF_MODULE_FIRST + 16; id++) {
                        struct module_info mi;
                        if (modules_info(mods, id, &mi) == 0 && (!mi.path || !mi.build_id_hex))
                                return (void *)5;
                        struct ctxprof_frame f = {.module_id = id, .offset = (uint64_t)i * 16};
                        struct sym_frame sf[4];
                        if (symbolize(sym, &f, sf, 4) < 1)
                                return (void *)6;
                }
        }
        return NULL;
}

int main(void)
{
        mods = modules_new();
        sym = symbolizer_new(mods);
        if (!mods || !sym) {
                fprintf(stderr, "FAIL: allocation\n");
                return 1;
        }
        pthread_t t[NTHREADS];
        int failed = 0;
        for (int i = 0; i < NTHREADS; i++) {
                if (pthread_create(&t[i], NULL, i % 2 ? reader : resolver, NULL)) {
                        fprintf(stderr, "FAIL: pthread_create\n");
                        return 1;
                }
        }
        for (int i = 0; i < NTHREADS; i++) {
                void *ret;
                pthread_join(t[i], &ret);
                if (ret) {
                        fprintf(stderr, "FAIL: thread %d failed with %ld\n", i,
                                (long)(intptr_t)ret);
                        failed = 1;
                }
        }
        symbolizer_free(sym);
        modules_free(mods);
        printf("%s: %d threads x %d rounds\n", failed ? "FAIL" : "ok", NTHREADS, ROUNDS);
        return failed;
}
