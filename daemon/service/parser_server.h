/* SPDX-License-Identifier: MIT */
/*
 * parser_server.h — the parser helper process (`ctxprof __parser FD USER`, started by
 * util/parser_client.h; not a user command): confines itself (parser_confine.h), says READY,
 * then answers one request at a time until the daemon closes the socket. It parses what
 * targets give (module ELF/DWARF: stack/elf_syms.h; OTEP 4719 process-context protobufs:
 * engine/otel_process_ctx.h) with no privilege, so a parser bug a target's bytes trigger
 * runs as the parser user, without capabilities, under seccomp.
 * Each request runs under a timer: past PARSER_SELF_DEADLINE_MS its SIGALRM ends the helper.
 * Keeps at most PARSER_MAX_MODULES modules open (least recently used closed). Never prints.
 */
#ifndef CTXPROF_PARSER_SERVER_H
#define CTXPROF_PARSER_SERVER_H

#define PARSER_MAX_MODULES 256 /* = SYM_MAX_OPEN */

/* main() of the helper: argv = {LANE, PARSER_MODE, FD, USER} (LANE, which lane it serves:
 * "ctxprof-parser:system" or "ctxprof-parser:uid=N", util/parser_client.c). Its exit code: 0
 * when the daemon closed the channel, else a PARSER_EXIT_* (util/parser_wire.h). */
int parser_server_main(int argc, char **argv);

#endif
