/* SPDX-License-Identifier: MIT */
/*
 * ktrace_text.c — address ranges of the BPF tracing machinery's kernel text (see
 * ktrace_text.h). Owns the name prefixes and the kallsyms scan; must never name a frame or
 * look at anything but kernel addresses.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/ktrace_text.h"
#include "util/grow.h"

#define LAST_SYMBOL_SPAN (1u << 20)

struct krange {
        uint64_t start, end;
};

struct ktrace_text {
        struct krange *r; /* sorted, disjoint */
        size_t n;
};

/* Text symbols of the machinery: the JIT images of BPF programs, the tracepoint-to-BPF
 * trampolines and the tracepoint iterators. */
static const char *const machinery[] = {"bpf_prog_", "bpf_trace_run", "__bpf_trace_",
                                        "__traceiter_"};

struct ksym_start {
        uint64_t addr;
        int ours; /* one of machinery[] */
};

static int is_machinery(const char *name)
{
        for (size_t i = 0; i < sizeof(machinery) / sizeof(machinery[0]); i++)
                if (!strncmp(name, machinery[i], strlen(machinery[i])))
                        return 1;
        return 0;
}

static int cmp_start(const void *a, const void *b)
{
        const struct ksym_start *x = a, *y = b;

        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        return x->ours - y->ours; /* at one address, an alias that is not ours ends a range */
}

/* Every text symbol's start, flagged when it is the machinery's. 0, or -1 (no memory). */
static int read_starts(FILE *f, struct ksym_start **out, size_t *n)
{
        size_t cap = 0, linecap = 0;
        char *line = NULL;
        int err = 0;

        *out = NULL;
        *n = 0;
        while (getline(&line, &linecap, f) > 0) {
                unsigned long long addr;
                char type, name[128];

                if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3 || !addr)
                        continue;
                if (type != 't' && type != 'T')
                        continue;
                if (grow_array((void **)out, &cap, sizeof(**out), *n + 1, 4096)) {
                        err = -1;
                        break;
                }
                (*out)[*n].addr = addr;
                (*out)[(*n)++].ours = is_machinery(name);
        }
        free(line);
        return err;
}

struct ktrace_text *ktrace_text_read(FILE *f)
{
        struct ktrace_text *t = calloc(1, sizeof(*t));
        struct ksym_start *s;
        size_t n, i, cap = 0;
        uint64_t end;

        if (!t)
                return NULL;
        if (!f)
                return t;
        if (read_starts(f, &s, &n)) {
                free(s);
                free(t);
                return NULL;
        }
        qsort(s, n, sizeof(*s), cmp_start);
        for (i = 0; i < n; i++) {
                size_t j = i + 1;

                if (!s[i].ours)
                        continue;
                while (j < n && s[j].addr == s[i].addr)
                        j++;
                /* the last symbol's end is unknown: nothing named lies above it */
                end = j < n ? s[j].addr : s[i].addr + LAST_SYMBOL_SPAN;
                if (t->n && t->r[t->n - 1].end >= s[i].addr) {
                        t->r[t->n - 1].end = end; /* adjacent: one range */
                        continue;
                }
                if (grow_array((void **)&t->r, &cap, sizeof(*t->r), t->n + 1, 16))
                        break;
                t->r[t->n++] = (struct krange){s[i].addr, end};
        }
        free(s);
        return t;
}

struct ktrace_text *ktrace_text_load(void)
{
        FILE *f = fopen("/proc/kallsyms", "re");
        struct ktrace_text *t = ktrace_text_read(f);

        if (f)
                fclose(f);
        return t;
}

int ktrace_text_has(const struct ktrace_text *t, uint64_t addr)
{
        size_t lo = 0, hi;

        if (!t)
                return 0;
        hi = t->n;
        while (lo < hi) { /* the first range that ends after addr */
                size_t mid = lo + (hi - lo) / 2;

                if (t->r[mid].end <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < t->n && t->r[lo].start <= addr;
}

size_t ktrace_text_skip(const struct ktrace_text *t, const uint64_t *ips, size_t n)
{
        size_t i = n;

        while (i > 0 && !ktrace_text_has(t, ips[i - 1]))
                i--;
        return i;
}

void ktrace_text_free(struct ktrace_text *t)
{
        if (!t)
                return;
        free(t->r);
        free(t);
}
