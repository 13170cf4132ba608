/* SPDX-License-Identifier: MIT */
/*
 * cmd_daemon.c — `ctxprof daemon`: its flags (every configuration key is one, kept to be
 * applied again at every reload), the configuration from the file and the flags (errors with
 * their line), the log lines printed to stderr with sd-daemon level prefixes (<3> error ...
 * <7> debug) and the exit status. The daemon itself is service/daemon.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "cli/cmd.h"
#include "service/config.h"
#include "service/daemon.h"

#define MAX_FLAGS 64

/* The parse stage's result. */
struct daemon_flags {
        const char *config_path;
        const char *flag_key[MAX_FLAGS], *flag_val[MAX_FLAGS];
        char flag_buf[MAX_FLAGS][64]; /* the flags' keys */
        int nflags;
        int no_drop; /* --no-drop-privileges */
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        char buf[1024];

        if (level != LIBBPF_WARN)
                return 0;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        buf[strcspn(buf, "\n")] = '\0';
        daemon_log(LOG_DEBUG, "libbpf: %s", buf);
        return 0;
}

static const char *config_error(int err)
{
        switch (err) {
        case -ENOENT:
                return "unknown setting";
        case -ENOTSUP:
                return "not implemented in this version";
        case -EINVAL:
                return "bad value";
        case -EEXIST:
                return "set twice";
        case -E2BIG:
                return "line too long (libinih reads at most 197 characters; use the flag)";
        default:
                return strerror(-err);
        }
}

/* Defaults, then the file (if any), then the flags. 0 or -1 (logged). */
static int build_config(void *ctx, struct daemon_config *c)
{
        struct daemon_flags *d = ctx;
        struct config_error e = {0};
        const char *values;
        int i, err;

        config_defaults(c);
        err = d->config_path ? config_load(c, d->config_path, &e) : 0;
        values = e.why ? e.why : err == -EINVAL && e.key[0] ? config_values(e.key) : NULL;
        if (err == -EEXIST)
                daemon_log(LOG_ERROR, "%s:%d: %s set twice (first on line %d)", d->config_path,
                           e.line, e.key, e.first_line);
        else if (err && e.line > 0)
                daemon_log(LOG_ERROR, "%s:%d: %s%s%s%s%s%s", d->config_path, e.line,
                           config_error(err), e.key[0] ? ": " : "", e.key, values ? " (" : "",
                           values ? values : "", values ? ")" : "");
        else if (err)
                daemon_log(LOG_ERROR, "cannot read %s: %s", d->config_path, strerror(-err));
        if (err)
                return -1;
        for (i = 0; i < d->nflags; i++) {
                err = config_set(c, NULL, d->flag_key[i], d->flag_val[i]);
                values = err == -EINVAL ? config_values(d->flag_key[i]) : NULL;
                if (err) {
                        daemon_log(LOG_ERROR, "--%s %s: %s%s%s%s", d->flag_key[i], d->flag_val[i],
                                   config_error(err), values ? " (" : "", values ? values : "",
                                   values ? ")" : "");
                        return -1;
                }
        }
        return 0;
}

static void help(FILE *f)
{
        int i;

        fprintf(f, "usage: ctxprof daemon [--config FILE] [--KEY VALUE ...]\n"
                   "\n"
                   "Profile the selected processes of this host continuously into rotated JFR\n"
                   "recordings. Settings come from FILE (INI, see docs/daemon.md) and from flags,\n"
                   "which override it; every key is also a flag:\n");
        for (i = 0; config_keys[i]; i++)
                fprintf(f, "  --%s VALUE%s", strchr(config_keys[i], '.') + 1,
                        i % 3 == 2 ? "\n" : "");
        fprintf(f, "\n\nSIGHUP reloads FILE; SIGTERM/SIGINT write the last chunk and exit 0.\n"
                   "Needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE ...; see docs/daemon.md).\n");
}

/* Parse stage: --help, --no-drop-privileges, --config FILE and --KEY VALUE / --KEY=VALUE
 * flags (kept for build_config). -1 to go on, else the exit status. */
static int parse_flags(struct daemon_flags *d, int argc, char **argv)
{
        int i;

        for (i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                        help(stdout);
                        return 0;
                }
                if (!strcmp(a, "--no-drop-privileges")) {
                        d->no_drop = 1;
                        continue;
                }
                if (strncmp(a, "--", 2) || !a[2]) {
                        fprintf(stderr, "ctxprof daemon: unexpected argument '%s'\n", a);
                        help(stderr);
                        return 2;
                }
                a += 2;
                const char *eq = strchr(a, '='), *val;
                char *key = d->flag_buf[d->nflags % MAX_FLAGS];
                size_t kl = eq ? (size_t)(eq - a) : strlen(a);

                if (eq) {
                        val = eq + 1;
                } else if (i + 1 < argc) {
                        val = argv[++i];
                } else {
                        fprintf(stderr, "ctxprof daemon: --%s needs a value\n", a);
                        return 2;
                }
                if (kl >= sizeof(d->flag_buf[0]) || d->nflags == MAX_FLAGS) {
                        fprintf(stderr, "ctxprof daemon: bad option --%s\n", a);
                        return 2;
                }
                memcpy(key, a, kl);
                key[kl] = '\0';
                if (!strcmp(key, "config")) {
                        d->config_path = val;
                        continue;
                }
                d->flag_key[d->nflags] = key;
                d->flag_val[d->nflags] = val;
                d->nflags++;
        }
        return -1;
}

/* Every log line of the daemon: stderr, with its sd-daemon level prefix. */
static void print_line(int level, const char *line)
{
        fprintf(stderr, "<%d>ctxprof: %s\n", level, line);
}

static int cmd_daemon(int argc, char **argv)
{
        static struct daemon_flags f; /* the flags' keys: kept for every reload */
        struct daemon_opts o = {.build_config = build_config, .ctx = &f, .print = print_line};
        struct daemon *d;
        int rc;

        memset(&f, 0, sizeof(f));
        rc = parse_flags(&f, argc, argv);
        if (rc >= 0)
                return rc;
        o.config_path = f.config_path;
        o.no_drop = f.no_drop;
        libbpf_set_print(libbpf_log);
        rc = daemon_start(&o, &d);
        if (rc)
                return rc;
        daemon_run(d);
        rc = daemon_finish(d);
        daemon_free(d);
        return rc;
}

const struct ctxprof_cmd daemon_cmd = {"daemon", "profile selected processes continuously",
                                       cmd_daemon};
