/* SPDX-License-Identifier: MIT */
/*
 * wl_garbage.c — a hostile Custom Labels writer for the sampler's robustness test. It cycles
 * custom_labels_current_set through garbage (wild pointers, huge lengths, count = 2^63, NULL
 * keys, duplicates, unreadable first keys, invalid UTF-8, NUL bytes, empty and over-long
 * keys) while burning CPU in
 * garbage_loop(). The only labels a correct reader may ever report are:
 *   ok=1   dup=first   big=x...x (1..256 x's)   v=ab
 *   wl_garbage SECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx/abi.h"

/* The writer's own ABI exports (this program is the writer; it does not use libctx). */
__thread custom_labels_labelset_t *custom_labels_current_set;
__thread struct ctx_span_context ctx_span_context_v1;
const uint32_t custom_labels_abi_version = 1;

static volatile uint64_t sink;
static custom_labels_label_t arr[16];
static custom_labels_labelset_t set;
static unsigned char xs[4096];

#define S(str)        ((custom_labels_string_t){sizeof(str) - 1, (const unsigned char *)(str)})
#define RAW(len, ptr) ((custom_labels_string_t){(size_t)(len), (const unsigned char *)(ptr)})

static void scenario(int k)
{
        custom_labels_current_set = NULL;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        memset(arr, 0, sizeof(arr));
        set.storage = arr;
        set.count = 2;
        set.capacity = 16;
        switch (k) {
        case 0: /* wild set pointer */
                custom_labels_current_set = (custom_labels_labelset_t *)(uintptr_t)0x10;
                return;
        case 1: /* wild storage */
                set.storage = (custom_labels_label_t *)(uintptr_t)0xdead0000ull;
                set.count = 3;
                break;
        case 2: /* count = 2^63, a key with a huge length */
                arr[0] = (custom_labels_label_t){S("ok"), S("1")};
                arr[1] = (custom_labels_label_t){RAW(1ull << 62, "zzz"), S("2")};
                set.count = 1ull << 63;
                break;
        case 3: /* duplicates: the first wins */
                arr[0] = (custom_labels_label_t){S("dup"), S("first")};
                arr[1] = (custom_labels_label_t){S("dup"), S("second")};
                break;
        case 4: /* unreadable first key: nothing after it may be trusted */
                arr[0] = (custom_labels_label_t){RAW(2, 0x1), S("x")};
                arr[1] = (custom_labels_label_t){S("ok"), S("WRONG")};
                break;
        case 5: /* NULL key skipped */
                arr[0] = (custom_labels_label_t){RAW(2, NULL), S("WRONG")};
                arr[1] = (custom_labels_label_t){S("ok"), S("1")};
                break;
        case 6: /* huge value length over a readable buffer: truncated */
                arr[0] = (custom_labels_label_t){S("big"), RAW(1ull << 40, xs)};
                set.count = 1;
                break;
        case 7: /* value -1 length at a wild pointer; value NULL */
                arr[0] = (custom_labels_label_t){S("neg"), RAW(-1, 0x7)};
                arr[1] = (custom_labels_label_t){S("nul"), RAW(3, NULL)};
                break;
        case 8: /* invalid UTF-8: key dropped, value cut */
                arr[0] = (custom_labels_label_t){S("k\xff"), S("1")};
                arr[1] = (custom_labels_label_t){S("v"), S("ab\xff\xfe")};
                break;
        case 9: /* negative count */
                arr[0] = (custom_labels_label_t){S("ok"), S("1")};
                set.count = (size_t)-5;
                break;
        case 10: /* label bytes: NUL in a key (dropped) and a value (cut), an empty key and
                  * a 129-byte key (dropped) */
                arr[0] = (custom_labels_label_t){S("k\0z"), S("WRONG")};
                arr[1] = (custom_labels_label_t){S("v"), S("ab\0cd")};
                arr[2] = (custom_labels_label_t){S(""), S("WRONG")};
                arr[3] = (custom_labels_label_t){RAW(129, xs), S("WRONG")};
                set.count = 4;
                break;
        }
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        custom_labels_current_set = &set;
}

__attribute__((noinline)) static void garbage_loop(void)
{
        uint64_t x = 3;
        int i;

        for (i = 0; i < 300000; i++)
                x = x * 6364136223846793005ull + 1;
        sink += x;
}

int main(int argc, char **argv)
{
        time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 5);
        int k = 0;

        memset(xs, 'x', sizeof(xs));
        while (time(NULL) < end) {
                scenario(k);
                garbage_loop();
                k = (k + 1) % 11;
        }
        return 0;
}
