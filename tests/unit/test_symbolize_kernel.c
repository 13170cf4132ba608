/* SPDX-License-Identifier: MIT */
/*
 * test_symbolize_kernel.c — kernel frames (module CTXPROF_MODULE_KERNEL, offset = address)
 * are named from /proc/kallsyms. Plain program (not Criterion) so it can exit 77: when
 * kptr_restrict hides the addresses (non-root), there is nothing to check.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/symbolize.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
                        fprintf(stderr, __VA_ARGS__);                                              \
                        fputc('\n', stderr);                                                       \
                        failures++;                                                                \
                }                                                                                  \
        } while (0)

/* Address of a global text symbol, and of the symbol that follows it in address order. */
static int find_symbol(const char *want, unsigned long long *addr, unsigned long long *next)
{
        FILE *f = fopen("/proc/kallsyms", "r");
        if (!f)
                return -errno;
        char name[256], type;
        unsigned long long a;
        int found = 0, nonzero = 0;
        *next = ~0ull;
        while (fscanf(f, "%llx %c %255s%*[^\n]", &a, &type, name) == 3) {
                nonzero |= a != 0;
                if (!found && !strcmp(name, want) && (type == 'T' || type == 't')) {
                        *addr = a;
                        found = 1;
                }
        }
        fclose(f);
        if (!nonzero)
                return -EPERM;
        if (!found)
                return -ENOENT;
        /* the nearest text symbol above it bounds the range that must name it */
        f = fopen("/proc/kallsyms", "r");
        while (f && fscanf(f, "%llx %c %255s%*[^\n]", &a, &type, name) == 3)
                if (a > *addr && a < *next && (type == 'T' || type == 't'))
                        *next = a;
        if (f)
                fclose(f);
        return 0;
}

int main(void)
{
        unsigned long long addr = 0, next = 0;
        int r = find_symbol("schedule", &addr, &next);
        if (r == -EPERM) {
                printf("SKIPPED: /proc/kallsyms shows no addresses (kptr_restrict, not root)\n");
                return 77;
        }
        if (r < 0) {
                printf("SKIPPED: no 'schedule' text symbol in /proc/kallsyms (%s)\n", strerror(-r));
                return 77;
        }
        struct modules *mods = modules_new();
        struct symbolizer *sym = symbolizer_new(mods);
        CHECK(mods && sym, "allocation");
        struct sym_frame sf[4];

        struct ctxprof_frame f = {
            .module_id = CTXPROF_MODULE_KERNEL, .offset = addr, .flags = CTXPROF_FRAME_KERNEL};
        CHECK(symbolize(sym, &f, sf, 4) == 1, "entry count");
        CHECK(sf[0].function && !strcmp(sf[0].function, "schedule"), "got %s", sf[0].function);
        CHECK(sf[0].file == NULL && sf[0].line == -1, "kernel frames have no file:line");

        /* a return address just past the start still names schedule (offset - 1) */
        f.offset = addr + 1;
        f.flags |= CTXPROF_FRAME_RETADDR;
        CHECK(symbolize(sym, &f, sf, 4) == 1 && sf[0].function &&
                  !strcmp(sf[0].function, "schedule"),
              "retaddr: got %s", sf[0].function);

        /* the last byte before the next symbol */
        if (next != ~0ull && next > addr + 1) {
                f.offset = next - 1;
                f.flags = CTXPROF_FRAME_KERNEL;
                CHECK(symbolize(sym, &f, sf, 4) == 1 && sf[0].function &&
                          !strcmp(sf[0].function, "schedule"),
                      "end of schedule: got %s", sf[0].function);
        }

        /* a return address exactly at the start belongs to the symbol before */
        f.offset = addr;
        f.flags = CTXPROF_FRAME_KERNEL | CTXPROF_FRAME_RETADDR;
        CHECK(symbolize(sym, &f, sf, 4) == 1 &&
                  (!sf[0].function || strcmp(sf[0].function, "schedule")),
              "retaddr at the start must not name schedule");

        /* below every kernel symbol: unnamed, but kept */
        f.offset = 0x1000;
        f.flags = CTXPROF_FRAME_KERNEL;
        CHECK(symbolize(sym, &f, sf, 4) == 1 && sf[0].function == NULL, "low address named");

        struct symbolizer_stats st;
        symbolizer_stats(sym, &st);
        printf("kernel: schedule at %#llx, %llu lookups, %llu unresolved\n", addr,
               (unsigned long long)st.lookups, (unsigned long long)st.unresolved);
        symbolizer_free(sym);
        modules_free(mods);
        return failures ? 1 : 0;
}
