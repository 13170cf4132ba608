/* SPDX-License-Identifier: MIT */
/*
 * parser_wire.h — the framing between the daemon and its parser helper (parser_client.h,
 * service/parser_server.h): one SOCK_SEQPACKET message per request or answer, a fixed head
 * then len payload bytes, at most one descriptor (SCM_RIGHTS): the file a request is about,
 * or the sealed memfd a PARSER_CFI answer returns its rows in. What the payload of each type
 * holds is its owner's (stack/sym_wire.h, engine/pctx_wire.h, tls/tls_wire.h,
 * stack/cfi_wire.h). The helper's
 * exit codes, one per confinement step, so that the daemon can say which step failed. Never prints.
 */
#ifndef CTXPROF_PARSER_WIRE_H
#define CTXPROF_PARSER_WIRE_H

#include <stdint.h>

#define PARSER_MAGIC       0x63707073u  /* "cpps" */
#define PARSER_PAYLOAD_MAX (160u << 10) /* bytes after the head; both sides check */
#define PARSER_MODE        "__parser"   /* argv[1] of the helper: not a user command */

enum parser_type {
        PARSER_READY = 1, /* helper -> daemon: confined, serving (no payload) */
        PARSER_SYM = 2,   /* symbolize one file offset (stack/sym_wire.h) */
        PARSER_PCTX = 3,  /* decode an OTEP 4719 process context (engine/pctx_wire.h) */
        PARSER_TLS = 4,   /* thread-local variables of an ELF file (tls/tls_wire.h) */
        PARSER_CFI = 5,   /* the unwind table of an ELF file (stack/cfi_wire.h) */
        PARSER_SPAWN = 6, /* daemon -> its helper spawner: start a helper (parser_spawner.c) */
};

struct parser_head {
        uint32_t magic;
        uint16_t type;
        uint16_t nfds;  /* descriptors with this message: 0 or 1 */
        uint32_t seq;   /* an answer carries its request's */
        int32_t status; /* answers: 0 or -errno */
        uint32_t len;   /* payload bytes that follow */
};
_Static_assert(sizeof(struct parser_head) == 20, "parser_head is a wire struct");

/* The helper's exit status when a step before serving fails (0: the daemon closed the
 * channel). parser_exit_reason (parser_client.h) names each. */
enum parser_exit {
        PARSER_EXIT_ARGS = 40, /* bad command line */
        PARSER_EXIT_USER,      /* the configured parser user does not exist */
        PARSER_EXIT_FDS,       /* close_range */
        PARSER_EXIT_PDEATHSIG, /* PR_SET_PDEATHSIG, or the daemon already gone */
        PARSER_EXIT_RLIMIT,    /* RLIMIT_AS / NOFILE / CORE */
        PARSER_EXIT_DUMPABLE,  /* PR_SET_DUMPABLE 0 */
        PARSER_EXIT_GROUPS,    /* setgroups(0) */
        PARSER_EXIT_GID,       /* setresgid */
        PARSER_EXIT_BOUNDING,  /* clearing the bounding set */
        PARSER_EXIT_UID,       /* setresuid, or uid 0 still */
        PARSER_EXIT_CAPS,      /* a capability set not empty */
        PARSER_EXIT_NNP,       /* PR_SET_NO_NEW_PRIVS */
        PARSER_EXIT_SECCOMP,   /* building or loading the seccomp filter */
        PARSER_EXIT_CHANNEL,   /* the READY message could not be sent */
        PARSER_EXIT_LAST = PARSER_EXIT_CHANNEL,
};

#endif
