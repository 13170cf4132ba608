/* SPDX-License-Identifier: MIT */
/*
 * json_out.h — the CLI's JSON output: a string value, escaped (RFC 8259). The commands
 * write the structure themselves with printf; this is the one place that escapes.
 */
#ifndef CTXPROF_JSON_OUT_H
#define CTXPROF_JSON_OUT_H

#include <stdio.h>

/* s as a JSON string, quotes included. */
void json_string(FILE *f, const char *s);

#endif
