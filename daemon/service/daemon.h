/* SPDX-License-Identifier: MIT */
/*
 * service/daemon.h — `ctxprof daemon` as an object: selection, reload, recovery, retention,
 * uploads, status, metrics and the event loop they run on (docs/daemon.md). The command
 * (cli/cmd_daemon.c) gives it the configuration (file + flags, built again at every SIGHUP)
 * and a printer for its log lines, and turns its results into exit statuses.
 *
 * One daemon per process: it blocks SIGTERM, SIGINT and SIGHUP in every thread (read from a
 * signalfd) and its log level is process-wide (every thread logs). Never prints itself.
 */
#ifndef CTXPROF_SERVICE_DAEMON_H
#define CTXPROF_SERVICE_DAEMON_H

#include "service/config.h"

/* One log line (no newline), at an sd-daemon level (LOG_ERROR ... LOG_DEBUG); called from
 * any thread. */
typedef void (*daemon_print_fn)(int level, const char *line);

struct daemon_opts {
        const char *config_path; /* named in the reload's log line; NULL: flags only */
        int no_drop;             /* --no-drop-privileges: keep every capability */
        /* Defaults, then the file, then the flags, into c: 0, or -1 with the error logged
         * (daemon_log). At start and at every SIGHUP. */
        int (*build_config)(void *ctx, struct daemon_config *c);
        void *ctx;
        daemon_print_fn print;
};

struct daemon;

/* The configuration, the sampler, the output directory (recovered), the uploaders, the
 * privileges dropped, the running processes selected. 0 and *out, or the exit status (2:
 * the configuration was refused, 1: anything else), logged; nothing to free then. */
int daemon_start(const struct daemon_opts *o, struct daemon **out);
/* Sample until SIGTERM/SIGINT (or a ring error): reloads, rotation, retention, status. */
void daemon_run(struct daemon *);
/* Drain, write the last chunks, a last retention pass and status: 0, or 1 when finishing a
 * file failed. */
int daemon_finish(struct daemon *);
void daemon_free(struct daemon *); /* NULL is fine */

/* A log line through the daemon's printer when level is within the configured log level. */
__attribute__((format(printf, 2, 3))) void daemon_log(int level, const char *fmt, ...);

#endif
