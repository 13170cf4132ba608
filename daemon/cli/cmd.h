/* SPDX-License-Identifier: MIT */
/*
 * cmd.h — the ctxprof command table (bpftool style: one file per subcommand, each
 * exporting one `struct ctxprof_cmd`). main.c owns the table; a command never calls exit()
 * except through its return value.
 */
#ifndef CTXPROF_CMD_H
#define CTXPROF_CMD_H

struct ctxprof_cmd {
        const char *name;
        const char *summary; /* one line for `ctxprof --help` */
        /* argv[0] is the command name; return the process exit status (0 ok, 1 error, 2 usage) */
        int (*run)(int argc, char **argv);
};

extern const char *ctxprof_version;

#endif
