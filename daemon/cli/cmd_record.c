/* SPDX-License-Identifier: MIT */
/*
 * cmd_record.c — `ctxprof record`, in four stages: parse (options and the checks that need
 * no setup), setup (COMMAND started through launch.c, the sampler, the targets, then the
 * output opened), loop (sample until the duration ends, the targets exit or SIGINT/SIGTERM
 * arrives) and finish (drain, write the output: JFR chunks through jfr_sink or collapsed
 * stacks, then the counters through record_stats.c). The only place in the sampler's area
 * that prints; it turns every library error into an actionable message and a non-zero exit
 * status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli/cmd.h"
#include "cli/record_upload.h"
#include "cli/launch.h"
#include "cli/record_stats.h"
#include "sink/collapsed.h"
#include "service/config.h"
#include "service/privileges.h"
#include "service/session.h"
#include "util/parser_client.h"
#include "sink/engine_stats.h"
#include "sink/jfr_sink.h"
#include "engine/sample_rate.h"
#include "sink/flame_html.h"
#include "sink/otlp.h"
#include "sink/pprof.h"
#include "ctxprof/tls_target.h"
#include "engine/sampler.h"
#include "util/clock.h"
#include "util/event_loop.h"
#include "util/grow.h"

static volatile sig_atomic_t stop_requested; /* the signal that asked to stop, 0 = none */

static void on_signal(int sig)
{
        stop_requested = sig;
}

static void help(FILE *f)
{
        fprintf(
            f,
            "usage: ctxprof record -p PID[,PID...] [OPTIONS]\n"
            "       ctxprof record [OPTIONS] -- COMMAND [ARGS...]\n"
            "\n"
            "Sample the threads of running processes (or of COMMAND and the processes it\n"
            "starts) with perf events and eBPF. Every sample carries the thread's span id and\n"
            "Custom Labels (when the target uses libctx or another Custom Labels v1 writer)\n"
            "and its stack. Threads started after attach are sampled too. Ctrl-C / SIGTERM\n"
            "stops, drains and writes everything collected.\n"
            "\n"
            "options:\n"
            "  -p, --pid PID[,PID...]     processes to sample (any number, up to 4096; may be\n"
            "                             given again)\n"
            "  -F, --freq HZ              samples per second per CPU (default 99)\n"
            "  -d, --duration TIME        stop after TIME (e.g. 30, 30s, 500ms, 2m); a COMMAND\n"
            "                             still running then gets SIGTERM\n"
            "  -o, --output FILE          write to FILE (default: standard output); FILE is\n"
            "                             created or truncated only once setup succeeded\n"
            "      --format jfr|collapsed|pprof|otlp|html\n"
            "                             jfr: JDK Flight Recorder chunks (default when FILE\n"
            "                             ends in .jfr; needs -o); collapsed: folded stacks\n"
            "                             (flamegraph.pl, speedscope):\n"
            "                             PROC-PID;THREAD;key=value...;frames N\n"
            "                             pprof: gzip'd profile.proto, labels as sample\n"
            "                             labels (default when FILE ends in .pb.gz)\n"
            "                             otlp: one OTLP ExportProfilesServiceRequest\n"
            "                             (profiles v1development), labels as sample\n"
            "                             attributes (default when FILE ends in .otlp)\n"
            "                             html: one self-contained flame graph page, with\n"
            "                             search, zoom, filter and split by label or span\n"
            "                             (default when FILE ends in .html)\n"
            "      --chunk-period TIME    jfr: write a complete chunk every TIME (default 60s)\n"
            "      --parser-user USER     the user the parser helper runs as (default nobody)\n"
            "      --ring-size SIZE       the sample ring (e.g. 64M; default: a second of every\n"
            "                             CPU's samples at the rate, 8M to 128M)\n"
            "      --max-stacks N         jfr: distinct stacks per chunk (default 16384, about\n"
            "                             1.6 KiB each); more become [unknown stack], counted\n"
            "      --call-graph fp|dwarf|dwarf-copy|dwarf-check\n"
            "                             fp: frame pointers (default, cheapest); dwarf:\n"
            "                             unwind with .eh_frame in the kernel; dwarf-copy:\n"
            "                             copy 16 KiB of user stack, unwind in user space\n"
            "                             (libdwfl); dwarf-check: both, libdwfl's recorded,\n"
            "                             compared\n"
            "      --event cpu-clock|cycles|off-cpu|wall\n"
            "                             cpu-clock, cycles: CPU samples (cycles needs a\n"
            "                             hardware PMU); off-cpu: the intervals a thread\n"
            "                             is blocked (sched_switch), with the blocking stack\n"
            "                             and its context; wall: cpu-clock samples plus\n"
            "                             off-CPU intervals. collapsed values are then\n"
            "                             microseconds\n"
            "      --offcpu-min TIME      off-cpu/wall: drop shorter intervals in the kernel\n"
            "                             (default 1ms)\n"
            "      --filter TERM[,TERM...]\n"
            "                             record only samples whose context matches every\n"
            "                             TERM (repeatable: all must match): has-context,\n"
            "                             has-no-context, KEY (has label KEY), KEY=VALUE,\n"
            "                             !KEY, !KEY=VALUE; the others are counted, not\n"
            "                             stored\n"
            "      --span-frames          add a span=ID pseudo-frame after the labels\n"
            "      --no-kernel            user frames only\n"
            "      --stats-json FILE      at exit, once the recording is written, write its\n"
            "                             counters (those printed at exit) to FILE as one\n"
            "                             JSON object (also with -q)\n"
            "      --upload URL           then send the file (jfr or pprof) to Pyroscope's\n"
            "                             URL/ingest, or (otlp) gzip'd to an OTLP receiver's\n"
            "                             URL/v1development/profiles;\n"
            "                             --upload-app NAME, --upload-tags k=v,..,\n"
            "                             --upload-header-file F (\"Name: value\" lines),\n"
            "                             --upload-basic-auth-file F (user:password),\n"
            "                             --upload-timeout TIME (default 30s)\n"
            "  -q, --quiet                no status line, no counters\n"
            "  -h, --help                 this text\n"
            "\n"
            "With -- COMMAND, processes forked by COMMAND are followed; with -p, only the\n"
            "given processes (and all their threads). Needs root (CAP_BPF, CAP_PERFMON,\n"
            "CAP_SYS_PTRACE) and a kernel with BTF (/sys/kernel/btf/vmlinux).\n"
            "\n"
            "Exit status: 0 when the recording was written; with -- COMMAND that ended on\n"
            "its own, COMMAND's status instead (128+N if signal N killed it); 1 when\n"
            "recording failed, 2 for a usage error, 128+N when signal N (SIGINT, SIGTERM)\n"
            "came before recording started (nothing is written, COMMAND is not run);\n"
            "3 when the recording was written but --upload failed (the file is kept).\n");
}

