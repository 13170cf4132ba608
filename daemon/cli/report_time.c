/* SPDX-License-Identifier: MIT */
/*
 * report_time.c — per label value and per span: on-CPU time, off-CPU time by blocking
 * function, run-queue delay (see report_time.h). Owns two interned tables (groups, and
 * group x function); never reads the file itself, never prints but to the FILE it is given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_time.h"
#include "jfr/jfr_dict.h"

#define NS_PER_MS_F 1e6
#define FUNCS_SHOWN 6 /* blocking functions printed per group */

struct group_time {
        uint64_t cpu_samples, off_ns, runq_ns;
};

struct report_time {
        struct jfr_strtab groups; /* "KEY=VALUE" or "span=HEX" */
        struct group_time *g;
        uint32_t gcap;
        struct jfr_strtab funcs; /* group index (4 bytes) + function name */
        uint64_t *f_ns;
        uint32_t *f_group;
        uint32_t fcap;
        int has_offcpu;
};

struct report_time *report_time_new(void)
{
        struct report_time *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        jfr_strtab_init(&t->groups);
        jfr_strtab_init(&t->funcs);
        return t;
}

void report_time_free(struct report_time *t)
{
        if (!t)
                return;
        jfr_strtab_free(&t->groups);
        jfr_strtab_free(&t->funcs);
        free(t->g);
        free(t->f_ns);
        free(t->f_group);
        free(t);
}

/* Grows *p (elem bytes each, *cap of them) to hold index idx, zeroing the new part. */
static int fit(void **p, uint32_t *cap, size_t elem, uint32_t idx)
{
        uint32_t n = *cap ? *cap : 64;
        void *q;

        if (idx < *cap)
                return 0;
        while (n <= idx)
                n *= 2;
        q = realloc(*p, (size_t)n * elem);
        if (!q)
                return -ENOMEM;
        memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
        *p = q;
        *cap = n;
        return 0;
}

static struct group_time *group(struct report_time *t, const char *name, uint32_t *idx)
{
        uint32_t cap = t->gcap;

        if (jfr_strtab_intern(&t->groups, name, strlen(name), idx, NULL))
                return NULL;
        if (fit((void **)&t->g, &cap, sizeof(*t->g), *idx))
                return NULL;
        t->gcap = cap;
        return &t->g[*idx];
}

int report_time_cpu(struct report_time *t, const char *const *groups, unsigned n)
{
        uint32_t idx;

        for (unsigned i = 0; i < n; i++) {
                struct group_time *g = group(t, groups[i], &idx);

                if (!g)
                        return -ENOMEM;
                g->cpu_samples++;
        }
        return 0;
}

int report_time_offcpu(struct report_time *t, const char *const *groups, unsigned n,
                       const char *blocked_in, uint64_t duration_ns, uint64_t runq_ns)
{
        const char *fn = blocked_in && *blocked_in ? blocked_in : "[unknown]";
        uint64_t blocked = duration_ns > runq_ns ? duration_ns - runq_ns : 0;
        char key[512];
        uint32_t idx, fidx;

        t->has_offcpu = 1;
        for (unsigned i = 0; i < n; i++) {
                struct group_time *g = group(t, groups[i], &idx);
                uint32_t c1 = t->fcap, c2 = t->fcap;
                size_t len;

                if (!g)
                        return -ENOMEM;
                g->off_ns += blocked;
                g->runq_ns += runq_ns;
                memcpy(key, &idx, 4);
                len = 4 + (size_t)snprintf(key + 4, sizeof(key) - 4, "%s", fn);
                if (len > sizeof(key) - 1)
                        len = sizeof(key) - 1;
                if (jfr_strtab_intern(&t->funcs, key, len, &fidx, NULL) ||
                    fit((void **)&t->f_ns, &c1, sizeof(*t->f_ns), fidx) ||
                    fit((void **)&t->f_group, &c2, sizeof(*t->f_group), fidx))
                        return -ENOMEM;
                t->fcap = c1 < c2 ? c1 : c2;
                t->f_ns[fidx] += blocked;
                t->f_group[fidx] = idx;
        }
        return 0;
}

int report_time_has_offcpu(const struct report_time *t)
{
        return t->has_offcpu;
}

static const struct report_time *sort_t;
static uint64_t sort_period;

static uint64_t total_ns(const struct group_time *g)
{
        return g->cpu_samples * (sort_period ? sort_period : 1) + g->off_ns + g->runq_ns;
}

static int by_total(const void *a, const void *b)
{
        uint64_t x = total_ns(&sort_t->g[*(const uint32_t *)a]);
        uint64_t y = total_ns(&sort_t->g[*(const uint32_t *)b]);

        return x < y ? 1 : x > y ? -1 : 0;
}

static int by_fn_ns(const void *a, const void *b)
{
        uint64_t x = sort_t->f_ns[*(const uint32_t *)a], y = sort_t->f_ns[*(const uint32_t *)b];

        return x < y ? 1 : x > y ? -1 : 0;
}

/* The blocking functions of group gi, most time first. */
static void print_functions(const struct report_time *t, FILE *out, uint32_t gi, const uint32_t *fx)
{
        int shown = 0;

        for (uint32_t i = 0; i < t->funcs.n && shown < FUNCS_SHOWN; i++) {
                uint32_t f = fx[i];

                if (t->f_group[f] != gi || !t->f_ns[f])
                        continue;
                fprintf(out, "        %10.1f ms  off-CPU in %s\n", (double)t->f_ns[f] / NS_PER_MS_F,
                        jfr_strtab_str(&t->funcs, f) + 4);
                shown++;
        }
}

void report_time_print(const struct report_time *t, FILE *out, int top, uint64_t sample_period_ns)
{
        uint32_t *gx = malloc(((size_t)t->groups.n + 1) * sizeof(*gx));
        uint32_t *fx = malloc(((size_t)t->funcs.n + 1) * sizeof(*fx));

        if (!gx || !fx) {
                free(gx);
                free(fx);
                return;
        }
        for (uint32_t i = 0; i < t->groups.n; i++)
                gx[i] = i;
        for (uint32_t i = 0; i < t->funcs.n; i++)
                fx[i] = i;
        sort_t = t;
        sort_period = sample_period_ns;
        qsort(gx, t->groups.n, sizeof(*gx), by_total);
        qsort(fx, t->funcs.n, sizeof(*fx), by_fn_ns);
        fprintf(out,
                "\ntime per label value and span (on-CPU = samples x %.3f ms; off-CPU "
                "blocked, by blocking kernel function; run-queue delay):\n",
                (double)sample_period_ns / NS_PER_MS_F);
        for (uint32_t i = 0; i < t->groups.n && (int)i < top; i++) {
                const struct group_time *g = &t->g[gx[i]];

                fprintf(out, "  %s\n", jfr_strtab_str(&t->groups, gx[i]));
                fprintf(out, "        %10.1f ms  on-CPU (%llu samples)\n",
                        (double)(g->cpu_samples * sample_period_ns) / NS_PER_MS_F,
                        (unsigned long long)g->cpu_samples);
                fprintf(out, "        %10.1f ms  off-CPU\n", (double)g->off_ns / NS_PER_MS_F);
                print_functions(t, out, gx[i], fx);
                fprintf(out, "        %10.1f ms  run-queue delay\n",
                        (double)g->runq_ns / NS_PER_MS_F);
        }
        free(gx);
        free(fx);
}
