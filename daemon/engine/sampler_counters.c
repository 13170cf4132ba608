/* SPDX-License-Identifier: MIT */
/*
 * engine/sampler_counters.c — the sampler's statistics as the kernel keeps them: the per-CPU
 * `counters` map summed into struct sampler_stats, a program's run time, a map's entries.
 * Every call is syscalls (a per-CPU map read, an info query, a walk of the map): callers read
 * them when they are used (a chunk cut, a status or metrics snapshot), never per drain.
 */
#include "engine/sampler_counters.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "ctxprof/sample.h"

void sampler_counters_read(int counters_fd, int ncpu, struct sampler_stats *out)
{
        struct ctxprof_counters *v;
        __u32 zero = 0;
        int i, k;

        v = calloc((size_t)ncpu, sizeof(*v));
        if (!v)
                return;
        if (!bpf_map_lookup_elem(counters_fd, &zero, v)) {
                uint64_t sum[CTXPROF_CNT_MAX] = {0};

                for (i = 0; i < ncpu; i++)
                        for (k = 0; k < CTXPROF_CNT_MAX; k++)
                                sum[k] += v[i].c[k];
                out->samples = sum[CTXPROF_CNT_SAMPLES];
                out->lost = sum[CTXPROF_CNT_LOST];
                out->lost_unstarted = sum[CTXPROF_CNT_LOST_UNSTARTED];
                out->lost_away = sum[CTXPROF_CNT_LOST_AWAY];
                out->lost_draining = sum[CTXPROF_CNT_LOST_DRAINING];
                out->no_tp = sum[CTXPROF_CNT_NO_TP];
                out->span_faults = sum[CTXPROF_CNT_SPAN_FAULT];
                out->labelset_faults = sum[CTXPROF_CNT_LABELSET_FAULT];
                out->label_faults = sum[CTXPROF_CNT_LABEL_FAULT];
                out->ustack_errors = sum[CTXPROF_CNT_USTACK_ERR];
                out->kstack_errors = sum[CTXPROF_CNT_KSTACK_ERR];
                out->stack_copy_errors = sum[CTXPROF_CNT_STACK_COPY_ERR];
                out->events_lost = sum[CTXPROF_CNT_EVENTS_LOST];
                out->wakeups = sum[CTXPROF_CNT_WAKEUPS];
                out->tls_stale = sum[CTXPROF_CNT_TLS_STALE];
                out->otel_faults = sum[CTXPROF_CNT_OTEL_FAULT];
                out->offcpu = sum[CTXPROF_CNT_OFFCPU];
                out->offcpu_short = sum[CTXPROF_CNT_OFFCPU_SHORT];
                out->offcpu_full = sum[CTXPROF_CNT_OFFCPU_FULL];
                out->offcpu_lost = sum[CTXPROF_CNT_OFFCPU_LOST];
                out->offcpu_exited = sum[CTXPROF_CNT_OFFCPU_EXITED];
                out->offcpu_open_exit = sum[CTXPROF_CNT_OFFCPU_OPEN_EXIT];
                out->ku_samples = sum[CTXPROF_CNT_KU_SAMPLES];
                out->ku_frames = sum[CTXPROF_CNT_KU_FRAMES];
                out->ku_noproc = sum[CTXPROF_CNT_KU_NOPROC];
                out->ku_fp_steps = sum[CTXPROF_CNT_KU_FP_STEPS];
                out->ku_unsup = sum[CTXPROF_CNT_KU_UNSUP];
                out->ku_nomap = sum[CTXPROF_CNT_KU_NOMAP];
                out->events_limited = sum[CTXPROF_CNT_EV_LIMITED];
                out->exec_events_limited = sum[CTXPROF_CNT_EXEC_LIMITED];
                out->targets_full += sum[CTXPROF_CNT_TARGETS_FULL];
                out->dl_notify = sum[CTXPROF_CNT_DL_NOTIFY];
                out->filtered_in_kernel = sum[CTXPROF_CNT_FILTERED];
                out->go_labels = sum[CTXPROF_CNT_GO_LABELS];
                out->go_torn = sum[CTXPROF_CNT_GO_TORN];
                out->filtered += out->filtered_in_kernel;
        }
        free(v);
}

int bpf_prog_run_time(int prog_fd, uint64_t *run_ns, uint64_t *run_cnt)
{
        struct bpf_prog_info info;
        __u32 len = sizeof(info);

        memset(&info, 0, sizeof(info));
        if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
                return -1;
        *run_ns = info.run_time_ns;
        *run_cnt = info.run_cnt;
        return 0;
}

uint32_t bpf_prog_verified_insns(int prog_fd)
{
        struct bpf_prog_info info;
        __u32 len = sizeof(info);

        memset(&info, 0, sizeof(info));
        if (prog_fd < 0 || bpf_obj_get_info_by_fd(prog_fd, &info, &len))
                return 0;
        return info.verified_insns;
}

/* The entries of map fd by BPF_MAP_LOOKUP_BATCH, COUNT_BATCH at a time (a status file with
 * 1,000 targets would otherwise cost 1,000 system calls at each write); -1 when the map
 * does not take batches (or a hash bucket holds more than a batch: ENOSPC). */
#define COUNT_BATCH 256
static long count_by_batch(int fd)
{
        struct bpf_map_info info;
        __u32 len = sizeof(info), keys[COUNT_BATCH], out_batch = 0;
        void *values, *in = NULL;
        long n = 0;

        memset(&info, 0, sizeof(info));
        if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.key_size != sizeof(__u32) ||
            !info.value_size)
                return -1;
        values = malloc((size_t)COUNT_BATCH * info.value_size);
        if (!values)
                return -1;
        for (;;) {
                __u32 count = COUNT_BATCH;
                int err = bpf_map_lookup_batch(fd, in, &out_batch, keys, values, &count, NULL);

                if (err && errno != ENOENT) {
                        n = -1;
                        break;
                }
                n += count;
                if (err) /* ENOENT: the last batch */
                        break;
                in = &out_batch;
        }
        free(values);
        return n;
}

unsigned bpf_map_count_u32(int fd)
{
        __u32 key, next, *prev = NULL;
        long batched = count_by_batch(fd);
        unsigned n = 0;

        if (batched >= 0)
                return (unsigned)batched;
        while (!bpf_map_get_next_key(fd, prev, &next)) {
                key = next;
                prev = &key;
                n++;
        }
        return n;
}