#define PIDS_FIRST_CAP 64

/* -p LIST (the option may be given again: the lists add up) into *pids, each process once;
 * at most CTXPROF_MAX_TARGETS in all (what one recording samples at once). 0, or 2 with the
 * bad token (or the count) printed. */
static int parse_pids(char *s, pid_t **pids, size_t *n, size_t *cap)
{
        char *tok, *save = NULL, *end;
        size_t before = *n;

        for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                size_t i;
                long v;

                errno = 0;
                v = strtol(tok, &end, 10);
                if (errno || *end || v <= 0 || v > INT_MAX) {
                        fprintf(stderr,
                                "ctxprof record: bad PID '%s' in -p (a comma-separated list of "
                                "process ids)\n",
                                tok);
                        return 2;
                }
                for (i = 0; i < *n && (*pids)[i] != (pid_t)v; i++)
                        ;
                if (i < *n)
                        continue; /* named twice: sampled once */
                if (*n == CTXPROF_MAX_TARGETS) {
                        fprintf(stderr,
                                "ctxprof record: -p names more than %u processes, the most one "
                                "recording samples at once\n",
                                CTXPROF_MAX_TARGETS);
                        return 2;
                }
                if (grow_array((void **)pids, cap, sizeof(**pids), *n + 1, PIDS_FIRST_CAP)) {
                        fprintf(stderr, "ctxprof record: out of memory\n");
                        return 2;
                }
                (*pids)[(*n)++] = (pid_t)v;
        }
        if (*n == before) {
                fprintf(stderr, "ctxprof record: -p names no process\n");
                return 2;
        }
        return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        if (level == LIBBPF_WARN && getenv("CTXPROF_DEBUG"))
                return vfprintf(stderr, fmt, ap);
        return 0;
}

#define MAX_SAMPLE_RATE_PATH "/proc/sys/kernel/perf_event_max_sample_rate"

/* The kernel's limit for a frequency-mode perf event (the kernel lowers it on its own when
 * sampling interrupts take too long), or -1 if unreadable. */
static long max_sample_rate(void)
{
        FILE *f = fopen(MAX_SAMPLE_RATE_PATH, "re");
        long v = -1;

        if (f) {
                if (fscanf(f, "%ld", &v) != 1)
                        v = -1;
                fclose(f);
        }
        return v;
}

/* 1 (and a message) if -F is above the kernel's limit: perf_event_open's EINVAL says nothing. */
static int freq_above_limit(unsigned freq)
{
        long max = max_sample_rate();

        if (max < 0 || freq <= (unsigned long)max)
                return 0;
        fprintf(stderr,
                "ctxprof: -F %u is above the kernel's limit of %ld samples per second (%s, which "
                "the kernel lowers when sampling interrupts take too long): use -F %ld or less, "
                "or raise it as root: sysctl kernel.perf_event_max_sample_rate=%u\n",
                freq, max, MAX_SAMPLE_RATE_PATH, max, freq);
        return 1;
}

/* Lower -F to what one consumer carries on this host (the rule: engine/sample_rate.h). */
static void cap_rate(struct sampler_opts *o)
{
        unsigned cap = sample_rate_cap(o->call_graph, 0);

        if (o->freq <= cap)
                return;
        fprintf(stderr,
                "ctxprof: -F %u is more than one consumer can carry on this host with "
                "--call-graph %s (%u samples/s over all CPUs): sampling at %u Hz\n",
                o->freq, o->call_graph ? "dwarf" : "fp",
                o->call_graph ? SAMPLE_RATE_HOST_DWARF : SAMPLE_RATE_HOST_FP, cap);
        o->freq = cap;
}

