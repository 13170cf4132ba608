/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_inline.c — the inline API of <ctx/ctx_inline.h> in an executable
 * linked with libctx.a (this test program): ctx_inline_set_span / ctx_inline_clear_span leave
 * what the library calls leave, read back through the raw ABI memory with the reader of
 * tests/libctx_reader.h: the span record, the span-id mirror labels (the inline path hands
 * over to the library whenever they are on, or still shown), the OTel record (a trace is
 * cleared by the library), a thread's first write (no slot yet), and each ABI switched off.
 * That the fast path really runs inline is checked on the machine code: single-stepping one
 * call never reaches ctx_set_span's entry (the library call does).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx/ctx.h"
#include "ctx/ctx_inline.h"
#include "libctx_reader.h"

#if defined(__PIC__) && !defined(__PIE__)
#error "this test is an executable: the inline paths must be the real ones"
#endif

extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

static const uint8_t TRACE[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void expect_span(uint64_t span, uint64_t root)
{
        uint64_t s = 0, r = 0;
        cr_assert_eq(rd_read_span(&ctx_span_context_v1, &s, &r), 1, "no valid span record");
        cr_assert_eq(s, span);
        cr_assert_eq(r, root);
}

static void expect_no_span(void)
{
        uint64_t s, r;
        cr_assert_eq(rd_read_span(&ctx_span_context_v1, &s, &r), 0, "the span record is not empty");
}

static const char *mirror(const char *key, char *buf, size_t n)
{
        struct rd_set st;
        rd_read_set(custom_labels_current_set, &st);
        cr_assert_eq(st.structural, 0);
        const struct rd_label *l = rd_find(&st, key);
        if (!l)
                return NULL;
        snprintf(buf, n, "%.*s", (int)l->vlen, (const char *)l->val);
        return buf;
}

static int otel_shows_trace(void)
{
        const struct otel_thread_ctx_record *r = otel_thread_ctx_v1;
        cr_assert_not_null(r);
        cr_assert_eq(r->valid, OTEL_THREAD_CTX_VALID);
        static const uint8_t zero[24];
        return memcmp(r->trace_id, zero, 24) != 0 || r->trace_flags != 0;
}

Test(libctx_inline, set_and_clear_span_as_the_library_does)
{
        char b[32];
        cr_assert_eq(ctx_thread_init(), 0);
        ctx_set_span_mirroring(1);
        /* mirrors on: handed to the library, the mirror labels show the span */
        cr_assert_eq(ctx_inline_set_span(12345678901234567890ull, 42), 0);
        expect_span(12345678901234567890ull, 42);
        cr_assert_str_eq(mirror(CTX_SPAN_ID_KEY, b, sizeof(b)), "12345678901234567890");
        cr_assert_str_eq(mirror(CTX_ROOT_SPAN_ID_KEY, b, sizeof(b)), "42");
        /* mirroring off: the first set still hides the mirrors (the library's job) */
        ctx_set_span_mirroring(0);
        cr_assert_eq(ctx_inline_set_span(7, 8), 0);
        expect_span(7, 8);
        cr_assert_null(mirror(CTX_SPAN_ID_KEY, b, sizeof(b)));
        /* then the span record alone */
        cr_assert_eq(ctx_inline_set_span(9, 10), 0);
        expect_span(9, 10);
        cr_assert_null(mirror(CTX_SPAN_ID_KEY, b, sizeof(b)));
        cr_assert_eq(ctx_inline_clear_span(), 0);
        expect_no_span();
        /* an OTel trace is cleared by a set-span (through the library), then inline again */
        cr_assert_eq(ctx_set_trace(TRACE, 11, 12, 1), 0);
        cr_assert(otel_shows_trace());
        cr_assert_eq(ctx_inline_set_span(13, 14), 0);
        expect_span(13, 14);
        cr_assert(!otel_shows_trace(), "the trace outlived a set-span");
        cr_assert_eq(ctx_set_trace(TRACE, 15, 16, 1), 0);
        cr_assert_eq(ctx_inline_clear_span(), 0);
        expect_no_span();
        cr_assert(!otel_shows_trace(), "the trace outlived a clear-span");
        /* mirroring back on: the next inline set shows them again */
        ctx_set_span_mirroring(1);
        cr_assert_eq(ctx_inline_set_span(17, 18), 0);
        cr_assert_str_eq(mirror(CTX_SPAN_ID_KEY, b, sizeof(b)), "17");
        cr_assert_eq(ctx_inline_clear_span(), 0);
        cr_assert_null(mirror(CTX_SPAN_ID_KEY, b, sizeof(b)));
}

Test(libctx_inline, abis_switched_off)
{
        cr_assert_eq(ctx_thread_init(), 0);
        ctx_set_span_mirroring(0);
        ctx_set_abis(CTX_ABI_ALL & ~CTX_ABI_SPAN_RECORD);
        cr_assert_eq(ctx_inline_set_span(1, 2), 0);
        expect_no_span(); /* the record is not written when its ABI is off */
        ctx_set_abis(CTX_ABI_SPAN_RECORD);
        cr_assert_eq(ctx_inline_set_span(3, 4), 0);
        expect_span(3, 4);
        ctx_set_abis(CTX_ABI_ALL);
        ctx_set_span_mirroring(1);
}

static void *first_write(void *arg)
{
        (void)arg;
        /* a thread that never wrote: no slot, no OTel record yet; the library attaches it */
        cr_assert_null(otel_thread_ctx_v1);
        cr_assert_eq(ctx_inline_set_span(21, 22), 0);
        expect_span(21, 22);
        cr_assert_not_null(otel_thread_ctx_v1, "the first write did not attach the thread");
        return NULL;
}

Test(libctx_inline, first_write_of_a_thread)
{
        ctx_set_span_mirroring(0);
        pthread_t th;
        cr_assert_eq(pthread_create(&th, NULL, first_write, NULL), 0);
        cr_assert_eq(pthread_join(th, NULL), 0);
        ctx_set_span_mirroring(1);
}

/* One set-span single-stepped in a forked child: whether the program counter ever reached
 * ctx_set_span's entry (the library call), and the instructions stepped (marker stores
 * included). */
static volatile int mark;
static int enters_library(int inline_call, long *steps)
{
        fflush(NULL);
        pid_t c = fork();
        cr_assert_geq(c, 0);
        if (c == 0) {
                if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
                        _exit(1);
                raise(SIGSTOP);
                mark = 1;
                if (inline_call)
                        ctx_inline_set_span(31, 32);
                else
                        ctx_set_span(31, 32);
                mark = 2;
                _exit(0);
        }
        int st, entered = 0;
        long n = 0;
        int (*volatile lib)(uint64_t, uint64_t) = ctx_set_span; /* its address, not a PLT's */
        cr_assert_eq(waitpid(c, &st, 0), c);
        cr_assert(WIFSTOPPED(st), "the child did not stop");
        for (;;) {
                cr_assert_eq(ptrace(PTRACE_SINGLESTEP, c, 0, 0), 0);
                cr_assert_eq(waitpid(c, &st, 0), c);
                cr_assert(WIFSTOPPED(st));
                long m = ptrace(PTRACE_PEEKDATA, c, (void *)&mark, 0);
                if ((int)m == 2)
                        break;
                struct user_regs_struct regs;
                cr_assert_eq(ptrace(PTRACE_GETREGS, c, 0, &regs), 0);
                entered |= regs.rip == (uintptr_t)lib;
                n += (int)m == 1;
                cr_assert_lt(n, 100000);
        }
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
        *steps = n;
        return entered;
}

Test(libctx_inline, fast_path_is_inline)
{
        cr_assert_eq(ctx_thread_init(), 0);
        ctx_set_span_mirroring(0);
        cr_assert_eq(ctx_set_span(1, 2), 0); /* mirrors hidden: the fast path applies */
        long in, lib;
        int in_entered = enters_library(1, &in), lib_entered = enters_library(0, &lib);
        ctx_set_span_mirroring(1);
        cr_log_info("one set-span: %ld instructions inline, %ld through the library", in, lib);
        cr_assert(lib_entered, "the step loop never saw ctx_set_span's entry");
        cr_assert(!in_entered, "the inline set-span called the library");
}
