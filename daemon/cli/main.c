/* SPDX-License-Identifier: MIT */
/*
 * main.c — ctxprof entry point: dispatches to the subcommand table. Owns nothing else:
 * no global state, no setup that a subcommand did not ask for. argv[1] = PARSER_MODE starts
 * the parser helper (service/parser_server.h): internal, started by the daemon and record,
 * never listed in --help.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "service/parser_server.h"
#include "util/parser_wire.h"

const char *ctxprof_version = "0.1.0";

static int cmd_version(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        printf("ctxprof %s\n", ctxprof_version);
        return 0;
}

static const struct ctxprof_cmd version_cmd = {"version", "print the version", cmd_version};
extern const struct ctxprof_cmd record_cmd;
extern const struct ctxprof_cmd report_cmd;
extern const struct ctxprof_cmd daemon_cmd;
extern const struct ctxprof_cmd status_cmd;

/* Subcommands. One line per command; each lives in daemon/cli/cmd_NAME.c. */
static const struct ctxprof_cmd *const commands[] = {
    &version_cmd, &record_cmd, &report_cmd, &daemon_cmd, &status_cmd,
};

static void usage(FILE *f)
{
        fprintf(f,
                "usage: ctxprof COMMAND [OPTIONS]\n\n"
                "ctxprof samples native processes with perf events and eBPF and records, for\n"
                "every sample, the thread's trace context (span ids, Custom Labels) and stack.\n\n"
                "commands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
        fprintf(f, "\nRun 'ctxprof COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                usage(stderr);
                return 2;
        }
        if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
                usage(stdout);
                return 0;
        }
        if (!strcmp(argv[1], PARSER_MODE))
                return parser_server_main(argc, argv);
        if (!strcmp(argv[1], "--version"))
                return cmd_version(argc, argv);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (!strcmp(argv[1], commands[i]->name))
                        return commands[i]->run(argc - 1, argv + 1);
        fprintf(stderr, "ctxprof: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
}