static void report_setup_error(int err, enum sampler_stage stage, const struct sampler_opts *o)
{
        const char *what = strerror(-err);

        switch (stage) {
        case SAMPLER_STAGE_BTF:
                fprintf(stderr,
                        "ctxprof: this kernel has no BTF (/sys/kernel/btf/vmlinux missing); "
                        "ctxprof needs CONFIG_DEBUG_INFO_BTF=y\n");
                return;
        case SAMPLER_STAGE_OPEN:
        case SAMPLER_STAGE_LOAD:
                if (err == -EPERM || err == -EACCES)
                        fprintf(stderr,
                                "ctxprof: not permitted to load BPF programs (%s): run as "
                                "root or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE\n",
                                what);
                else
                        fprintf(stderr,
                                "ctxprof: loading the BPF sampler failed: %s (set "
                                "CTXPROF_DEBUG=1 for the verifier log)\n",
                                what);
                return;
        case SAMPLER_STAGE_PERF:
                if (err == -EINVAL && freq_above_limit(o->freq))
                        return; /* lowered by the kernel since the check at start */
                if (o->event == SAMPLER_EV_CYCLES &&
                    (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV || err == -EINVAL))
                        fprintf(stderr,
                                "ctxprof: no hardware PMU for the 'cycles' event here (%s); "
                                "use --event cpu-clock\n",
                                what);
                else if (err == -EACCES || err == -EPERM)
                        fprintf(stderr,
                                "ctxprof: not permitted to open perf events (%s): "
                                "run as root or with CAP_PERFMON, or lower "
                                "/proc/sys/kernel/perf_event_paranoid\n",
                                what);
                else
                        fprintf(stderr, "ctxprof: perf_event_open failed: %s\n", what);
                return;
        case SAMPLER_STAGE_ATTACH:
                fprintf(stderr, "ctxprof: attaching the BPF programs failed: %s\n", what);
                return;
        case SAMPLER_STAGE_RING:
        case SAMPLER_STAGE_NONE:
                fprintf(stderr, "ctxprof: setting up the sample ring failed: %s\n", what);
                return;
        }
}

static void print_status(struct sampler *s, uint64_t *last_n, uint64_t *last_ms)
{
        struct sampler_stats st;
        uint64_t now = mono_ms();
        double dt = (double)(now - *last_ms) / 1000.0;

        sampler_get_stats(s, &st);
        fprintf(stderr, "\r\033[Ksamples/s %.0f  threads %llu  lost %llu  with context %.1f%%",
                dt > 0 ? (double)(st.received - *last_n) / dt : 0.0, (unsigned long long)st.threads,
                (unsigned long long)st.lost,
                st.received ? 100.0 * (double)st.with_context / (double)st.received : 0.0);
        fflush(stderr);
        *last_n = st.received;
        *last_ms = now;
}

/*
 * Before any setup: can FILE be written, without touching it? An existing regular file is
 * opened for writing (not truncated); a new one needs a writable directory; anything else
 * (a device, a FIFO) is left alone, opening it could block or have effects. 0, or a message
 * and -1. The file itself is opened (and truncated) only once setup succeeded.
 */
static int check_output(const char *path)
{
        char dir[PATH_MAX];
        const char *slash;
        struct stat st;
        int fd;

        if (!stat(path, &st)) {
                if (S_ISDIR(st.st_mode)) {
                        errno = EISDIR;
                        goto fail;
                }
                if (!S_ISREG(st.st_mode))
                        return 0;
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        close(fd);
                        return 0;
                }
        } else if (errno == ENOENT) {
                slash = strrchr(path, '/');
                if (!slash)
                        snprintf(dir, sizeof(dir), ".");
                else
                        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path ? slash - path : 1),
                                 path);
                if (!access(dir, W_OK | X_OK))
                        return 0;
        }
fail:
        fprintf(stderr, "ctxprof: cannot write %s: %s\n", path, strerror(errno));
        return -1;
}

/* Checks a pid before any setup so the common mistakes get a precise message. */
static int check_pid(pid_t pid)
{
        if (kill(pid, 0) == 0)
                return 0;
        if (errno == ESRCH)
                fprintf(stderr, "ctxprof: no such process: %d\n", (int)pid);
        else if (errno == EPERM)
                fprintf(stderr,
                        "ctxprof: not permitted to profile process %d: run as root or "
                        "with CAP_SYS_PTRACE\n",
                        (int)pid);
        else
                fprintf(stderr, "ctxprof: process %d: %s\n", (int)pid, strerror(errno));
        return -1;
}

/* What the command line asked for. */
struct record_opts {
        struct sampler_opts o;
        pid_t *pids; /* -p, each once (malloc'ed) */
        size_t npids, pids_cap;
        char **cmd; /* -- COMMAND ARGS..., or NULL with -p */
        uint64_t duration_ms;
        const char *outpath;
        const char *format; /* "jfr", "collapsed" or "pprof" once parsed */
        const char *stats_path;
        uint64_t chunk_ms;
        unsigned max_stacks;     /* 0 = the trace table's default */
        const char *parser_user; /* --parser-user; NULL = PARSER_USER_DEFAULT */
        int span_frames, quiet;
        struct sigaction orig_int, orig_term; /* what ctxprof inherited: the command's */
        struct record_upload_opts up;         /* --upload*: url "" = none */
        /* every --filter, joined by ',' (a JFR setting): each term fits a label */
        char filter_text[CONTEXT_FILTER_MAX_TERMS *
                         (CTXPROF_LABEL_KEY_MAX + CTXPROF_LABEL_VAL_MAX + 3)];
};

/* The loop stage on the event loop (util/event_loop.h), beside the session's drain: the JFR
 * chunk cut, the terminal status line and the duration's end. */
struct record_loop {
        struct recording *r;
        int cut, status, end;     /* deadline ids */
        int done;                 /* stop: duration over, targets gone, a ring error */
        int tty;                  /* the status line is shown */
        uint64_t last_n, last_ms; /* the status line's last count and time */
        uint64_t cut_tried;       /* the last loop_cut (a cut it left for later) */
};

/* One recording, from setup to cleanup. */
struct recording {
        const struct record_opts *ro;
        struct launch cmd;    /* cmd.pid -1 with -p */
        struct session *ss;   /* the sampler and the parser helper (service/session.h) */
        struct sampler *s;    /* the session's */
        struct event_loop *l; /* the loop stage's, created at setup */
        struct collapsed *c;
        struct jfr_sink *js;
        struct sample_sink jfr;
        struct record_loop rl;
        FILE *out;
        int started;                           /* setup succeeded: sampling into the output */
        int written;                           /* the output is complete (--upload sends it) */
        uint64_t start_wall_ns, start_mono_ns; /* when it started (pprof's time, duration) */
};

