/* SPDX-License-Identifier: MIT */
/*
 * cmd_report.c — `ctxprof report FILE.jfr`: what is inside a JFR file, for a user without a
 * JDK: chunks, time range, event counts per type, threads, the top stacks, and the top
 * stacks per label value (from jdk.ExecutionSample's context). Reads through jfr_reader, so any
 * JFR file works. A file that is not JFR (or has no complete chunk) is an error only; a
 * chunk cut short at the end (a writer killed inside it) is ignored with a warning and the
 * complete chunks are reported (exit 0); a corrupt file reports what was readable and exits
 * 1. With --html or --format it converts instead (cli/report_html.c, cli/jfr_convert.c)
 * and writes only the -o file (or standard output).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "sink/jfr_convert.h"
#include "cli/report_html.h"
#include "cli/report_time.h"
#include "jfr/jfr_dict.h"
#include "jfr/jfr_file.h"
#include "jfr/jfr_reader.h"

struct counter {
        struct jfr_strtab names;
        uint64_t *n;
        uint32_t cap;
};

static int count(struct counter *c, const char *s, uint64_t by, uint32_t *idx_out)
{
        uint32_t idx;
        int err = jfr_strtab_intern(&c->names, s, strlen(s), &idx, NULL);
        if (err)
                return err;
        if (idx >= c->cap) {
                uint32_t nc = c->cap ? c->cap * 2 : 64;
                while (nc <= idx)
                        nc *= 2;
                uint64_t *n = realloc(c->n, nc * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                memset(n + c->cap, 0, (nc - c->cap) * sizeof(*n));
                c->n = n;
                c->cap = nc;
        }
        c->n[idx] += by;
        if (idx_out)
                *idx_out = idx;
        return 0;
}

static void counter_free(struct counter *c)
{
        jfr_strtab_free(&c->names);
        free(c->n);
}

static const uint64_t *sort_counts;
static int by_count(const void *a, const void *b)
{
        uint64_t x = sort_counts[*(const uint32_t *)a], y = sort_counts[*(const uint32_t *)b];
        return x < y ? 1 : x > y ? -1 : (int)(*(const uint32_t *)a - *(const uint32_t *)b);
}

static uint32_t *sorted(const struct counter *c)
{
        uint32_t *ix = malloc((c->names.n + 1) * sizeof(*ix));
        if (!ix)
                return NULL;
        for (uint32_t i = 0; i < c->names.n; i++)
                ix[i] = i;
        sort_counts = c->n;
        qsort(ix, c->names.n, sizeof(*ix), by_count);
        return ix;
}

/* Printable copy: control characters become '?'. */
static void clean(char *dst, size_t cap, const char *s)
{
        size_t o = 0;
        for (; s && *s && o + 1 < cap; s++)
                dst[o++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
        dst[o] = 0;
}

static void render_stack(const struct jfr_reader *r, const struct jfr_value *st, int max_frames,
                         char *out, size_t cap)
{
        const struct jfr_value *frames = jfr_value_field(r, st, "frames");
        size_t o = 0;
        out[0] = 0;
        if (!frames || frames->kind != JFR_V_ARRAY) {
                snprintf(out, cap, "[no stack]");
                return;
        }
        for (uint32_t i = 0; i < frames->n && (int)i < max_frames; i++) {
                const struct jfr_value *m = jfr_value_field(r, &frames->items[i], "method");
                const char *name = jfr_value_str(r, jfr_value_field(r, m, "name"));
                const char *cls =
                    jfr_value_str(r, jfr_value_field(r, jfr_value_field(r, m, "type"), "name"));
                char n[256], c[128];
                clean(n, sizeof(n), name ? name : "?");
                clean(c, sizeof(c), cls ? cls : "");
                int w = snprintf(out + o, cap - o, "%s%s%s%s%s", i ? " <- " : "", n,
                                 c[0] ? " (" : "", c, c[0] ? ")" : "");
                if (w < 0 || (size_t)w >= cap - o)
                        return;
                o += (size_t)w;
        }
        if (frames->n > (uint32_t)max_frames)
                snprintf(out + o, cap - o, " <- ...");
}

static void fmt_time(uint64_t ns, char *buf, size_t cap)
{
        time_t s = (time_t)(ns / 1000000000ull);
        struct tm tm;
        gmtime_r(&s, &tm);
        size_t n = strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(buf + n, cap - n, ".%03u UTC", (unsigned)(ns / 1000000 % 1000));
}

#define MAX_CHAIN 4096 /* labels followed in one context (a hostile file may loop) */

struct report {
        struct counter types, threads, stacks, labels, pairs;
        uint64_t samples, context_samples;
        struct report_time *time;  /* per label value and span: on-CPU, off-CPU, run queue */
        uint64_t sample_period_ns; /* from jdk.ActiveSetting frequency, 0 = not seen */
};

/* The report_time groups of an event: "KEY=VALUE" per label of its context chain, then
 * "span=HEX" (libctx's span mirror labels are left out: the span is its own group). */
static unsigned time_groups(const struct jfr_reader *r, const struct jfr_value *v, char (*buf)[600],
                            const char **out)
{
        unsigned n = 0, hops = 0;
        uint64_t span = 0;

        for (const struct jfr_value *c = jfr_value_resolve(r, jfr_value_field(r, v, "context"));
             c && c->kind == JFR_V_OBJECT && hops < MAX_CHAIN && n + 1 < REPORT_TIME_MAX_GROUPS;
             c = jfr_value_resolve(r, jfr_value_field(r, c, "next")), hops++) {
                const char *k = jfr_value_str(r, jfr_value_field(r, c, "key"));
                const char *val = jfr_value_str(r, jfr_value_field(r, c, "value"));
                char ck[256], cv[300];

                if (!k || !val)
                        break;
                if (!strcmp(k, "span-id") || !strcmp(k, "root-span-id"))
                        continue;
                clean(ck, sizeof(ck), k);
                clean(cv, sizeof(cv), val);
                snprintf(buf[n], sizeof(buf[n]), "%s=%s", ck, cv);
                out[n] = buf[n];
                n++;
        }
        jfr_value_u64(r, jfr_value_field(r, v, "spanId"), &span);
        if (span) {
                snprintf(buf[n], sizeof(buf[n]), "span=%llx", (unsigned long long)span);
                out[n] = buf[n];
                n++;
        }
        return n;
}

static int offcpu_event(struct report *rep, const struct jfr_reader *r, const struct jfr_event *ev)
{
        static char buf[REPORT_TIME_MAX_GROUPS][600];
        const char *groups[REPORT_TIME_MAX_GROUPS];
        const struct jfr_value *v = ev->value;
        const struct jfr_chunk_info *ci = jfr_reader_chunk(r);
        uint64_t runq = 0, ticks = 0, tps = ci && ci->ticks_per_second ? ci->ticks_per_second : 1;
        unsigned n = time_groups(r, v, buf, groups);

        jfr_value_u64(r, jfr_value_field(r, v, "runQueueDelay"), &runq);
        jfr_value_u64(r, jfr_value_field(r, v, "duration"), &ticks);
        return report_time_offcpu(rep->time, groups, n,
                                  jfr_value_str(r, jfr_value_field(r, v, "blockedIn")),
                                  (uint64_t)((unsigned __int128)ticks * 1000000000ull / tps), runq);
}

/* Labels of a sample: jdk.ExecutionSample's `context`, a chain of ctxprof.types.Context
 * {key, value, next} nodes (docs/jfr.md). */
static int count_labels(struct report *rep, const struct jfr_reader *r, const struct jfr_value *v,
                        const char *stack)
{
        char key[4096];
        int n = 0;
        for (const struct jfr_value *c = jfr_value_resolve(r, jfr_value_field(r, v, "context"));
             c && c->kind == JFR_V_OBJECT && n < MAX_CHAIN;
             c = jfr_value_resolve(r, jfr_value_field(r, c, "next")), n++) {
                const char *k = jfr_value_str(r, jfr_value_field(r, c, "key"));
                const char *val = jfr_value_str(r, jfr_value_field(r, c, "value"));
                char cv[512], cl[256];
                if (!k || !val)
                        break;
                clean(cv, sizeof(cv), val);
                clean(cl, sizeof(cl), k);
                /* label key \x01 value, and label key \x01 value \x01 stack */
                snprintf(key, sizeof(key), "%s\x01%s", cl, cv);
                int err = count(&rep->labels, key, 1, NULL);
                if (err)
                        return err;
                snprintf(key, sizeof(key), "%s\x01%s\x01%s", cl, cv, stack);
                if ((err = count(&rep->pairs, key, 1, NULL)))
                        return err;
        }
        return 0;
}

static int sample_event(struct report *rep, const struct jfr_reader *r, const struct jfr_event *ev,
                        int depth)
{
        static char stack[2048];
        char key[4096], tname[200];
        const struct jfr_value *v = ev->value;
        render_stack(r, jfr_value_field(r, v, "stackTrace"), depth, stack, sizeof(stack));
        const struct jfr_value *th = jfr_value_field(r, v, "sampledThread");
        const char *name = jfr_value_str(r, jfr_value_field(r, th, "osName"));
        uint64_t tid = 0, ctx = 0, span = 0, root = 0;
        jfr_value_u64(r, jfr_value_field(r, th, "osThreadId"), &tid);
        clean(tname, sizeof(tname), name ? name : "?");
        snprintf(key, sizeof(key), "%s (tid %llu)", tname, (unsigned long long)tid);
        rep->samples++;
        int err = count(&rep->threads, key, 1, NULL);
        if (!err)
                err = count(&rep->stacks, stack, 1, NULL);
        if (err)
                return err;
        jfr_value_u64(r, jfr_value_field(r, v, "contextId"), &ctx);
        jfr_value_u64(r, jfr_value_field(r, v, "spanId"), &span);
        jfr_value_u64(r, jfr_value_field(r, v, "localRootSpanId"), &root);
        rep->context_samples += ctx || span || root;
        {
                static char buf[REPORT_TIME_MAX_GROUPS][600];
                const char *groups[REPORT_TIME_MAX_GROUPS];
                unsigned n = time_groups(r, v, buf, groups);

                if ((err = report_time_cpu(rep->time, groups, n)))
                        return err;
        }
        return ctx ? count_labels(rep, r, v, stack) : 0;
}

static void print_report(struct report *rep, int top)
{
        if (report_time_has_offcpu(rep->time))
                report_time_print(rep->time, stdout, top, rep->sample_period_ns);
        printf("\nsamples:  %llu, with context (labels or a span) %llu\n",
               (unsigned long long)rep->samples, (unsigned long long)rep->context_samples);
        uint32_t *ix = sorted(&rep->types);
        printf("\nevents:\n");
        for (uint32_t i = 0; ix && i < rep->types.names.n; i++)
                printf("  %-32s %10llu\n", jfr_strtab_str(&rep->types.names, ix[i]),
                       (unsigned long long)rep->types.n[ix[i]]);
        free(ix);

        ix = sorted(&rep->threads);
        printf("\nthreads (%u, by samples):\n", rep->threads.names.n);
        for (uint32_t i = 0; ix && i < rep->threads.names.n && (int)i < top; i++)
                printf("  %8llu  %s\n", (unsigned long long)rep->threads.n[ix[i]],
                       jfr_strtab_str(&rep->threads.names, ix[i]));
        free(ix);

        ix = sorted(&rep->stacks);
        printf("\ntop stacks (jdk.ExecutionSample, leaf first):\n");
        for (uint32_t i = 0; ix && i < rep->stacks.names.n && (int)i < top; i++)
                printf("  %5.1f%% %8llu  %s\n",
                       100.0 * (double)rep->stacks.n[ix[i]] /
                           (double)(rep->samples ? rep->samples : 1),
                       (unsigned long long)rep->stacks.n[ix[i]],
                       jfr_strtab_str(&rep->stacks.names, ix[i]));
        free(ix);

        if (!rep->labels.names.n) {
                printf("\nno labelled samples (jdk.ExecutionSample with a context)\n");
                return;
        }
        printf("\ntop stacks per label value (%llu samples with context):\n",
               (unsigned long long)rep->context_samples);
        uint32_t *lx = sorted(&rep->labels), *px = sorted(&rep->pairs);
        if (!lx || !px) {
                free(lx);
                free(px);
                return;
        }
        /* one block per label key, keys in order of their most frequent value */
        char done_keys[64][256];
        int ndone = 0;
        for (uint32_t i = 0; i < rep->labels.names.n; i++) {
                const char *kv = jfr_strtab_str(&rep->labels.names, lx[i]);
                size_t klen = strcspn(kv, "\x01");
                int seen = 0;
                for (int d = 0; d < ndone; d++)
                        seen |= strlen(done_keys[d]) == klen && !strncmp(done_keys[d], kv, klen);
                if (seen || ndone == 64 || klen >= 256)
                        continue;
                /* libctx's span mirrors: one value per request, the spans are fields */
                if ((klen == 7 && !strncmp(kv, "span-id", 7)) ||
                    (klen == 12 && !strncmp(kv, "root-span-id", 12)))
                        continue;
                snprintf(done_keys[ndone++], 256, "%.*s", (int)klen, kv);
                printf("  %.*s:\n", (int)klen, kv);
                int shown = 0;
                for (uint32_t j = 0; j < rep->labels.names.n && shown < top; j++) {
                        const char *kv2 = jfr_strtab_str(&rep->labels.names, lx[j]);
                        if (strncmp(kv2, kv, klen + 1))
                                continue;
                        shown++;
                        uint64_t total = rep->labels.n[lx[j]];
                        printf("    %s = %llu samples\n", kv2 + klen + 1,
                               (unsigned long long)total);
                        size_t plen = strlen(kv2);
                        int sh = 0;
                        for (uint32_t p = 0; p < rep->pairs.names.n && sh < 3; p++) {
                                const char *pk = jfr_strtab_str(&rep->pairs.names, px[p]);
                                if (strncmp(pk, kv2, plen) || pk[plen] != '\x01')
                                        continue;
                                sh++;
                                printf("      %5.1f%% %8llu  %s\n",
                                       100.0 * (double)rep->pairs.n[px[p]] / (double)total,
                                       (unsigned long long)rep->pairs.n[px[p]], pk + plen + 1);
                        }
                }
        }
        free(lx);
        free(px);
}

static void print_summary(struct report *rep, const struct jfr_reader *r, const char *path,
                          uint64_t chunks, uint64_t first_ns, uint64_t last_ns,
                          uint64_t bad_framing, int top)
{
        char a[64], b[64];
        printf("file:     %s\n", path);
        printf("chunks:   %llu", (unsigned long long)chunks);
        if (jfr_reader_trailing_bytes(r))
                printf(" (then %llu bytes that are not a complete chunk: ignored)",
                       (unsigned long long)jfr_reader_trailing_bytes(r));
        printf("\n");
        fmt_time(first_ns, a, sizeof(a));
        fmt_time(last_ns, b, sizeof(b));
        printf("time:     %s .. %s (%.1f s)\n", a, b, (double)(last_ns - first_ns) / 1e9);
        if (jfr_reader_bad_events(r) || bad_framing)
                printf("damaged:  %llu events skipped, %llu chunks with broken event framing\n",
                       (unsigned long long)jfr_reader_bad_events(r),
                       (unsigned long long)bad_framing);
        print_report(rep, top);
}

static int usage(FILE *f)
{
        fprintf(f, "usage: ctxprof report [--top N] [--depth N] FILE.jfr\n"
                   "       ctxprof report --format collapsed|pprof|otlp|html [-o OUT] FILE.jfr\n"
                   "Summarize a JFR file: chunks, time range, events per type, threads, top\n"
                   "stacks, and top stacks per label value. No JDK needed.\n"
                   "--format: instead, convert its CPU samples (jdk.ExecutionSample) to OUT or\n"
                   "standard output, with the labels and spans `record --format` writes:\n"
                   "collapsed (folded stacks), pprof (gzip'd profile.proto), otlp (one OTLP\n"
                   "ExportProfilesServiceRequest), html (one self-contained flame graph page:\n"
                   "search, zoom, filter and split by label key, label value, span or thread;\n"
                   "--html is the same). JFR has no process per sample: it is \"?\" (pid 0).\n");
        return f == stdout ? 0 : 2;
}

/* Before any output: is the file JFR with at least one complete chunk? Prints the error
 * and returns 1 if not; warns about a torn tail (*torn = its bytes) and returns 0. */
static int check_file(const char *path, uint64_t *torn)
{
        uint64_t good = 0, size = 0;
        enum jfr_file_tail tail = JFR_TAIL_NONE;
        int fd = open(path, O_RDONLY | O_CLOEXEC), err = fd < 0 ? -errno : 0;

        *torn = 0;
        if (!err)
                err = jfr_file_inspect(fd, &good, &size, &tail);
        if (fd >= 0)
                close(fd);
        if (err) {
                fprintf(stderr, "ctxprof report: %s: %s\n", path, strerror(-err));
                return 1;
        }
        if (!good) {
                if (!size)
                        fprintf(stderr, "ctxprof report: %s: empty file, not a JFR recording\n",
                                path);
                else if (tail == JFR_TAIL_PARTIAL)
                        fprintf(stderr,
                                "ctxprof report: %s: no complete chunk (%llu bytes of a chunk "
                                "cut short)\n",
                                path, (unsigned long long)size);
                else
                        fprintf(stderr, "ctxprof report: %s: not a JFR file\n", path);
                return 1;
        }
        if (tail == JFR_TAIL_PARTIAL) {
                *torn = size - good;
                fprintf(stderr,
                        "ctxprof report: warning: %s: the last %llu bytes are a chunk cut short "
                        "(its writer stopped inside it): ignored, reporting the first %llu "
                        "bytes\n",
                        path, (unsigned long long)*torn, (unsigned long long)good);
        }
        return 0;
}

/* What a conversion writes, and the file it came from. */
struct converted {
        struct flame_html *fh;    /* --html */
        struct jfr_convert *conv; /* --format collapsed|pprof|otlp */
        const char *path;
        uint64_t period_ns, first_ns, last_ns;
};

/* The conversion to out (NULL: stdout). 0, or 1 with the error printed. */
static int write_converted(const struct converted *cv, const char *out)
{
        char title[512];
        FILE *f = out ? fopen(out, "we") : stdout;
        int err = f ? 0 : -errno;

        snprintf(title, sizeof(title), "ctxprof report %s", cv->path);
        if (!err)
                err = cv->fh ? flame_html_write(cv->fh, f, title)
                             : jfr_convert_write(cv->conv, f, cv->period_ns, cv->first_ns,
                                                 cv->last_ns);
        if (f && f != stdout && fclose(f) && !err)
                err = -errno;
        if (!err)
                return 0;
        fprintf(stderr, "ctxprof report: writing %s: %s\n", out ? out : "standard output",
                strerror(-err));
        return 1;
}

/* What the flags ask for. */
struct report_args {
        int top, depth, html;
        const char *out, *format, *path;
};

/* Parse stage: -1 and *a on success, else the exit status (usage printed). */
static int parse_report_args(int argc, char **argv, struct report_args *a)
{
        static const struct option opts[] = {
            {"top", required_argument, NULL, 't'},
            {"depth", required_argument, NULL, 'd'},
            {"html", no_argument, NULL, 'H'},
            {"output", required_argument, NULL, 'o'},
            {"format", required_argument, NULL, 'F'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;

        *a = (struct report_args){.top = 10, .depth = 6};
        optind = 1;
        while ((c = getopt_long(argc, argv, "t:d:o:h", opts, NULL)) != -1) {
                switch (c) {
                case 't':
                        a->top = atoi(optarg);
                        break;
                case 'd':
                        a->depth = atoi(optarg);
                        break;
                case 'H':
                        a->html = 1;
                        break;
                case 'F':
                        a->format = optarg;
                        if (!strcmp(a->format, "html"))
                                a->html = 1;
                        else if (strcmp(a->format, "collapsed") && strcmp(a->format, "pprof") &&
                                 strcmp(a->format, "otlp"))
                                return usage(stderr);
                        break;
                case 'o':
                        a->out = optarg;
                        break;
                case 'h':
                        return usage(stdout);
                default:
                        return usage(stderr);
                }
        }
        if (optind != argc - 1 || a->top <= 0 || a->depth <= 0 ||
            (a->out && !a->html && !a->format))
                return usage(stderr);
        a->path = argv[optind];
        return -1;
}

static int cmd_report(int argc, char **argv)
{
        struct report_args a;
        int parsed = parse_report_args(argc, argv, &a);

        if (parsed >= 0)
                return parsed;
        int top = a.top, depth = a.depth, html = a.html;
        const char *out = a.out, *format = a.format;
        const char *path = a.path;
        struct jfr_reader *r;
        uint64_t torn;
        if (check_file(path, &torn))
                return 1;
        int err = jfr_reader_open(path, &r);
        if (err) {
                fprintf(stderr, "ctxprof report: %s: %s\n", path, strerror(-err));
                return 1;
        }
        struct flame_html *fh = NULL;
        if (html && (err = flame_html_new(&fh))) {
                fprintf(stderr, "ctxprof report: %s\n", strerror(-err));
                jfr_reader_close(r);
                return 1;
        }
        struct jfr_convert *conv = NULL;
        if (format && !html && !(conv = jfr_convert_new(format, NULL))) {
                fprintf(stderr, "ctxprof report: out of memory\n");
                flame_html_free(fh);
                jfr_reader_close(r);
                return 1;
        }
        struct report rep;
        memset(&rep, 0, sizeof(rep));
        rep.time = report_time_new();
        if (!rep.time) {
                jfr_reader_close(r);
                fprintf(stderr, "ctxprof report: out of memory\n");
                return 1;
        }
        struct counter *all[] = {&rep.types, &rep.threads, &rep.stacks, &rep.labels, &rep.pairs};
        for (size_t i = 0; i < 5; i++)
                jfr_strtab_init(&all[i]->names);
        uint64_t chunks = 0, first_ns = UINT64_MAX, last_ns = 0, bad_framing = 0;
        int rc;
        while ((rc = jfr_reader_next_chunk(r)) == 1) {
                const struct jfr_chunk_info *ci = jfr_reader_chunk(r);
                chunks++;
                if (ci->start_nanos < first_ns)
                        first_ns = ci->start_nanos;
                if (ci->start_nanos + ci->duration_nanos > last_ns)
                        last_ns = ci->start_nanos + ci->duration_nanos;
                struct jfr_event ev;
                int e;
                while ((e = jfr_reader_next_event(r, &ev)) == 1 && !err) {
                        err = count(&rep.types, ev.type->name, 1, NULL);
                        if (!err && !strcmp(ev.type->name, "jdk.ExecutionSample"))
                                err = fh     ? report_html_event(fh, r, &ev)
                                      : conv ? jfr_convert_event(conv, r, &ev)
                                             : sample_event(&rep, r, &ev, depth);
                        else if (!err && !strcmp(ev.type->name, "ctxprof.OffCPU"))
                                err = offcpu_event(&rep, r, &ev);
                        else if (!err && !strcmp(ev.type->name, "jdk.ActiveSetting"))
                                jfr_setting_period(r, &ev, &rep.sample_period_ns);
                }
                bad_framing += e < 0;
        }
        /* nothing readable (the first chunk is corrupt): the error alone, no empty report */
        int status = 0;
        if (chunks && (fh || conv)) {
                struct converted cv = {fh, conv, path, rep.sample_period_ns, first_ns, last_ns};

                status = write_converted(&cv, out);
        } else if (chunks)
                print_summary(&rep, r, path, chunks, first_ns, last_ns, bad_framing, top);
        /* a torn tail (already warned about) is where a reader of the complete chunks stops */
        if (rc < 0 && !err && torn && jfr_reader_trailing_bytes(r) == torn)
                rc = 0;
        if (rc < 0 || err) {
                fprintf(stderr, "ctxprof report: %s: %s after %llu complete chunks\n", path,
                        rc < 0 ? "corrupt or incomplete chunk" : strerror(-err),
                        (unsigned long long)chunks);
                status = 1;
        }
        for (size_t i = 0; i < 5; i++)
                counter_free(all[i]);
        flame_html_free(fh);
        jfr_convert_free(conv);
        report_time_free(rep.time);
        jfr_reader_close(r);
        return status;
}

const struct ctxprof_cmd report_cmd = {"report", "summarize a JFR file (no JDK needed)",
                                       cmd_report};
