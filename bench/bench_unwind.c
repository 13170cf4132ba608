/* SPDX-License-Identifier: MIT */
/*
 * bench_unwind.c — cost of the user-space half of --call-graph dwarf: dwarf_unwind per sample
 * (cold = fresh unwinder, warm), proc_maps_resolve per frame, symbolize per frame (cold =
 * first lookup, cached). Samples are real: fx_qsort (no frame pointers, qsort callbacks)
 * stopped with ptrace and its stack copied page-wise, as the BPF program copies it.
 * Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so a loaded machine inflates
 * them less than wall time would. Prints numbers, asserts nothing.
 */
#include <libgen.h>
#include <time.h>

#include "unit/stack_sampler.h"

#define NSAMPLES 1000
#define NPASSES  5

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct sample samples[NSAMPLES];
static uint64_t ips[NSAMPLES][CTXPROF_MAX_FRAMES];
static int nips[NSAMPLES];
static struct ctxprof_frame frames[NSAMPLES][CTXPROF_MAX_FRAMES];

int main(int argc, char **argv)
{
        (void)argc;
        char self[512], fixture[600];
        snprintf(self, sizeof(self), "%s", argv[0]);
        /* argv[0] = BUILD/bench/bench_unwind */
        snprintf(fixture, sizeof(fixture), "%s/../tests/fixtures/fx_qsort", dirname(self));
        char line[64];
        pid_t pid = spawn_fixture(fixture, NULL, line, sizeof(line));
        if (pid <= 0 || sampler_attach(pid)) {
                fprintf(stderr, "cannot start/attach %s\n", fixture);
                return 1;
        }
        int memfd = open_mem(pid);
        size_t bytes = 0;
        for (int i = 0; i < NSAMPLES; i++) {
                usleep(500);
                if (sampler_take(pid, memfd, &samples[i])) {
                        fprintf(stderr, "sample %d failed\n", i);
                        return 1;
                }
                bytes += samples[i].len;
        }
        printf("samples: %d of fx_qsort, stack copy %.1f KiB on average\n", NSAMPLES,
               bytes / 1024.0 / NSAMPLES);

        /* unwinding */
        struct dwarf_unwinder *u = dwarf_unwinder_new();
        int tr;
        double t0 = now_us();
        nips[0] = dwarf_unwind(u, pid, samples[0].regs, samples[0].stack, samples[0].len, ips[0],
                               CTXPROF_MAX_FRAMES, &tr);
        double t1 = now_us();
        long nframes = 0, ntrunc = 0;
        for (int i = 1; i < NSAMPLES; i++)
                nips[i] = dwarf_unwind(u, pid, samples[i].regs, samples[i].stack, samples[i].len,
                                       ips[i], CTXPROF_MAX_FRAMES, &tr);
        double t2 = now_us();
        printf("dwarf_unwind: first sample (report + attach + CFI load) %.0f us; "
               "rest of the cold pass %.2f us/sample\n",
               t1 - t0, (t2 - t1) / (NSAMPLES - 1));
        for (int p = 0; p < NPASSES; p++) {
                nframes = ntrunc = 0;
                double a = now_us();
                for (int i = 0; i < NSAMPLES; i++) {
                        nips[i] = dwarf_unwind(u, pid, samples[i].regs, samples[i].stack,
                                               samples[i].len, ips[i], CTXPROF_MAX_FRAMES, &tr);
                        nframes += nips[i];
                        ntrunc += tr;
                }
                double b = now_us();
                printf("dwarf_unwind: warm pass %d: %.2f us/sample, %.2f us/frame, %.1f "
                       "frames/sample, %ld truncated\n",
                       p + 1, (b - a) / NSAMPLES, (b - a) / nframes, (double)nframes / NSAMPLES,
                       ntrunc);
        }

        /* resolution */
        struct modules *mods = modules_new();
        struct proc_maps *pm = NULL;
        t0 = now_us();
        if (proc_maps_open(mods, pid, &pm)) {
                fprintf(stderr, "proc_maps_open failed\n");
                return 1;
        }
        t1 = now_us();
        for (int i = 0; i < NSAMPLES; i++)
                for (int j = 0; j < nips[i]; j++) {
                        proc_maps_resolve(pm, ips[i][j], &frames[i][j]);
                        if (j)
                                frames[i][j].flags |= CTXPROF_FRAME_RETADDR;
                }
        t2 = now_us();
        struct proc_maps_stats pst;
        proc_maps_stats(pm, &pst);
        printf("proc_maps: open (parse + build ids) %.0f us; resolve %.3f us/frame (%llu misses, "
               "%llu re-reads)\n",
               t1 - t0, (t2 - t1) / nframes, (unsigned long long)pst.misses,
               (unsigned long long)pst.refreshes);

        /* symbolization */
        struct symbolizer *sym = symbolizer_new(mods);
        struct sym_frame sf[SYM_MAX_INLINE];
        double cold = 0, cold_first = 0, cold_max = 0;
        long ncold = 0;
        for (int i = 0; i < NSAMPLES; i++)
                for (int j = 0; j < nips[i]; j++) {
                        struct symbolizer_stats before, after;
                        symbolizer_stats(sym, &before);
                        double a = now_us();
                        symbolize(sym, &frames[i][j], sf, SYM_MAX_INLINE);
                        double b = now_us();
                        symbolizer_stats(sym, &after);
                        if (after.cache_hits == before.cache_hits) {
                                if (ncold == 0)
                                        cold_first = b - a;
                                else
                                        cold += b - a;
                                if (b - a > cold_max)
                                        cold_max = b - a;
                                ncold++;
                        }
                }
        t0 = now_us();
        long nlook = 0;
        for (int p = 0; p < NPASSES; p++)
                for (int i = 0; i < NSAMPLES; i++)
                        for (int j = 0; j < nips[i]; j++, nlook++)
                                symbolize(sym, &frames[i][j], sf, SYM_MAX_INLINE);
        t1 = now_us();
        printf("symbolize: %ld distinct frames; first lookup %.0f us; other cold lookups "
               "%.1f us/frame on average; slowest %.0f us (a module's first lookup opens it and "
               "loads its DWARF, for libc the separate debug file); cached %.3f us/frame\n",
               ncold, cold_first, ncold > 1 ? cold / (ncold - 1) : 0.0, cold_max,
               (t1 - t0) / nlook);

        kill_fixture(pid);
        close(memfd);
        symbolizer_free(sym);
        proc_maps_free(pm);
        modules_free(mods);
        dwarf_unwinder_free(u);
        return 0;
}