enum {
        OPT_FORMAT = 256,
        OPT_CALLGRAPH,
        OPT_EVENT,
        OPT_SPAN,
        OPT_NOKERNEL,
        OPT_CHUNK,
        OPT_MAXSTACKS,
        OPT_RINGSIZE,
        OPT_STATS_JSON,
        OPT_OFFCPU_MIN,
        OPT_FILTER,
        OPT_PARSER_USER,
        OPT_UPLOAD, /* then one per --upload-NAME, in upload_opt_names order */
};
static const char *const upload_opt_names[] = {
    "", "app", "tags", "header-file", "basic-auth-file", "timeout"};
#define N_UPLOAD_OPTS (sizeof(upload_opt_names) / sizeof(upload_opt_names[0]))

/* Parse stage, what is sampled and how (the sampler's options): 0, the exit status of a
 * usage error (printed), or -1 when opt is not one of these. */
static int parse_sampling_option(int opt, char *arg, struct record_opts *ro)
{
        int v;

        switch (opt) {
        case 'F':
                if (config_parse_count(arg, 1, CONFIG_FREQ_MAX, &ro->o.freq)) {
                        fprintf(stderr, "ctxprof record: bad frequency '%s' (1..%d)\n", arg,
                                CONFIG_FREQ_MAX);
                        return 2;
                }
                return 0;
        case OPT_RINGSIZE: {
                uint64_t bytes;

                if (config_parse_size(arg, 0, CONFIG_RING_SIZE_MAX, &bytes)) {
                        fprintf(stderr, "ctxprof record: bad --ring-size '%s' (a size up to 1G)\n",
                                arg);
                        return 2;
                }
                ro->o.ring_bytes = (size_t)bytes;
                return 0;
        }
        case OPT_CALLGRAPH:
                v = sampling_name_parse(SAMPLING_NAMES_CALLGRAPH, arg);
                if (v < 0) {
                        fprintf(
                            stderr,
                            "ctxprof record: --call-graph fp, dwarf, dwarf-copy or dwarf-check\n");
                        return 2;
                }
                ro->o.call_graph = v;
                return 0;
        case OPT_EVENT:
                v = sampling_name_parse(SAMPLING_NAMES_EVENT, arg);
                if (v < 0) {
                        fprintf(stderr,
                                "ctxprof record: --event cpu-clock, cycles, off-cpu or wall\n");
                        return 2;
                }
                ro->o.event = v;
                return 0;
        case OPT_OFFCPU_MIN: {
                uint64_t us;

                if (config_parse_duration_us(arg, 0, CONFIG_OFFCPU_MIN_MAX_US, &us)) {
                        fprintf(stderr, "ctxprof record: bad --offcpu-min '%s' (e.g. 500us, 2ms)\n",
                                arg);
                        return 2;
                }
                ro->o.offcpu_min_ns = us ? us * NS_PER_US : 1; /* 0: every interval */
                return 0;
        }
        case OPT_FILTER: {
                const char *why = NULL;

                size_t n = strlen(ro->filter_text);

                if (context_filter_add(&ro->o.filter, arg, &why)) {
                        fprintf(stderr, "ctxprof record: bad --filter '%s': %s\n", arg, why);
                        return 2;
                }
                /* fits: the terms were accepted, so each is within a label's size */
                snprintf(ro->filter_text + n, sizeof(ro->filter_text) - n, "%s%s", n ? "," : "",
                         arg);
                return 0;
        }
        case OPT_NOKERNEL:
                ro->o.kernel_stacks = 0;
                return 0;
        default:
                return -1;
        }
}

/* Parse stage: one option. 0, or the exit status of a usage error (printed). */
static int parse_option(int opt, char *arg, struct record_opts *ro)
{
        int rc = parse_sampling_option(opt, arg, ro);

        if (rc >= 0)
                return rc;
        switch (opt) {
        case 'p':
                return parse_pids(arg, &ro->pids, &ro->npids, &ro->pids_cap);
        case 'd':
                if (config_parse_duration(arg, 0, CONFIG_DURATION_MAX_MS, &ro->duration_ms)) {
                        fprintf(stderr, "ctxprof record: bad duration '%s' (at most 3650d)\n", arg);
                        return 2;
                }
                return 0;
        case 'o':
                ro->outpath = arg;
                return 0;
        case OPT_FORMAT:
                if (strcmp(arg, "collapsed") && strcmp(arg, "jfr") && strcmp(arg, "pprof") &&
                    strcmp(arg, "otlp") && strcmp(arg, "html")) {
                        fprintf(stderr,
                                "ctxprof record: unknown format '%s' (jfr, collapsed, pprof, "
                                "otlp or html)\n",
                                arg);
                        return 2;
                }
                ro->format = arg;
                return 0;
        case OPT_CHUNK:
                if (config_parse_duration(arg, CONFIG_CHUNK_PERIOD_MIN_MS,
                                          CONFIG_CHUNK_PERIOD_MAX_MS, &ro->chunk_ms)) {
                        fprintf(stderr, "ctxprof record: bad chunk period '%s' (100ms to 1h)\n",
                                arg);
                        return 2;
                }
                return 0;
        case OPT_PARSER_USER:
                ro->parser_user = arg;
                return 0;
        case OPT_MAXSTACKS:
                if (config_parse_count(arg, CONFIG_MAX_STACKS_MIN, CONFIG_MAX_STACKS_MAX,
                                       &ro->max_stacks)) {
                        fprintf(stderr, "ctxprof record: bad --max-stacks '%s' (%d to %d)\n", arg,
                                CONFIG_MAX_STACKS_MIN, CONFIG_MAX_STACKS_MAX);
                        return 2;
                }
                return 0;
        case OPT_STATS_JSON:
                ro->stats_path = arg;
                return 0;
        case OPT_SPAN:
                ro->span_frames = 1;
                return 0;
        case 'q':
                ro->quiet = 1;
                return 0;
        default:
                if (opt >= OPT_UPLOAD && opt < OPT_UPLOAD + (int)N_UPLOAD_OPTS)
                        return record_upload_option(&ro->up, upload_opt_names[opt - OPT_UPLOAD],
                                                    arg);
                help(stderr);
                return 2;
        }
}

