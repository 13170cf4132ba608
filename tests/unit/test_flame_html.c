/* SPDX-License-Identifier: MIT */
/*
 * test_flame_html.c — the HTML flame graph writer (sink/flame_html.c): the page is the
 * embedded one with d3 and d3-flame-graph in it and the profile in its slot; equal (stack,
 * thread, span, labels) add up into one row, different ones do not; strings are interned
 * once; a label holding "</script>" or quotes cannot leave the JSON string nor end the
 * script element; the span is 16 hex digits, -1 without one.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sink/flame_html.h"
#include "sink/flame_page.h"

static void page_of(struct flame_html *h, char **buf, size_t *len)
{
        FILE *f = open_memstream(buf, len);

        cr_assert(f);
        cr_assert_eq(flame_html_write(h, f, "t<i>tle"), 0);
        fclose(f);
}

/* The JSON between the script element's start and its end. */
static char *profile_json(const char *page)
{
        const char *start = strstr(page, "id=\"profile\">\n");
        const char *end;

        cr_assert(start);
        start += strlen("id=\"profile\">\n");
        end = strstr(start, "\n</script>");
        cr_assert(end);
        return strndup(start, (size_t)(end - start));
}

Test(flame_html, rows_add_up_and_strings_are_escaped)
{
        const char *stack_a[] = {"main", "worker", "spin"}, *stack_b[] = {"main", "idle"};
        struct flame_label l1[] = {{"route", "/checkout", 5, 9}, {"tier", "pro", 4, 3}};
        struct flame_label evil[] = {{"k\"ey", "</script><b>&", 4, 13}};
        struct flame_sample s = {.frames = stack_a,
                                 .n_frames = 3,
                                 .thread = "w-1 (demo-7)",
                                 .labels = l1,
                                 .n_labels = 2,
                                 .count = 3};
        struct flame_html *h;
        size_t len, plen;
        char *page = NULL, *json;

        cr_assert_eq(flame_html_new(&h), 0);
        cr_assert_eq(flame_html_add(h, &s), 0);
        s.count = 2; /* the same key again: one row of 5 */
        cr_assert_eq(flame_html_add(h, &s), 0);
        s.has_span = 1;
        s.span_id = 0xabc;
        s.count = 1;
        cr_assert_eq(flame_html_add(h, &s), 0);
        s = (struct flame_sample){.frames = stack_b,
                                  .n_frames = 2,
                                  .thread = "w-1 (demo-7)",
                                  .labels = evil,
                                  .n_labels = 1,
                                  .count = 4};
        cr_assert_eq(flame_html_add(h, &s), 0);
        cr_assert_eq(flame_html_samples(h), 10);

        page_of(h, &page, &len);
        json = profile_json(page);
        cr_assert_null(strstr(json, "</script"), "%s", json);
        cr_assert_null(strstr(json, "<"), "a raw '<' in the JSON: %s", json);
        cr_assert(strstr(json, "\"title\":\"t\\u003ci\\u003etle\",\"total\":10"), "%s", json);
        cr_assert(strstr(json, "\"k\\\"ey\""), "%s", json);
        cr_assert(strstr(json, "\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\""), "%s", json);
        cr_assert(strstr(json, "\"0000000000000abc\""), "%s", json);
        /* strings: main worker spin w-1 route /checkout tier pro span key value idle */
        cr_assert(strstr(json, "\"stacks\":[[0,1,2],\n[0,"), "%s", json);
        /* rows: 5 without the span (-1), 1 with it, 4 for the other stack */
        cr_assert(strstr(json, "\"rows\":[[5,0,3,-1,"), "%s", json);
        cr_assert(strstr(json, "[1,0,3,8,"), "%s", json);
        cr_assert(strstr(json, "[4,1,3,-1,"), "%s", json);
        /* the page around it is the embedded one, libraries included */
        const char *embedded = flame_page(&plen);
        cr_assert_gt(plen, 100000, "the page holds d3 and d3-flame-graph (%zu bytes)", plen);
        cr_assert(memmem(embedded, plen, "flamegraph", 10));
        cr_assert(strstr(page, "<!DOCTYPE html>") == page);
        cr_assert_null(strstr(page, FLAME_PAGE_SLOT), "the slot was not filled");
        cr_assert_eq(len, plen - strlen(FLAME_PAGE_SLOT) + strlen(json));
        free(json);
        free(page);
        flame_html_free(h);
}
