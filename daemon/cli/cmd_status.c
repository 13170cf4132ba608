/*
 * cmd_status.c — `ctxprof status [--json] [--status-file PATH]`: prints the status file the
 * daemon rewrites every few seconds, as a table or as JSON. Reads only that file.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cmd.h"
#include "cli/json_out.h"
#include "service/status_file.h"

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

static void json_rec(const struct status_record *r)
{
        int i;

        putchar('{');
        for (i = 0; i < r->n; i++) {
                if (i)
                        putchar(',');
                json_string(stdout, r->key[i]);
                putchar(':');
                if (is_number(r->val[i]) && (r->val[i][0] != '0' || !r->val[i][1]))
                        fputs(r->val[i], stdout);
                else
                        json_string(stdout, r->val[i]);
        }
        putchar('}');
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
        int opt, json = 0, ntargets = 0;
        char line[4096];
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
                        printf("usage: ctxprof status [--json] [--status-file PATH]\n\n"
                               "Show what the running ctxprof daemon samples: its counters and,\n"
                               "per target process, samples, samples with context and threads.\n"
                               "\n"
                               "options:\n"
                               "      --json             the same as one JSON object:\n"
                               "                         {\"daemon\": {...}, \"targets\": [{...}, "
                               "...]}\n"
                               "                         (keys as in the status file, see\n"
                               "                         docs/daemon.md)\n"
                               "      --status-file PATH the daemon's status-file (default\n"
                               "                         " STATUS_FILE_DEFAULT ")\n");
                        return 0;
                default:
                        return 2;
                }
        }
        f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, "ctxprof status: cannot read %s: %s%s\n", path, strerror(errno),
                        errno == ENOENT ? " (is the daemon running?)" : "");
                return 1;
        }
        if (!fstat(fileno(f), &st) && !json && time(NULL) - st.st_mtime > 30)
                fprintf(stderr, "ctxprof status: %s is %lld s old: the daemon may be gone\n", path,
                        (long long)(time(NULL) - st.st_mtime));
        if (json)
                fputs("{\"daemon\":", stdout);
        while (fgets(line, sizeof(line), f)) {
                struct status_record r;

                if (status_record_parse(line, &r))
                        continue;
                if (!strcmp(r.kind, "daemon")) {
                        if (json) {
                                json_rec(&r);
                                fputs(",\"targets\":[", stdout);
                                continue;
                        }
                        printf("daemon %s (%s), mode %s\n", get(&r, "pid"), get(&r, "state"),
                               get(&r, "mode"));
                        printf("  samples %s (%s with context), lost %s, torn %s, threads %s\n",
                               get(&r, "received"), get(&r, "context_samples"), get(&r, "lost"),
                               get(&r, "torn"), get(&r, "threads"));
                        printf("  targets %s, files written %s (deleted %s), %s bytes\n",
                               get(&r, "targets"), get(&r, "files_written"),
                               get(&r, "files_deleted"), get(&r, "bytes_written"));
                        printf("  current file %s\n", get(&r, "current_file"));
                        if (!strcmp(get(&r, "split"), "process"))
                                printf("  split per process: %s files open, %s samples past "
                                       "split-max-open (in the host file)\n",
                                       get(&r, "process_files"), get(&r, "overflow_samples"));
                        printf("\n  %8s %-16s %10s %10s %7s %-7s %s\n", "PID", "COMM", "SAMPLES",
                               "CONTEXT", "THREADS", "LOCATED", "FILE");
                } else if (!strcmp(r.kind, "target")) {
                        if (json) {
                                if (ntargets++)
                                        putchar(',');
                                json_rec(&r);
                                continue;
                        }
                        printf("  %8s %-16s %10s %10s %7s %-7s %s\n", get(&r, "pid"),
                               get(&r, "comm"), get(&r, "samples"), get(&r, "context_samples"),
                               get(&r, "threads"), get(&r, "context"), get(&r, "file"));
                }
        }
        fclose(f);
        if (json)
                puts("]}");
        return 0;
}

const struct ctxprof_cmd status_cmd = {"status", "show what the running daemon samples",
                                       cmd_status};