/* Parse stage: the options, then the checks that need no setup (targets exist, -F within
 * the kernel's limit, the outputs writable). From the end of the checks on, SIGINT/SIGTERM
 * stop cleanly: before recording starts they abandon the setup (a started command is
 * killed, nothing is written), after it they end it. -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct record_opts *ro)
{
        static const struct option longopts[] = {
            {"pid", required_argument, NULL, 'p'},
            {"freq", required_argument, NULL, 'F'},
            {"duration", required_argument, NULL, 'd'},
            {"output", required_argument, NULL, 'o'},
            {"format", required_argument, NULL, OPT_FORMAT},
            {"chunk-period", required_argument, NULL, OPT_CHUNK},
            {"max-stacks", required_argument, NULL, OPT_MAXSTACKS},
            {"ring-size", required_argument, NULL, OPT_RINGSIZE},
            {"call-graph", required_argument, NULL, OPT_CALLGRAPH},
            {"event", required_argument, NULL, OPT_EVENT},
            {"span-frames", no_argument, NULL, OPT_SPAN},
            {"no-kernel", no_argument, NULL, OPT_NOKERNEL},
            {"stats-json", required_argument, NULL, OPT_STATS_JSON},
            {"offcpu-min", required_argument, NULL, OPT_OFFCPU_MIN},
            {"filter", required_argument, NULL, OPT_FILTER},
            {"parser-user", required_argument, NULL, OPT_PARSER_USER},
            {"upload", required_argument, NULL, OPT_UPLOAD},
            {"upload-app", required_argument, NULL, OPT_UPLOAD + 1},
            {"upload-tags", required_argument, NULL, OPT_UPLOAD + 2},
            {"upload-header-file", required_argument, NULL, OPT_UPLOAD + 3},
            {"upload-basic-auth-file", required_argument, NULL, OPT_UPLOAD + 4},
            {"upload-timeout", required_argument, NULL, OPT_UPLOAD + 5},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        struct sigaction sa;
        int opt, rc;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "+p:F:d:o:qh", longopts, NULL)) != -1) {
                if (opt == 'h') {
                        help(stdout);
                        return 0;
                }
                rc = parse_option(opt, optarg, ro);
                if (rc)
                        return rc;
        }
        if ((optind < argc) == (ro->npids > 0)) {
                fprintf(stderr, "ctxprof record: give either -p PID[,PID...] or -- COMMAND\n\n");
                help(stderr);
                return 2;
        }
        for (size_t k = 0; k < ro->npids; k++)
                if (check_pid(ro->pids[k]))
                        return 1;
        if (freq_above_limit(ro->o.freq))
                return 1;
        cap_rate(&ro->o);
        ro->cmd = optind < argc ? argv + optind : NULL;
        ro->o.follow_children = ro->cmd != NULL;
        ro->o.per_task = 1; /* a PID list or a command: non-targets take no interrupt */

        /* No SA_RESTART: a blocking setup step (an output FIFO, waiting for the command)
         * returns EINTR. */
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &ro->orig_int); /* the command gets these back */
        sigaction(SIGTERM, &sa, &ro->orig_term);

        if (!ro->format) {
                size_t n = ro->outpath ? strlen(ro->outpath) : 0;
                ro->format = n > 4 && !strcmp(ro->outpath + n - 4, ".jfr")     ? "jfr"
                             : n > 6 && !strcmp(ro->outpath + n - 6, ".pb.gz") ? "pprof"
                             : n > 5 && !strcmp(ro->outpath + n - 5, ".html")  ? "html"
                             : n > 5 && !strcmp(ro->outpath + n - 5, ".otlp")  ? "otlp"
                                                                               : "collapsed";
        }
        if ((!strcmp(ro->format, "pprof") || !strcmp(ro->format, "otlp")) &&
            SAMPLER_EV_HAS_OFFCPU(ro->o.event)) {
                fprintf(stderr,
                        "ctxprof record: --format %s takes CPU samples only: use jfr "
                        "or collapsed with --event off-cpu or wall\n",
                        ro->format);
                return 2;
        }
        if (!strcmp(ro->format, "jfr") && !ro->outpath) {
                fprintf(stderr, "ctxprof record: --format jfr needs -o FILE\n");
                return 2;
        }
        if (ro->up.t.url[0] &&
            (!ro->outpath || !strcmp(ro->format, "collapsed") || !strcmp(ro->format, "html"))) {
                fprintf(stderr, "ctxprof record: --upload needs -o FILE in jfr, pprof or otlp\n");
                return 2;
        }
        /* A bad path fails now; an existing file is kept until setup succeeded. */
        if (ro->outpath && check_output(ro->outpath))
                return 1;
        if (ro->stats_path && check_output(ro->stats_path))
                return 1;
        return -1;
}

/* Setup stage, the targets: COMMAND released to its exec (where it stops) and added, or the
 * -p processes. 0 or -1 (printed unless a signal asked to stop). */
