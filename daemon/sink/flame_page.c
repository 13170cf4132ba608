/* SPDX-License-Identifier: MIT */
/*
 * flame_page.c — embeds the built flame graph page ($(B)/gen/flame_page.html, made by
 * mk/75-html.mk from web/flamegraph.html and web/vendor/) in .rodata with .incbin, so the
 * binary writes a self-contained page with no file or network access. Owns nothing else;
 * must never be built without the page (FLAME_PAGE_PATH below).
 */
#include "sink/flame_page.h"

#ifndef FLAME_PAGE_PATH
#error "FLAME_PAGE_PATH (the built page) is set by mk/75-html.mk"
#endif

__asm__(".section .rodata\n"
        ".balign 16\n"
        "ctxprof_flame_page_start:\n"
        ".incbin \"" FLAME_PAGE_PATH "\"\n"
        "ctxprof_flame_page_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char ctxprof_flame_page_start[] __asm__("ctxprof_flame_page_start");
extern const char ctxprof_flame_page_end[] __asm__("ctxprof_flame_page_end");

const char *flame_page(size_t *len)
{
        *len = (size_t)(ctxprof_flame_page_end - ctxprof_flame_page_start);
        return ctxprof_flame_page_start;
}
