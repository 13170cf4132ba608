/*
 * cmd_record.c — `ctxprof record`: parses options, starts or attaches to the targets, drives
 * the sampler until the duration ends, the targets exit or SIGINT/SIGTERM arrives, then
 * drains, writes the output (JFR chunks through jfr_sink, or collapsed stacks) and prints the
 * counters. The only place in the
 * sampler's area that prints; it turns every library error into an actionable message and
 * a non-zero exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli/cmd.h"
#include "sink/collapsed.h"
#include "service/config.h"
#include "sink/engine_stats.h"
#include "stack/sigbus_guard.h"
#include "sink/jfr_sink.h"
#include "engine/sample_rate.h"
#include "stack/debuginfod_policy.h"
#include "engine/sampler.h"

#define MAX_PIDS 64

static volatile sig_atomic_t stop_requested; /* the signal that asked to stop, 0 = none */

static void on_signal(int sig)
{
        stop_requested = sig;
}

static void help(FILE *f)
{
        fprintf(
            f, "usage: ctxprof record -p PID[,PID...] [OPTIONS]\n"
               "       ctxprof record [OPTIONS] -- COMMAND [ARGS...]\n"
               "\n"
               "Sample the threads of running processes (or of COMMAND and the processes it\n"
               "starts) with perf events and eBPF. Every sample carries the thread's span id and\n"
               "Custom Labels (when the target uses libctx or another Custom Labels v1 writer)\n"
               "and its stack. Threads started after attach are sampled too. Ctrl-C / SIGTERM\n"
               "stops, drains and writes everything collected.\n"
               "\n"
               "options:\n"
               "  -p, --pid PID[,PID...]     processes to sample\n"
               "  -F, --freq HZ              samples per second per CPU (default 99)\n"
               "  -d, --duration TIME        stop after TIME (e.g. 30, 30s, 500ms, 2m); a COMMAND\n"
               "                             still running then gets SIGTERM\n"
               "  -o, --output FILE          write to FILE (default: standard output); FILE is\n"
               "                             created or truncated only once setup succeeded\n"
               "      --format jfr|collapsed jfr: JDK Flight Recorder chunks (default when FILE\n"
               "                             ends in .jfr; needs -o); collapsed: folded stacks\n"
               "                             (flamegraph.pl, speedscope):\n"
               "                             PROC-PID;THREAD;key=value...;frames N\n"
               "      --chunk-period TIME    jfr: write a complete chunk every TIME (default 60s)\n"
               "      --max-stacks N         jfr: distinct stacks per chunk (default 16384, about\n"
               "                             1.6 KiB each); more become [unknown stack], counted\n"
               "      --call-graph fp|dwarf  fp: frame pointers (default, cheapest); dwarf: copy\n"
               "                             16 KiB of user stack and unwind with .eh_frame\n"
               "      --event cpu-clock|cycles  sampling event (cycles needs a hardware PMU)\n"
               "      --span-frames          add a span=ID pseudo-frame after the labels\n"
               "      --no-kernel            user frames only\n"
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
               "came before recording started (nothing is written, COMMAND is not run).\n");
}

static int parse_pids(char *s, pid_t *pids, int *n)
{
        char *tok, *save = NULL, *end;

        for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                long v;

                errno = 0;
                v = strtol(tok, &end, 10);
                if (errno || *end || v <= 0 || v > INT_MAX || *n >= MAX_PIDS)
                        return -1;
                pids[(*n)++] = (pid_t)v;
        }
        return *n ? 0 : -1;
}

static uint64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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
                                "ctxprof: not permitted to open CPU-wide perf events (%s): "
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