static int add_targets(struct recording *r)
{
        const struct record_opts *ro = r->ro;
        size_t i;
        int err;

        if (ro->cmd) {
                if (launch_exec(&r->cmd, ro->cmd, &stop_requested))
                        return -1;
                err = sampler_add_target(r->s, r->cmd.pid);
                if (stop_requested)
                        return -1;
                if (err) {
                        fprintf(stderr, "ctxprof: cannot sample %s: %s\n", ro->cmd[0],
                                strerror(-err));
                        return -1;
                }
        }
        for (i = 0; i < ro->npids; i++) {
                err = sampler_add_target(r->s, ro->pids[i]);
                if (err == -ESRCH) {
                        fprintf(stderr, "ctxprof: process %d exited before it could be attached\n",
                                (int)ro->pids[i]);
                        return -1;
                } else if (err == -EPERM || err == -EACCES) {
                        fprintf(stderr, "ctxprof: not permitted to read process %d: %s\n",
                                (int)ro->pids[i], strerror(-err));
                        return -1;
                } else if (err) {
                        fprintf(stderr, "ctxprof: cannot sample process %d: %s\n", (int)ro->pids[i],
                                strerror(-err));
                        return -1;
                }
        }
        sampler_locate_wait(r->s); /* all at once: a thousand PIDs wait no longer than one */
        return 0;
}

/* Setup stage, the session (service/session.h): the sampler, then the parser helper (not
 * with debuginfod opted in: it has no network). 0 or -1 (printed unless a signal asked to
 * stop). */
static int start_session(struct recording *r, const struct sample_sink *sink)
{
        const struct record_opts *ro = r->ro;
        struct session_opts so = {.sampler = ro->o,
                                  .sink = *sink,
                                  .parser_user = ro->parser_user,
                                  .no_parser_with_debuginfod = 1};
        struct session_error e;
        int err = session_new(&so, &r->ss, &e);

        if (err && e.step == SESSION_STEP_PARSER)
                fprintf(stderr, "ctxprof: starting the parser helper failed: %s\n", e.why);
        else if (err && !stop_requested)
                report_setup_error(err, e.stage, &ro->o);
        if (err)
                return -1;
        r->s = session_sampler(r->ss);
        if (session_debuginfod(r->ss) == 0 && !ro->quiet)
                fprintf(stderr, "ctxprof: not using DEBUGINFOD_URLS (set CTXPROF_DEBUGINFOD=1 "
                                "to allow it: see docs/daemon.md)\n");
        return 0;
}

/* Setup stage, last step (BPF loaded, perf events open, the helper started, targets added;
 * one thread): only the daemon's capabilities kept, and CAP_DAC_OVERRIDE for the output
 * (docs/daemon.md, "Trust boundary"). COMMAND, forked before, keeps what it had. 0 or -1
 * (printed). */
static int confine(struct recording *r)
{
        int err = session_drop_privileges(r->ss, PRIVILEGES_KEEP_DAC_OVERRIDE);

        if (err) {
                fprintf(stderr, "ctxprof: dropping capabilities failed: %s\n", strerror(-err));
                return -1;
        }
        return 0;
}

/* Setup stage: COMMAND forked (waiting), the sink, the sampler, the targets. 0 or -1
 * (printed unless a signal asked to stop). */
static int setup(struct recording *r)
{
        const struct record_opts *ro = r->ro;
        struct sample_sink sink;
        int err;

        err = event_loop_new(&r->l);
        if (err) {
                fprintf(stderr, "ctxprof: event loop: %s\n", strerror(-err));
                return -1;
        }
        /* The child waits for the sampler to be ready, so its first instruction is seen. The
         * session starts after the fork: the command keeps its environment, DEBUGINFOD_URLS
         * included. */
        if (ro->cmd && launch_fork(&r->cmd, ro->cmd, &ro->orig_int, &ro->orig_term))
                return -1;
        libbpf_set_print(libbpf_quiet);
        if (!strcmp(ro->format, "jfr")) {
                sink = (struct sample_sink){.ctx = &r->jfr, .sample = sample_sink_forward};
        } else {
                /* pprof, html: the span is part of the key (a span_id label, a span filter) */
                r->c = collapsed_new(ro->span_frames || strcmp(ro->format, "collapsed"));
                if (!r->c) {
                        fprintf(stderr, "ctxprof: out of memory\n");
                        return -1;
                }
                if (SAMPLER_EV_HAS_OFFCPU(ro->o.event)) /* values are microseconds */
                        collapsed_set_time_weights(r->c, NS_PER_SEC / NS_PER_US / ro->o.freq);
                sink = collapsed_sink(r->c);
        }
        if (start_session(r, &sink))
                return -1;
        /* A uprobe needs CAP_SYS_ADMIN, which confine drops: the loaders in use are hooked
         * for every process now, as the daemon does (engine/load_hook.h), so that an exec or
         * dlopen after the drop is still seen. Before the targets are added: a probe per
         * target, replaced by these afterwards, cost ~50 ms each to detach (a thousand PIDs
         * took most of a minute). */
        err = session_hook_loaders(r->ss);
        if (err && !ro->quiet)
                fprintf(stderr, "ctxprof: library-load hook for every process failed: %s\n",
                        strerror(-err));
        if (add_targets(r) || stop_requested)
                return -1; /* during setup: abandon it, the output untouched */
        return confine(r);
}

#define STATUS_LINE_PERIOD_NS NS_PER_SEC
#define CUT_RETRY_NS          (100 * NS_PER_MS) /* the JFR writer is behind: look again */

/* The engine counters are read only here, when a chunk is cut. */
static void loop_cut(void *ctx, uint64_t now)
{
        struct record_loop *rl = ctx;
        struct jfr_sink_engine_counters ec;

        rl->cut_tried = now;
        engine_stats_get(rl->r->s, &ec);
        jfr_sink_tick(rl->r->js, now, &ec);
}

static void loop_status(void *ctx, uint64_t now)
{
        struct record_loop *rl = ctx;

        print_status(rl->r->s, &rl->last_n, &rl->last_ms);
        event_loop_set(rl->r->l, rl->status, now + STATUS_LINE_PERIOD_NS);
}

