/* SPDX-License-Identifier: MIT */
/*
 * parser_confine.h — what the parser helper does to itself before it reads any request: no
 * descriptor but its socket, the parent's death kills it, not dumpable, bounded address
 * space / descriptors / no core, no supplementary groups, the parser user's gid and uid
 * (never 0), every capability set empty (effective, permitted, inheritable, ambient,
 * bounding), no_new_privs, and a seccomp allowlist whose default is to kill the process.
 * Never prints (the helper's exit code says which step failed: util/parser_wire.h).
 */
#ifndef CTXPROF_PARSER_CONFINE_H
#define CTXPROF_PARSER_CONFINE_H

#define PARSER_AS_MAX     (8ull << 30)     /* RLIMIT_AS: the largest debug files mapped whole */
#define PARSER_COMM       "ctxprof-parser" /* its comm */
#define PARSER_NOFILE_MAX 1024 /* RLIMIT_NOFILE: PARSER_MAX_MODULES files + debug files */

/* 0, or the PARSER_EXIT_* of the step that failed. sock is the one descriptor kept (with
 * 0, 1 and 2). user: a user name (NULL or "": PARSER_USER_DEFAULT, or uid/gid
 * PARSER_UID_FALLBACK when the system has no such user). */
int parser_confine(int sock, const char *user);

#endif
