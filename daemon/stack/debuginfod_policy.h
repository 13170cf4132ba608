/* SPDX-License-Identifier: MIT */
/*
 * debuginfod_policy.h — whether elfutils may fetch files from debuginfod servers. Owns the
 * process environment variables libdw reads for that; never fetches, never prints.
 *
 * The rule: off unless CTXPROF_DEBUGINFOD=1. libdw contacts every server in DEBUGINFOD_URLS
 * for each module without a local debug file, from inside DWARF unwinding (the consumer
 * thread: sampling stalls) and symbolization (the writer thread: rotation waits; 85 connects
 * in one run, a slow server delayed rotation by ~1 s), and keeps a socket per client. libdw
 * reads DEBUGINFOD_URLS once, at its first lookup, so the policy is applied before any Dwfl
 * exists. Opted in, DEBUGINFOD_TIMEOUT defaults to DEBUGINFOD_TIMEOUT_S.
 */
#ifndef CTXPROF_DEBUGINFOD_POLICY_H
#define CTXPROF_DEBUGINFOD_POLICY_H

#define DEBUGINFOD_TIMEOUT_S "5" /* seconds per server request when opted in */

/* Apply the rule to this process's environment (a command started later gets its own copy
 * taken before, or must be given it back). Returns 1 if debuginfod stays enabled, 0 if it
 * was turned off (DEBUGINFOD_URLS was set), -1 if there was nothing to turn off. */
int debuginfod_policy_apply(void);

#endif