static void loop_end(void *ctx, uint64_t now)
{
        struct record_loop *rl = ctx;

        (void)now;
        rl->done = 1;
}

/* After every wake (the session set the drain's deadline): a ring error, have the targets
 * ended, and when is the cut due. */
static void loop_after(void *ctx, uint64_t now)
{
        struct record_loop *rl = ctx;
        struct recording *r = rl->r;
        uint64_t cut;
        int err = session_failed(r->ss);

        (void)now;
        if (err && !rl->done)
                fprintf(stderr, "\nctxprof: reading samples failed: %s\n", strerror(-err));
        if (err || (r->ro->cmd ? launch_ended(&r->cmd) : !sampler_live_targets(r->s)))
                rl->done = 1;
        if (r->js) {
                /* Due but not cut by the last try (the writer behind): again CUT_RETRY_NS after
                 * that try. Not after `now`: this runs at every wake, and would push an
                 * overdue cut forward for as long as the ring wakes the loop more often. */
                cut = jfr_sink_next_cut(r->js);
                if (cut <= rl->cut_tried)
                        cut = rl->cut_tried + CUT_RETRY_NS;
                event_loop_set(r->l, rl->cut, cut);
        }
}

/* Setup stage, the loop's own deadlines (the session adds the rings' fds and the drain): the
 * JFR chunk cut, the terminal status line, the duration's end. 0 or -1 (printed). */
static int loop_setup(struct recording *r)
{
        struct record_loop *rl = &r->rl;
        struct event_loop *l = r->l;
        uint64_t now = mono_ns();

        rl->r = r;
        rl->tty = !r->ro->quiet && isatty(STDERR_FILENO);
        rl->last_ms = mono_ms();
        rl->cut = event_loop_add_deadline(l, loop_cut, rl);
        rl->status = event_loop_add_deadline(l, loop_status, rl);
        rl->end = event_loop_add_deadline(l, loop_end, rl);
        if (rl->end < 0) {
                fprintf(stderr, "ctxprof: event loop: %s\n", strerror(-rl->end));
                return -1;
        }
        if (rl->tty)
                event_loop_set(l, rl->status, now + STATUS_LINE_PERIOD_NS);
        if (r->ro->duration_ms)
                event_loop_set(l, rl->end, now + r->ro->duration_ms * NS_PER_MS);
        loop_after(rl, now);
        return 0;
}

/* Setup stage, last step: only now is the output created or truncated. A signal that
 * interrupts opening it (a FIFO) still abandons the setup; one after that ends the
 * recording like any other time. Then COMMAND runs: its exec is the first thing sampled.
 * 0 or -1 (printed). */
static int open_output(struct recording *r)
{
        const struct record_opts *ro = r->ro;
        int err;

        if (!strcmp(ro->format, "jfr")) {
                struct jfr_sink_opts jo = {
                    .path = ro->outpath,
                    .chunk_period_ns = ro->chunk_ms * 1000000ull,
                    .table_capacity = ro->max_stacks,
                    .file_flags = JFR_WRITER_REPLACE, /* a SIGKILL leaves no torn chunk */
                    .labels_snapshot = 1,
                    .info = {.name = "ctxprof",
                             .event = sampling_name(SAMPLING_NAMES_EVENT, ro->o.event),
                             .frequency_hz = ro->o.freq,
                             .callgraph = sampling_name(SAMPLING_NAMES_CALLGRAPH, ro->o.call_graph),
                             .filter = ro->filter_text},
                };
                jo.info.start_wall_ns = wall_ns();
                err = jfr_sink_new(&jo, &r->js);
                if (err) {
                        if (!stop_requested)
                                fprintf(stderr, "ctxprof: cannot write %s: %s\n", ro->outpath,
                                        strerror(-err));
                        return -1;
                }
                jfr_sink_set_modules(r->js, sampler_modules(r->s));
                r->jfr = jfr_sink_as_sink(r->js);
        } else if (ro->outpath) {
                r->out = fopen(ro->outpath, "we");
                if (!r->out) {
                        if (!stop_requested)
                                fprintf(stderr, "ctxprof: cannot write %s: %s\n", ro->outpath,
                                        strerror(errno));
                        return -1;
                }
        }
        /* the loop drains from here on: sampling starts, then COMMAND runs */
        if (loop_setup(r))
                return -1;
        err = session_start(r->ss, r->l, loop_after, &r->rl);
        if (err) {
                fprintf(stderr, "ctxprof: event loop: %s\n", strerror(-err));
                return -1;
        }
        if (ro->cmd && launch_run(&r->cmd, ro->cmd))
                return -1;
        r->started = 1;
        r->start_wall_ns = wall_ns();
        r->start_mono_ns = mono_ns();
        return 0;
}

/* Loop stage: sample until the duration ends, the targets exit or a signal arrives (its
 * handler's EINTR ends the wait); JFR chunks on the way, a status line on a terminal. */
static void sample_loop(struct recording *r)
{
        struct record_loop *rl = &r->rl;
        int err = 0;

        while (!err && !rl->done && !stop_requested)
                err = event_loop_run_once(r->l);
        if (err)
                fprintf(stderr, "\nctxprof: waiting for samples failed: %s\n", strerror(-err));
        if (rl->tty)
                fputs("\r\033[K", stderr);
}

