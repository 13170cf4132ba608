/* SPDX-License-Identifier: MIT */
/*
 * sigbus_guard.c — the SIGBUS handler that maps a page of zeros over a file page that went
 * past the end of its (truncated) file, so the interrupted read of elfutils resumes and sees
 * zeros instead of killing ctxprof. Owns the handler and its counter. Runs in signal
 * context: async-signal-safe calls only (mmap, sigaction, raise), no locks, no allocation.
 */
#include "stack/sigbus_guard.h"
#include "util/page.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t repaired;
static uintptr_t page_mask;
static int install_err;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
        (void)uctx;
        if (si->si_code == BUS_ADRERR && si->si_addr) {
                /* MAP_FIXED replaces just this page of the file mapping; whoever unmaps the
                 * whole mapping later (libelf's elf_end) unmaps the anonymous page with it.
                 * Returning re-runs the faulting load, which now reads zeros. */
                void *page = (void *)((uintptr_t)si->si_addr & page_mask);
                void *p = mmap(page, ~page_mask + 1, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
                if (p == page) {
                        __atomic_fetch_add(&repaired, 1, __ATOMIC_RELAXED);
                        return;
                }
        }
        /* Not ours to repair: the default action (core dump) on return-and-refault. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig);
}

static void install(void)
{
        page_mask = ~((uintptr_t)page_size() - 1);
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, NULL) != 0)
                install_err = -errno;
}

int sigbus_guard_install(void)
{
        pthread_once(&once, install);
        return install_err;
}

uint64_t sigbus_guard_repaired(void)
{
        return __atomic_load_n(&repaired, __ATOMIC_RELAXED);
}
