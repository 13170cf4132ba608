/* SPDX-License-Identifier: MIT */
/*
 * flame_page.h — the HTML flame graph page, built from web/flamegraph.html with d3 and
 * d3-flame-graph inlined (mk/75-html.mk) and embedded in the binary at link time. Read-only
 * bytes; the profile goes where the line FLAME_PAGE_SLOT is (sink/flame_html.c does that).
 */
#ifndef CTXPROF_FLAME_PAGE_H
#define CTXPROF_FLAME_PAGE_H

#include <stddef.h>

#define FLAME_PAGE_SLOT "@PROFILE_JSON@"

/* The page's bytes and their length (no NUL terminator counted). */
const char *flame_page(size_t *len);

#endif