/* Finish stage, JFR: the last chunk. 0 or -1 (printed). */
static int finish_jfr(struct recording *r, struct jfr_sink_counters *jc)
{
        struct jfr_sink_engine_counters ec;
        int err;

        engine_stats_get(r->s, &ec);
        err = jfr_sink_finish(r->js, &ec);
        jfr_sink_get_counters(r->js, jc);
        if (err) {
                /* Every chunk written before the failure stays readable. */
                fprintf(stderr,
                        "ctxprof: writing %s failed: %s (%llu chunks written and readable, %llu "
                        "samples lost)\n",
                        r->ro->outpath, strerror(-err), (unsigned long long)jc->chunks_written,
                        (unsigned long long)jc->samples_dropped);
                return -1;
        }
        if (!r->ro->quiet)
                fprintf(stderr,
                        "ctxprof: wrote %s: %llu chunks, %llu bytes, %llu samples (%llu "
                        "dropped), trace table %llu KiB\n",
                        r->ro->outpath, (unsigned long long)jc->chunks_written,
                        (unsigned long long)jc->bytes_written,
                        (unsigned long long)jc->samples_written,
                        (unsigned long long)jc->samples_dropped,
                        (unsigned long long)(jc->table_memory_bytes >> 10));
        return 0;
}

/* Finish stage, html: the flame graph page from the aggregated samples. 0 or -errno. */
static int write_html(struct recording *r, FILE *out)
{
        struct flame_html *h;
        char title[256];
        int err = flame_html_new(&h);

        if (err)
                return err;
        snprintf(title, sizeof(title), "ctxprof record %s", r->ro->cmd ? r->ro->cmd[0] : "-p");
        err = flame_html_add_collapsed(h, r->c, sampler_modules(r->s));
        if (!err)
                err = flame_html_write(h, out, title);
        flame_html_free(h);
        return err;
}

/* Finish stage: drain, write the output, the counters (stderr, --stats-json). The exit
 * status: 0, COMMAND's own when it ended by itself, or 1. */
static int finish(struct recording *r)
{
        const struct record_opts *ro = r->ro;
        struct jfr_sink_counters jc = {0};
        struct parser_stats ps = {0};
        struct parser_client *parser = session_parser(r->ss);
        int err;

        err = session_stop(r->ss);
        if (err < 0)
                fprintf(stderr, "ctxprof: draining samples failed: %s\n", strerror(-err));
        if (r->js) {
                if (finish_jfr(r, &jc))
                        return 1;
        } else {
                FILE *out = r->out ? r->out : stdout;

                if (!strcmp(ro->format, "pprof")) {
                        struct pprof_meta m = {.period_ns = NS_PER_SEC / ro->o.freq,
                                               .start_ns = r->start_wall_ns,
                                               .duration_ns = mono_ns() - r->start_mono_ns};

                        err = pprof_write(r->c, out, sampler_modules(r->s), &m);
                } else if (!strcmp(ro->format, "otlp")) {
                        struct otlp_meta m = {.period_ns = NS_PER_SEC / ro->o.freq,
                                              .start_ns = r->start_wall_ns,
                                              .duration_ns = mono_ns() - r->start_mono_ns};

                        err = otlp_write_symbolized(r->c, out, sampler_modules(r->s), &m);
                } else if (!strcmp(ro->format, "html")) {
                        err = write_html(r, out);
                } else {
                        err = collapsed_write(r->c, out, sampler_modules(r->s));
                }
                if (err) {
                        fprintf(stderr, "ctxprof: writing %s failed: %s\n",
                                ro->outpath ? ro->outpath : "output", strerror(-err));
                        return 1;
                }
        }
        r->written = 1;
        if (!ro->quiet)
                record_stats_print(r->s, r->c);
        if (parser)
                parser_client_stats(parser, &ps);
        if (ro->stats_path && record_stats_write_json(ro->stats_path, r->s, r->c,
                                                      r->js ? &jc : NULL, parser ? &ps : NULL))
                return 1;
        /* The command ended on its own (not stopped by us): its status is the result, as
         * with time(1) or perf stat. */
        if (ro->cmd && r->cmd.done)
                return launch_exit_status(&r->cmd);
        return 0;
}

/* Everything released; the command ended. The exit status rc, or what overrides it. */
static int cleanup(struct recording *r, int rc)
{
        if (!r->started && stop_requested) {
                fprintf(stderr, "ctxprof: %s before recording started: nothing recorded\n",
                        stop_requested == SIGINT ? "interrupted" : "terminated");
                rc = 128 + stop_requested;
        }
        launch_end(&r->cmd);
        jfr_sink_free(r->js); /* its symbolizers before the parser helper they use */
        collapsed_free(r->c);
        session_free(r->ss);
        event_loop_free(r->l);
        if (r->out && fclose(r->out) && !rc) {
                fprintf(stderr, "ctxprof: writing %s failed: %s\n", r->ro->outpath,
                        strerror(errno));
                rc = 1;
                r->written = 0;
        }
        return rc;
}

static int cmd_record(int argc, char **argv)
{
        struct record_opts ro = {
            .o = {.freq = 99, .event = SAMPLER_EV_CPU_CLOCK, .kernel_stacks = 1},
            .chunk_ms = 60000,
        };
        struct recording r = {.ro = &ro, .cmd = {.pid = -1, .sync_fd = -1}};
        int rc;

        record_upload_defaults(&ro.up);
        rc = parse_args(argc, argv, &ro);
        if (rc >= 0) {
                free(ro.pids);
                return rc;
        }
        rc = 1;
        if (!setup(&r) && !open_output(&r)) {
                sample_loop(&r);
                rc = finish(&r);
        }
        rc = cleanup(&r, rc);
        /* the file is complete and closed: a failed upload is its own exit status */
        if (ro.up.t.url[0] && r.written &&
            record_upload(&ro.up, ro.outpath, ro.format, r.start_wall_ns / NS_PER_SEC,
                          (uint64_t)time(NULL), ro.quiet))
                rc = RECORD_UPLOAD_FAILED;
        free(ro.pids);
        return rc;
}

const struct ctxprof_cmd record_cmd = {"record", "sample processes: stacks + trace context",
                                       cmd_record};
