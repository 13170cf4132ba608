/* SPDX-License-Identifier: MIT */
/*
 * libctx/thread_state.c — the calling thread's storage: taking its slot from the pool on the
 * first write (or in ctx_thread_init), publishing it through ctxi_current_set, and
 * giving every slot back at thread exit (pthread key destructor). Also the same-thread
 * reentrancy guard's slow path and the library constructor (first pool block, the key).
 *
 * Must never: allocate, lock or make a system call on the lazy path (it may run in a signal
 * handler); grow the pool except from ctx_thread_init, ctx_reserve or the exit destructor;
 * give a slot back while it is still published.
 *
 * Exit hook on the lazy path: glibc's pthread_setspecific is two plain stores for keys below
 * PTHREAD_KEY_2NDLEVEL_SIZE (32) but may calloc above, so a lazy (possibly in-handler) attach
 * registers the hook only for such a key; otherwise the slot is not recycled at exit unless
 * the thread calls ctx_thread_init (counted as exit_hook_missing). musl's is always a store.
 */
#include <errno.h>
#include <pthread.h>

#include "internal.h"

#define GLIBC_KEY_1STLEVEL 32u

static pthread_key_t exit_key;
static int exit_key_ok;
int ctxi_interposed;

static void thread_exit(void *unused);

__attribute__((constructor)) static void libctx_init(void)
{
        exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
        ctxi_interposed = ctxi_abi_interposed();
        (void)ctxi_pool_grow(1); /* the first whole block */
}

static int lazy_hook_ok(void)
{
#ifdef __GLIBC__
        return exit_key_ok && (unsigned)exit_key < GLIBC_KEY_1STLEVEL;
#else
        return exit_key_ok;
#endif
}

static void register_hook(struct ctxi_slot *home, int lazy)
{
        if (ctxi_self.hook)
                return;
        if (!exit_key_ok || (lazy && !lazy_hook_ok())) {
                CTXI_COUNT(exit_hook_missing);
                return;
        }
        if (pthread_setspecific(exit_key, home) == 0)
                ctxi_self.hook = 1;
        else
                CTXI_COUNT(exit_hook_missing);
}

/* Called with ctxi_self.busy held, so no handler on this thread can attach concurrently. */
static struct ctxi_slot *attach(int lazy, int *err)
{
        struct ctxi_slot *s = ctxi_pool_get();
        if (!s) {
                CTXI_COUNT(pool_exhausted);
                *err = -ENOMEM;
                return NULL;
        }
        ctxi_set_reset(s);
        ctxi_self.home = s;
        register_hook(s, lazy);
        ctxi_otel_attach(s);
        /* the whole set is written; publish it with one pointer store */
        ctxi_publish_set(&ctxi_tls, s);
        return s;
}

struct ctxi_slot *ctxi_thread_attach(int *err)
{
        return attach(1, err);
}

void ctxi_leave_slow(void)
{
        while (CTXI_LD(ctxi_self.mirror_pending)) {
                if (ctxi_enter(&ctxi_tls) != 0)
                        return; /* cannot happen: nothing on this thread holds busy here */
                CTXI_ST(ctxi_self.mirror_pending, 0);
                CTXI_ORDER();
                struct ctxi_slot *cur = ctxi_self.cur;
                if (cur)
                        ctxi_mirror_sync(&ctxi_tls, cur);
                CTXI_ORDER();
                CTXI_ST(ctxi_self.busy, 0);
                CTXI_ORDER();
        }
        /* a trace deferred by a handler that found no record (it interrupted this thread's
         * first write, ctxi_otel_set_trace_slow): apply it now that the record exists, unless
         * a record write is in progress (that one applies it as it leaves) */
        if (CTXI_LD(ctxi_self.otel_pending) && !CTXI_LD(ctxi_self.otel_busy) && ctxi_self.home &&
            CTXI_LD(ctxi_otel_ptr)) {
                CTXI_ST(ctxi_self.otel_busy, 1);
                CTXI_ORDER();
                ctxi_otel_leave_slow();
        }
}

int ctx_thread_init(void)
{
        ctxi_pool_grow_if_low();
        int err = ctxi_enter(&ctxi_tls);
        if (err)
                return err;
        if (!ctxi_self.cur)
                attach(0, &err);
        else if (ctxi_self.home)
                register_hook(ctxi_self.home, 0);
        ctxi_leave(&ctxi_tls);
        return err;
}

/* Thread exit: unpublish, then give back the current set and every set it replaced. */
static void thread_exit(void *unused)
{
        (void)unused;
        CTXI_ST(ctxi_self.busy, 1);
        CTXI_ORDER();
        struct ctxi_slot *s = ctxi_self.cur;
        struct ctxi_slot *home = ctxi_self.home;
        ctxi_publish_set(&ctxi_tls, NULL);
        CTXI_ST(ctxi_otel_ptr, NULL);
        CTXI_ST(ctxi_span.checksum, 0);
        CTXI_ORDER();
        while (s && s != home) { /* scoped sets of an unfinished ctx_with_labels */
                struct ctxi_slot *prev = s->prev;
                ctxi_pool_put(s);
                s = prev;
        }
        if (home)
                ctxi_pool_put(home);
        ctxi_self.home = NULL;
        ctxi_self.hook = 0;
        ctxi_self.mirror_pending = 0;
        CTXI_ORDER();
        CTXI_ST(ctxi_self.busy, 0);
        ctxi_pool_grow_if_low();
}
