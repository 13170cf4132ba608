/* SPDX-License-Identifier: MIT */
/*
 * test_ktrace_text.c — the BPF tracing machinery's kernel text from a kallsyms listing: each
 * range runs to the next symbol (aliases at one address included), only text symbols count,
 * and a leaf-first kernel stack loses every frame up to its outermost machinery frame.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/ktrace_text.h"

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
                               "ffffffff81100000 T __schedule\n"
                               "ffffffff81100800 T schedule\n"
                               "ffffffff81200000 T __traceiter_sched_switch\n"
                               "ffffffff81200070 T __probestub_sched_switch\n"
                               "ffffffff81300000 T bpf_trace_run4\n"
                               "ffffffff813001c0 T bpf_trace_run5\n"
                               "ffffffff81300400 T bpf_get_stack\n"
                               "ffffffff81400000 D bpf_prog_data_not_text\n"
                               "0000000000000000 T bpf_trace_run1\n"
                               "ffffffffa0001000 t bpf_prog_0123_ctxprof_offcpu_switch\t[bpf]\n"
                               "ffffffffa0002000 t bpf_prog_4567_other\t[bpf]\n";

static struct ktrace_text *load(void)
{
        FILE *f = fmemopen((void *)kallsyms, sizeof(kallsyms) - 1, "r");
        struct ktrace_text *t = ktrace_text_read(f);

        fclose(f);
        cr_assert(t);
        return t;
}

Test(ktrace_text, ranges_run_to_the_next_symbol)
{
        struct ktrace_text *t = load();

        cr_assert(ktrace_text_has(t, 0xffffffff81200010));  /* __traceiter_sched_switch */
        cr_assert(!ktrace_text_has(t, 0xffffffff81200070)); /* the stub after it */
        cr_assert(ktrace_text_has(t, 0xffffffff813003ff));  /* bpf_trace_run5's end */
        cr_assert(!ktrace_text_has(t, 0xffffffff81300400)); /* bpf_get_stack */
        cr_assert(!ktrace_text_has(t, 0xffffffff81400010)); /* data, not text */
        cr_assert(ktrace_text_has(t, 0xffffffffa0001010));  /* a BPF image */
        cr_assert(ktrace_text_has(t, 0xffffffffa0002010));  /* the last one */
        cr_assert(!ktrace_text_has(t, 0xffffffff81100010)); /* __schedule */
        cr_assert(!ktrace_text_has(t, 0));
        ktrace_text_free(t);
}

Test(ktrace_text, stacks_lose_everything_up_to_the_outermost_machinery_frame)
{
        struct ktrace_text *t = load();
        /* leaf first: a helper, the program, bpf_trace_run4, the iterator, the scheduler */
        const uint64_t st[] = {0xffffffff81300410, 0xffffffffa0001010, 0xffffffff81300010,
                               0xffffffff81200010, 0xffffffff81100010, 0xffffffff81100810};
        const uint64_t plain[] = {0xffffffff81100010, 0xffffffff81100810};

        cr_assert_eq(ktrace_text_skip(t, st, 6), 4);
        cr_assert_eq(ktrace_text_skip(t, plain, 2), 0);
        cr_assert_eq(ktrace_text_skip(NULL, st, 6), 0);
        ktrace_text_free(t);
}

Test(ktrace_text, no_listing_recognizes_nothing)
{
        struct ktrace_text *t = ktrace_text_read(NULL);

        cr_assert(t);
        cr_assert(!ktrace_text_has(t, 0xffffffffa0001010));
        ktrace_text_free(t);
}
