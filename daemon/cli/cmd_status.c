/* SPDX-License-Identifier: MIT */
/*
 * cmd_status.c — `ctxprof status [--json] [--status-file PATH]`: prints the status file the
 * daemon rewrites every few seconds, as a table or as JSON, with a verdict on the daemon
 * (running, stopped, dead, stale: service/status_health.h) that is also the exit status.
 * Reads that file and /proc.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cmd.h"
#include "cli/json_out.h"
#include "service/status_file.h"
#include "service/status_health.h"

/* A field for the table: its value, "-" when the record has none. */
static const char *get(const struct status_record *r, const char *key)
{
        const char *v = status_record_get(r, key);

        return v ? v : "-";
}

static int is_number(const char *s)
{
        if (!*s)
                return 0;
        for (; *s; s++)
                if (!isdigit((unsigned char)*s))
                        return 0;
        return 1;
}

/* Exit statuses, in the LSB init-script tradition (0 running, 1 dead, 3 not running, 4
 * unknown) plus ours: 2 usage, 5 stale. Documented in --help and docs/daemon.md. */
enum status_exit {
        EXIT_RUNNING = 0,
        EXIT_DEAD = 1,
        EXIT_USAGE = 2,
        EXIT_NOT_RUNNING = 3,
        EXIT_UNKNOWN = 4,
        EXIT_STALE = 5,
};

/* The verdict on the file's daemon record, for the table, the JSON and the exit status. */
struct verdict {
        const char *state; /* status_health_name, or "absent" / "unknown" */
        char why[256];     /* "" when running */
        uint64_t age;      /* seconds since the file was written */
        int exit;          /* enum status_exit */
};

static uint64_t get_u64(const struct status_record *r, const char *key, uint64_t dflt)
{
        const char *v = status_record_get(r, key);
        char *end;
        unsigned long long n;

        if (!v || !is_number(v))
                return dflt;
        errno = 0;
        n = strtoull(v, &end, 10);
        return errno || *end ? dflt : n;
}

static void judge(const struct status_record *r, time_t mtime, struct verdict *out)
{
        static const int exits[] = {
            [STATUS_HEALTH_RUNNING] = EXIT_RUNNING,
            [STATUS_HEALTH_STOPPED] = EXIT_NOT_RUNNING,
            [STATUS_HEALTH_DEAD] = EXIT_DEAD,
            [STATUS_HEALTH_STALE] = EXIT_STALE,
        };
        const char *boot = status_record_get(r, "boot_id");
        struct status_claim c = {
            .running = !strcmp(get(r, "state"), "running"),
            .pid = (pid_t)get_u64(r, "pid", 0),
            .pid_start = get_u64(r, "pid_start", 0),
            .boot_id = boot && strcmp(boot, "-") ? boot : NULL,
            .updated = get_u64(r, "updated", (uint64_t)mtime),
            .period_ms = get_u64(r, "period_ms", 0),
        };
        struct status_probe p;
        enum status_health h;

        status_health_probe(c.pid, &p);
        h = status_health_judge(&c, &p, out->why, sizeof(out->why));
        out->state = status_health_name(h);
        out->age = p.now > c.updated ? p.now - c.updated : 0;
        out->exit = exits[h];
}

/* A record as a JSON object; the daemon's (v != NULL) with its state replaced by the
 * verdict and the reason and age added. */
static void json_rec(const struct status_record *r, const struct verdict *v)
{
        int i;

        putchar('{');
        for (i = 0; i < r->n; i++) {
                if (i)
                        putchar(',');
                json_string(stdout, r->key[i]);
                putchar(':');
                if (v && !strcmp(r->key[i], "state"))
                        json_string(stdout, v->state);
                else if (is_number(r->val[i]) && (r->val[i][0] != '0' || !r->val[i][1]))
                        fputs(r->val[i], stdout);
                else
                        json_string(stdout, r->val[i]);
        }
        if (v) {
                fputs(r->n ? ",\"reason\":" : "\"reason\":", stdout);
                json_string(stdout, v->why);
                printf(",\"age_s\":%llu", (unsigned long long)v->age);
        }
        putchar('}');
}

static void help(void)
{
        printf("usage: ctxprof status [--json] [--status-file PATH]\n\n"
               "Show what the running ctxprof daemon samples: its counters and,\n"
               "per target process, samples, samples with context and threads,\n"
               "and whether the daemon is alive: the status file is what it wrote\n"
               "last, checked against its process (pid and start time) and its age.\n"
               "\n"
               "options:\n"
               "      --json             the same as one JSON object:\n"
               "                         {\"daemon\": {...}, \"targets\": [{...}, ...],\n"
               "                          \"uploads\": [{...}, ...]}\n"
               "                         (keys as in the status file, see\n"
               "                         docs/daemon.md; daemon.state is the verdict\n"
               "                         below, daemon.reason says why, daemon.age_s\n"
               "                         is the file's age)\n"
               "      --status-file PATH the daemon's status-file (default\n"
               "                         " STATUS_FILE_DEFAULT ")\n"
               "\n"
               "exit status (daemon.state):\n"
               "  0  running   alive, the file rewritten every period\n"
               "  1  dead      the file says running but the process is gone\n"
               "               (killed, crashed, its pid reused, the host rebooted)\n"
               "  2            bad usage\n"
               "  3  stopped   stopped cleanly; or absent: no status file\n"
               "  4  unknown   the status file cannot be read or has no daemon record\n"
               "  5  stale     the process lives but has not rewritten the file for\n"
               "               %d periods (hung)\n",
               STATUS_STALE_PERIODS);
}