/* The modules where DWARF unwinding stopped early most often, as one line. */
static void print_unwind_stops(struct sampler *s)
{
        struct module_tally_entry top[5];
        uint64_t other;
        unsigned i, n = sampler_unwind_stops(s, top, 5, &other);

        if (!n)
                return;
        fputs("ctxprof: dwarf unwinding stopped early in:", stderr);
        for (i = 0; i < n; i++) {
                struct module_info mi;
                const char *name = "[unknown]", *slash;

                if (top[i].module_id != CTXPROF_MODULE_UNKNOWN &&
                    !modules_info(sampler_modules(s), top[i].module_id, &mi)) {
                        slash = strrchr(mi.path, '/');
                        name = slash ? slash + 1 : mi.path;
                }
                fprintf(stderr, "%s %s %llu", i ? "," : "", name, (unsigned long long)top[i].count);
        }
        if (other)
                fprintf(stderr, ", other modules %llu", (unsigned long long)other);
        fputc('\n', stderr);
}

static void print_counters(struct sampler *s, struct collapsed *c)
{
        struct sampler_stats st;
        char lines[48] = "", bpf[48] = "", bus[64] = "";

        if (c)
                snprintf(lines, sizeof(lines), ", lines %zu", collapsed_lines(c));
        sampler_get_stats(s, &st);
        if (st.bpf_run_cnt && st.samples) /* kernel.bpf_stats_enabled=1 */
                snprintf(bpf, sizeof(bpf), ", BPF %llu ns/sample",
                         (unsigned long long)(st.bpf_run_ns / st.samples));
        if (sigbus_guard_repaired())
                snprintf(bus, sizeof(bus), ", pages of truncated files read as zeros %llu",
                         (unsigned long long)sigbus_guard_repaired());
        fprintf(
            stderr,
            "ctxprof: samples %llu (received %llu, %llu with context), lost %llu (the sample ring "
            "was full: the consumer fell behind), not read at stop %llu, no stack %llu, "
            "torn span reads %llu, label read faults %llu, labels dropped %llu, "
            "stale TLS locations refused %llu, stacks not DWARF-unwound %llu (frame pointers "
            "used instead), stacks cut short %llu (DWARF unwinding stopped before the outermost "
            "frame: a stack deeper than the 16 KiB copied per sample, or code without unwind "
            "info), events lost %llu, threads %llu, processes %llu%s%s%s\n",
            (unsigned long long)st.samples, (unsigned long long)st.received,
            (unsigned long long)st.with_context, (unsigned long long)st.lost,
            (unsigned long long)st.stop_discarded, (unsigned long long)st.no_stack,
            (unsigned long long)st.ctx.torn_spans,
            (unsigned long long)(st.label_faults + st.labelset_faults),
            (unsigned long long)st.ctx.dropped, (unsigned long long)st.tls_stale,
            (unsigned long long)st.unwind_errors, (unsigned long long)st.unwind_truncated,
            (unsigned long long)st.events_lost, (unsigned long long)st.threads,
            (unsigned long long)st.processes, lines, bpf, bus);
        print_unwind_stops(s);
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

/* The JFR sink is created once setup succeeded (that opens its file), after the sampler it
 * receives samples from: the sampler is handed this forwarder. Samples only flow from
 * sampler_poll, which runs after both exist. */
static int forward_sample(void *ctx, const struct decoded_sample *ds)
{
        const struct sample_sink *to = ctx;

        return to->sample ? to->sample(to->ctx, ds) : -ENODEV;
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

static int cmd_record(int argc, char **argv)
{
        enum {
                OPT_FORMAT = 256,
                OPT_CALLGRAPH,
                OPT_EVENT,
                OPT_SPAN,
                OPT_NOKERNEL,
                OPT_CHUNK,
                OPT_MAXSTACKS
        };
        static const struct option longopts[] = {
            {"pid", required_argument, NULL, 'p'},
            {"freq", required_argument, NULL, 'F'},
            {"duration", required_argument, NULL, 'd'},
            {"output", required_argument, NULL, 'o'},
            {"format", required_argument, NULL, OPT_FORMAT},
            {"chunk-period", required_argument, NULL, OPT_CHUNK},
            {"max-stacks", required_argument, NULL, OPT_MAXSTACKS},
            {"call-graph", required_argument, NULL, OPT_CALLGRAPH},
            {"event", required_argument, NULL, OPT_EVENT},
            {"span-frames", no_argument, NULL, OPT_SPAN},
            {"no-kernel", no_argument, NULL, OPT_NOKERNEL},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        struct sampler_opts o = {.freq = 99, .event = SAMPLER_EV_CPU_CLOCK, .kernel_stacks = 1};
        pid_t pids[MAX_PIDS], child = -1;
        int npids = 0, opt, i, err, quiet = 0, span_frames = 0, sync_fd[2] = {-1, -1};
        int rc = 1, child_status = 0, child_done = 0, child_traced = 0, recording = 0;
        uint64_t duration_ms = 0, start_ms, last_ms, last_n = 0, last_status = 0;
        const char *outpath = NULL;
        enum sampler_stage stage;
        struct sampler *s = NULL;
        struct collapsed *c = NULL;
        struct jfr_sink *js = NULL;
        const char *format = NULL;
        uint64_t chunk_ms = 60000;
        unsigned max_stacks = 0; /* 0 = the trace table's default */
        struct sample_sink sink, jfr = {0};
        struct sigaction sa, orig_int, orig_term;
        FILE *out = NULL;
        int tty;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "+p:F:d:o:qh", longopts, NULL)) != -1) {
                switch (opt) {
                case 'p':
                        if (parse_pids(optarg, pids, &npids)) {
                                fprintf(stderr, "ctxprof record: bad PID list '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'F':
                        if (config_parse_count(optarg, 1, CONFIG_FREQ_MAX, &o.freq)) {
                                fprintf(stderr, "ctxprof record: bad frequency '%s' (1..%d)\n",
                                        optarg, CONFIG_FREQ_MAX);
                                return 2;
                        }
                        break;
                case 'd':
                        if (config_parse_duration(optarg, &duration_ms)) {
                                fprintf(stderr, "ctxprof record: bad duration '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'o':
                        outpath = optarg;
                        break;
                case OPT_FORMAT:
                        if (strcmp(optarg, "collapsed") && strcmp(optarg, "jfr")) {
                                fprintf(stderr,
                                        "ctxprof record: unknown format '%s' (jfr or collapsed)\n",
                                        optarg);
                                return 2;
                        }
                        format = optarg;
                        break;
                case OPT_CHUNK:
                        if (config_parse_duration(optarg, &chunk_ms) || chunk_ms < 100) {
                                fprintf(stderr,
                                        "ctxprof record: bad chunk period '%s' (at least 100ms)\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case OPT_MAXSTACKS:
                        if (config_parse_count(optarg, CONFIG_MAX_STACKS_MIN, CONFIG_MAX_STACKS_MAX,
                                               &max_stacks)) {
                                fprintf(stderr,
                                        "ctxprof record: bad --max-stacks '%s' (%d to %d)\n",
                                        optarg, CONFIG_MAX_STACKS_MIN, CONFIG_MAX_STACKS_MAX);
                                return 2;
                        }
                        break;
                case OPT_CALLGRAPH:
                        if (!strcmp(optarg, "fp")) {
                                o.dwarf = 0;
                        } else if (!strcmp(optarg, "dwarf")) {
                                o.dwarf = 1;
                        } else {
                                fprintf(stderr, "ctxprof record: --call-graph fp or dwarf\n");
                                return 2;
                        }
                        break;
                case OPT_EVENT:
                        if (!strcmp(optarg, "cpu-clock")) {
                                o.event = SAMPLER_EV_CPU_CLOCK;
                        } else if (!strcmp(optarg, "cycles")) {
                                o.event = SAMPLER_EV_CYCLES;
                        } else {
                                fprintf(stderr, "ctxprof record: --event cpu-clock or cycles\n");
                                return 2;
                        }
                        break;
                case OPT_SPAN:
                        span_frames = 1;
                        break;
                case OPT_NOKERNEL:
                        o.kernel_stacks = 0;
                        break;
                case 'q':
                        quiet = 1;
                        break;
                case 'h':
                        help(stdout);
                        return 0;
                default:
                        help(stderr);
                        return 2;
                }
        }
        if ((optind < argc) == (npids > 0)) {
                fprintf(stderr, "ctxprof record: give either -p PID[,PID...] or -- COMMAND\n\n");
                help(stderr);
                return 2;
        }
        for (i = 0; i < npids; i++)
                if (check_pid(pids[i]))
                        return 1;
        if (freq_above_limit(o.freq))
                return 1;
        {
                unsigned cap = sample_rate_cap(o.dwarf, 0);

                if (o.freq > cap) {
                        fprintf(stderr,
                                "ctxprof: -F %u is more than one consumer can carry on this "
                                "host with --call-graph %s (%u samples/s over all CPUs): "
                                "sampling at %u Hz\n",
                                o.freq, o.dwarf ? "dwarf" : "fp",
                                o.dwarf ? SAMPLE_RATE_HOST_DWARF : SAMPLE_RATE_HOST_FP, cap);
                        o.freq = cap;
                }
        }
        o.follow_children = optind < argc;

        /* From here on SIGINT/SIGTERM stop cleanly: before recording starts they abandon the
         * setup (a started command is killed, nothing is written), after it they end it. No
         * SA_RESTART: a blocking setup step (an output FIFO, waiting for the command) returns
         * EINTR. */
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &orig_int); /* the command gets these back */
        sigaction(SIGTERM, &sa, &orig_term);

        if (!format) {
                size_t n = outpath ? strlen(outpath) : 0;
                format = n > 4 && !strcmp(outpath + n - 4, ".jfr") ? "jfr" : "collapsed";
        }
        if (!strcmp(format, "jfr") && !outpath) {
                fprintf(stderr, "ctxprof record: --format jfr needs -o FILE\n");
                return 2;
        }
        /* A bad path fails now; an existing file is kept until setup succeeded. */
        if (outpath && check_output(outpath))
                return 1;

        if (optind < argc) {
                /* The child waits for the sampler to be ready, so its first instruction is seen.
                 * A socket, not a pipe: telling a child that died (Ctrl-C reaches the whole
                 * process group) must be an error, not a SIGPIPE. */
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync_fd)) {
                        perror("ctxprof: socketpair");
                        goto out;
                }
                child = fork();
                if (child < 0) {
                        perror("ctxprof: fork");
                        goto out;
                }
                if (child == 0) {
                        char b;

                        /* what ctxprof inherited (SIG_IGN under nohup or `cmd &` in a
                         * script), not our handlers */
                        sigaction(SIGINT, &orig_int, NULL);
                        sigaction(SIGTERM, &orig_term, NULL);
                        close(sync_fd[1]);
                        if (read(sync_fd[0], &b, 1) != 1)
                                _exit(127);
                        /* Stop at the exec so the parent can locate TLS before main runs. */
                        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
                                _exit(127);
                        execvp(argv[optind], argv + optind);
                        fprintf(stderr, "ctxprof: cannot run %s: %s\n", argv[optind],
                                strerror(errno));
                        _exit(127);
                }
                close(sync_fd[0]);
                sync_fd[0] = -1;
        }

        /* After the fork: the command keeps its environment, debuginfod included. */
        if (debuginfod_policy_apply() == 0 && !quiet)
                fprintf(stderr, "ctxprof: not using DEBUGINFOD_URLS (set CTXPROF_DEBUGINFOD=1 "
                                "to allow it: see docs/daemon.md)\n");
        libbpf_set_print(libbpf_quiet);
        if (!strcmp(format, "jfr")) {
                sink = (struct sample_sink){.ctx = &jfr, .sample = forward_sample};
        } else {
                c = collapsed_new(span_frames);
                if (!c) {
                        fprintf(stderr, "ctxprof: out of memory\n");
                        goto out;
                }
                sink = collapsed_sink(c);
        }
        err = sampler_new(&o, &sink, &s, &stage);
        if (err) {
                if (!stop_requested)
                        report_setup_error(err, stage, &o);
                goto out;
        }
        if (child > 0) {
                int st;
                pid_t w;

                if (stop_requested)
                        goto out;
                if (send(sync_fd[1], "g", 1, MSG_NOSIGNAL) != 1) {
                        if (!stop_requested)
                                perror("ctxprof: starting the command");
                        goto out;
                }
                close(sync_fd[1]);
                sync_fd[1] = -1;
                /* The traced child stops with SIGTRAP right after a successful exec; a signal
                 * that reaches it first stops it too and is passed on. */
                for (;;) {
                        w = waitpid(child, &st, 0);
                        if (w < 0 && errno == EINTR && !stop_requested)
                                continue;
                        if (w != child || !WIFSTOPPED(st))
                                break;
                        child_traced = 1;
                        if (stop_requested || WSTOPSIG(st) == SIGTRAP)
                                break;
                        ptrace(PTRACE_CONT, child, NULL, (void *)(long)WSTOPSIG(st));
                }
                if (stop_requested)
                        goto out;
                if (w != child || !WIFSTOPPED(st)) {
                        fprintf(stderr, "ctxprof: cannot run %s\n", argv[optind]);
                        child_done = w == child;
                        goto out;
                }
                err = sampler_add_target(s, child);
                if (stop_requested)
                        goto out;
                if (err) {
                        fprintf(stderr, "ctxprof: cannot sample %s: %s\n", argv[optind],
                                strerror(-err));
                        goto out;
                }
        }
        for (i = 0; i < npids; i++) {
                err = sampler_add_target(s, pids[i]);
                if (err == -ESRCH) {
                        fprintf(stderr, "ctxprof: process %d exited before it could be attached\n",
                                (int)pids[i]);
                        goto out;
                } else if (err == -EPERM || err == -EACCES) {
                        fprintf(stderr, "ctxprof: not permitted to read process %d: %s\n",
                                (int)pids[i], strerror(-err));
                        goto out;
                } else if (err) {
                        fprintf(stderr, "ctxprof: cannot sample process %d: %s\n", (int)pids[i],
                                strerror(-err));
                        goto out;
                }
        }
        if (stop_requested)
                goto out; /* during setup: abandon it, the output untouched */

        /* Setup succeeded: only now is the output created or truncated. A signal that
         * interrupts opening it (a FIFO) still abandons the setup; one after that ends the
         * recording like any other time. */
        if (!strcmp(format, "jfr")) {
                struct jfr_sink_opts jo = {
                    .path = outpath,
                    .chunk_period_ns = chunk_ms * 1000000ull,
                    .table_capacity = max_stacks,
                    .info = {.name = "ctxprof",
                             .event = o.event == SAMPLER_EV_CYCLES ? "cycles" : "cpu-clock",
                             .frequency_hz = o.freq,
                             .callgraph = o.dwarf ? "dwarf" : "fp"},
                };
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                jo.info.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
                err = jfr_sink_new(&jo, &js);
                if (err) {
                        if (!stop_requested)
                                fprintf(stderr, "ctxprof: cannot write %s: %s\n", outpath,
                                        strerror(-err));
                        goto out;
                }
                jfr_sink_set_modules(js, sampler_modules(s));
                jfr = jfr_sink_as_sink(js);
        } else if (outpath) {
                out = fopen(outpath, "we");
                if (!out) {
                        if (!stop_requested)
                                fprintf(stderr, "ctxprof: cannot write %s: %s\n", outpath,
                                        strerror(errno));
                        goto out;
                }
        }
        /* Let the command run: its exec is the first thing sampled. */
        if (child > 0) {
                if (ptrace(PTRACE_DETACH, child, NULL, NULL)) {
                        fprintf(stderr, "ctxprof: cannot start %s: %s\n", argv[optind],
                                strerror(errno));
                        goto out;
                }
                child_traced = 0;
        }
        recording = 1;
        tty = !quiet && isatty(STDERR_FILENO);
        start_ms = last_ms = last_status = mono_ms();

        while (!stop_requested) {
                uint64_t now;

                err = sampler_poll(s, 100);
                if (err < 0) {
                        fprintf(stderr, "\nctxprof: reading samples failed: %s\n", strerror(-err));
                        break;
                }
                now = mono_ms();
                if (duration_ms && now - start_ms >= duration_ms)
                        break;
                if (child > 0 && !child_done && waitpid(child, &child_status, WNOHANG) == child) {
                        child_done = 1;
                        break;
                }
                if (child < 0 && !sampler_live_targets(s))
                        break;
                if (js) {
                        struct jfr_sink_engine_counters ec;

                        engine_stats_get(s, &ec);
                        jfr_sink_tick(js, now * 1000000ull, &ec);
                }
                if (tty && now - last_status >= 1000) {
                        print_status(s, &last_n, &last_ms);
                        last_status = now;
                }
        }
        if (tty)
                fputs("\r\033[K", stderr);
        err = sampler_stop(s);
        if (err < 0)
                fprintf(stderr, "ctxprof: draining samples failed: %s\n", strerror(-err));
        if (js) {
                struct jfr_sink_engine_counters ec;
                struct jfr_sink_counters jc;

                engine_stats_get(s, &ec);
                err = jfr_sink_finish(js, &ec);
                jfr_sink_get_counters(js, &jc);
                if (err) {
                        /* Every chunk written before the failure stays readable. */
                        fprintf(stderr,
                                "ctxprof: writing %s failed: %s (%llu chunks written and "
                                "readable, %llu samples lost)\n",
                                outpath, strerror(-err), (unsigned long long)jc.chunks_written,
                                (unsigned long long)jc.samples_dropped);
                        goto out;
                }
                if (!quiet)
                        fprintf(stderr,
                                "ctxprof: wrote %s: %llu chunks, %llu bytes, %llu samples "
                                "(%llu dropped), trace table %llu KiB\n",
                                outpath, (unsigned long long)jc.chunks_written,
                                (unsigned long long)jc.bytes_written,
                                (unsigned long long)jc.samples_written,
                                (unsigned long long)jc.samples_dropped,
                                (unsigned long long)(jc.table_memory_bytes >> 10));
        } else {
                err = collapsed_write(c, out ? out : stdout, sampler_modules(s));
                if (err) {
                        fprintf(stderr, "ctxprof: writing %s failed: %s\n",
                                outpath ? outpath : "output", strerror(-err));
                        goto out;
                }
        }
        if (!quiet)
                print_counters(s, c);
        rc = 0;
        /* The command ended on its own (not stopped by us): its status is the result, as
         * with time(1) or perf stat. */
        if (child > 0 && child_done)
                rc = WIFEXITED(child_status)     ? WEXITSTATUS(child_status)
                     : WIFSIGNALED(child_status) ? 128 + WTERMSIG(child_status)
                                                 : 0;
out:
        if (!recording && stop_requested) {
                fprintf(stderr, "ctxprof: %s before recording started: nothing recorded\n",
                        stop_requested == SIGINT ? "interrupted" : "terminated");
                rc = 128 + stop_requested;
        }
        if (sync_fd[0] >= 0)
                close(sync_fd[0]);
        if (sync_fd[1] >= 0)
                close(sync_fd[1]); /* an unstarted child sees EOF and exits */
        if (child > 0 && child_traced) {
                /* Still stopped under ptrace, the command never ran: a SIGTERM would only
                 * stop it again, for us to handle. */
                kill(child, SIGKILL);
                while (waitpid(child, &child_status, 0) < 0 && errno == EINTR)
                        ;
        } else if (child > 0 && !child_done) {
                /* The recording is over (duration, signal or error): so is the command. */
                kill(child, SIGTERM);
                while (waitpid(child, &child_status, 0) < 0 && errno == EINTR)
                        ;
        }
        sampler_free(s);
        jfr_sink_free(js);
        collapsed_free(c);
        if (out && fclose(out) && !rc) {
                fprintf(stderr, "ctxprof: writing %s failed: %s\n", outpath, strerror(errno));
                rc = 1;
        }
        return rc;
}

const struct ctxprof_cmd record_cmd = {"record", "sample processes: stacks + trace context",
                                       cmd_record};