/* No daemon verdict to print from the file: absent or unreadable. */
static int no_record(int json, const char *state, const char *why, int rc)
{
        if (json) {
                printf("{\"daemon\":{\"state\":\"%s\",\"reason\":", state);
                json_string(stdout, why);
                puts("},\"targets\":[]}");
        }
        fprintf(stderr, "ctxprof status: %s\n", why);
        return rc;
}

static void print_daemon(const struct status_record *r, const struct verdict *v)
{
        if (v->why[0])
                printf("daemon %s (%s: %s), mode %s\n", get(r, "pid"), v->state, v->why,
                       get(r, "mode"));
        else
                printf("daemon %s (%s), mode %s\n", get(r, "pid"), v->state, get(r, "mode"));
        printf("  samples %s (%s with context, %s filtered out), lost %s, torn %s, threads %s\n",
               get(r, "received"), get(r, "context_samples"), get(r, "filtered"), get(r, "lost"),
               get(r, "torn"), get(r, "threads"));
        printf("  targets %s, files written %s (deleted %s), %s bytes\n", get(r, "targets"),
               get(r, "files_written"), get(r, "files_deleted"), get(r, "bytes_written"));
        printf("  current file %s\n", get(r, "current_file"));
        printf("  refused by store bounds: %s new stacks, %s label sets, %s threads\n",
               get(r, "refused_stacks"), get(r, "refused_labels"), get(r, "refused_threads"));
        printf("  library loads seen by %s; events over budget %s (exec of other processes %s), "
               "targets not added (map full) %s\n",
               get(r, "load_hook"), get(r, "events_limited"), get(r, "exec_events_limited"),
               get(r, "targets_full"));
        if (!strcmp(get(r, "split"), "process"))
                printf("  split per process: %s files open, %s samples past "
                       "split-max-open (in the host file)\n",
                       get(r, "process_files"), get(r, "overflow_samples"));
        printf("\n  %8s %-16s %10s %10s %7s %-7s %s\n", "PID", "COMM", "SAMPLES", "CONTEXT",
               "THREADS", "LOCATED", "FILE");
}

/* An "upload" line (after every target line): in JSON the first closes "targets" and opens
 * "uploads". */
static void print_upload(const struct status_record *r, int json, int n)
{
        if (json) {
                fputs(n ? "," : "],\"uploads\":[", stdout);
                json_rec(r, NULL);
                return;
        }
        printf("%s  upload %s: %s (last HTTP status %s), %s profiles (%s bytes) in the spool, "
               "%s delivered, %s dropped\n",
               n ? "" : "\n", get(r, "name"), get(r, "state"), get(r, "http_status"),
               get(r, "spool_files"), get(r, "spool_bytes"), get(r, "delivered"),
               get(r, "dropped"));
}

static int cmd_status(int argc, char **argv)
{
        static const struct option longopts[] = {
            {"json", no_argument, NULL, 'j'},
            {"status-file", required_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        const char *path = STATUS_FILE_DEFAULT;
        int opt, json = 0, ntargets = 0, nuploads = 0, have_daemon = 0;
        struct verdict v = {.exit = EXIT_UNKNOWN};
        char *line = NULL, why[PATH_MAX + 128];
        size_t line_cap = 0;
        struct stat st;
        FILE *f;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
                switch (opt) {
                case 'j':
                        json = 1;
                        break;
                case 's':
                        path = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        f = fopen(path, "re");
        if (!f) {
                int absent = errno == ENOENT;

                snprintf(why, sizeof(why), "cannot read %s: %s%s", path, strerror(errno),
                         absent ? " (is the daemon running?)" : "");
                return no_record(json, absent ? "absent" : "unknown", why,
                                 absent ? EXIT_NOT_RUNNING : EXIT_UNKNOWN);
        }
        if (fstat(fileno(f), &st))
                st.st_mtime = time(NULL);
        /* whole lines, however long (the daemon's grows with its counters: a fixed buffer cut
         * it, and its tail read as a line of its own) */
        while (getline(&line, &line_cap, f) > 0) {
                struct status_record r;

                if (status_record_parse(line, &r))
                        continue;
                if (!strcmp(r.kind, "daemon") && !have_daemon) {
                        have_daemon = 1;
                        judge(&r, st.st_mtime, &v);
                        if (json) {
                                fputs("{\"daemon\":", stdout);
                                json_rec(&r, &v);
                                fputs(",\"targets\":[", stdout);
                        } else {
                                print_daemon(&r, &v);
                        }
                } else if (!strcmp(r.kind, "target") && have_daemon) {
                        if (json) {
                                if (ntargets++)
                                        putchar(',');
                                json_rec(&r, NULL);
                                continue;
                        }
                        printf("  %8s %-16s %10s %10s %7s %-7s %s\n", get(&r, "pid"),
                               get(&r, "comm"), get(&r, "samples"), get(&r, "context_samples"),
                               get(&r, "threads"), get(&r, "context"), get(&r, "file"));
                } else if (!strcmp(r.kind, "upload") && have_daemon) {
                        print_upload(&r, json, nuploads++);
                }
        }
        free(line);
        fclose(f);
        if (!have_daemon) {
                snprintf(why, sizeof(why), "%s has no daemon record", path);
                return no_record(json, "unknown", why, EXIT_UNKNOWN);
        }
        if (json)
                puts(nuploads ? "]}" : "],\"uploads\":[]}");
        if (v.why[0] && v.exit != EXIT_RUNNING)
                fprintf(stderr, "ctxprof status: the daemon is %s: %s\n", v.state, v.why);
        return v.exit;
}

const struct ctxprof_cmd status_cmd = {"status", "show what the running daemon samples",
                                       cmd_status};
