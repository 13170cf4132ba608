/* SPDX-License-Identifier: MIT */
/*
 * test_context_filter.c — context filters (engine/context_filter.h): every term kind, its
 * negation, AND of terms and of filters, span_id from a span record, exact byte comparison
 * of keys and values, and each syntax error refused without changing the filter.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "engine/context_filter.h"

static struct decoded_sample ds;

static void label(const char *k, const char *v)
{
        struct decoded_label *l = &ds.labels[ds.n_labels++];

        l->key = k;
        l->key_len = strlen(k);
        l->value = v;
        l->value_len = strlen(v);
}

/* A sample with route=/checkout, tier=free. */
static void checkout_free(void)
{
        memset(&ds, 0, sizeof(ds));
        label("route", "/checkout");
        label("tier", "free");
}

static int matches(const char *spec)
{
        struct context_filter f = {0};
        const char *why = NULL;

        cr_assert_eq(context_filter_add(&f, spec, &why), 0, "'%s' refused: %s", spec,
                     why ? why : "?");
        return context_filter_match(&f, &ds);
}

Test(context_filter, no_terms_keeps_everything)
{
        struct context_filter f = {0};

        memset(&ds, 0, sizeof(ds));
        cr_assert(context_filter_match(&f, &ds));
        checkout_free();
        cr_assert(context_filter_match(&f, &ds));
}

Test(context_filter, presence)
{
        memset(&ds, 0, sizeof(ds));
        cr_assert(!matches("has-context"));
        cr_assert(matches("has-no-context"));
        cr_assert(matches("!has-context"));
        ds.has_span = 1;
        ds.span_id = 0x1234;
        cr_assert(matches("has-context"), "a span alone is context");
        cr_assert(!matches("has-no-context"));
        checkout_free();
        cr_assert(matches("has-context"), "labels alone are context");
        cr_assert(!matches("!has-context"));
}

Test(context_filter, key_and_entry)
{
        checkout_free();
        cr_assert(matches("route"));
        cr_assert(!matches("user"));
        cr_assert(matches("!user"));
        cr_assert(!matches("!route"));
        cr_assert(matches("route=/checkout"));
        cr_assert(!matches("route=/search"));
        cr_assert(!matches("route=/checkou"), "values compare whole");
        cr_assert(!matches("route=/checkout/"));
        cr_assert(!matches("Route=/checkout"), "keys compare as bytes");
        cr_assert(matches("!tier=pro"));
        cr_assert(!matches("!tier=free"));
        cr_assert(matches("!user=x"), "a missing key is not equal to any value");
        cr_assert(!matches("route="), "an empty value is a value");
        label("empty", "");
        cr_assert(matches("empty="));
        cr_assert(matches("empty"));
}

Test(context_filter, value_with_equals_sign)
{
        memset(&ds, 0, sizeof(ds));
        label("q", "a=b");
        cr_assert(matches("q=a=b"), "only the first '=' separates key and value");
        cr_assert(!matches("q=a"));
}

Test(context_filter, and_of_terms_and_of_filters)
{
        struct context_filter f = {0};

        checkout_free();
        cr_assert(matches("route=/checkout,tier=free"));
        cr_assert(!matches("route=/checkout,tier=pro"));
        cr_assert(!matches("route=/checkout,!tier=free"));
        cr_assert(matches("has-context,route,!user"));
        cr_assert_eq(context_filter_add(&f, "route=/checkout", NULL), 0);
        cr_assert_eq(context_filter_add(&f, "!tier=pro", NULL), 0);
        cr_assert_eq(f.n, 2);
        cr_assert(context_filter_match(&f, &ds));
        cr_assert_eq(context_filter_add(&f, "tier=pro", NULL), 0);
        cr_assert(!context_filter_match(&f, &ds), "a second filter narrows the first");
}

Test(context_filter, span_id)
{
        memset(&ds, 0, sizeof(ds));
        cr_assert(!matches("span_id"));
        cr_assert(matches("!span_id"));
        ds.has_span = 1;
        ds.span_id = 0xabc;
        cr_assert(matches("span_id"));
        cr_assert(matches("span_id=0000000000000abc"), "16 lowercase hex digits");
        cr_assert(!matches("span_id=abc"));
        /* an OpenTelemetry record's span_id label is the one compared */
        label("span_id", "00f067aa0ba902b7");
        cr_assert(matches("span_id=00f067aa0ba902b7"));
        cr_assert(!matches("span_id=0000000000000abc"));
}

Test(context_filter, first_label_of_a_key)
{
        memset(&ds, 0, sizeof(ds));
        label("k", "1");
        label("k", "2"); /* the decoder drops duplicates; were one left, the first counts */
        cr_assert(matches("k=1"));
        cr_assert(!matches("k=2"));
}

static void refused(const char *spec, int want)
{
        struct context_filter f = {0};
        const char *why = NULL;

        cr_assert_eq(context_filter_add(&f, "tier", NULL), 0);
        cr_assert_eq(context_filter_add(&f, spec, &why), want, "'%s' accepted", spec);
        cr_assert(why && *why, "'%s': no reason given", spec);
        cr_assert_eq(f.n, 1, "'%s': the filter changed", spec);
}

Test(context_filter, syntax_errors)
{
        char key[CTXPROF_LABEL_KEY_MAX + 2], val[CTXPROF_LABEL_VAL_MAX + 8];
        struct context_filter f = {0};

        refused("", -EINVAL);
        refused(",", -EINVAL);
        refused("a,", -EINVAL);
        refused(",a", -EINVAL);
        refused("a,,b", -EINVAL);
        refused("=x", -EINVAL);
        refused("!", -EINVAL);
        refused("!=x", -EINVAL);
        refused("a=b,=c", -EINVAL);
        memset(key, 'k', sizeof(key) - 1);
        key[sizeof(key) - 1] = '\0';
        refused(key, -EINVAL);
        strcpy(val, "k=");
        memset(val + 2, 'v', CTXPROF_LABEL_VAL_MAX + 1);
        val[2 + CTXPROF_LABEL_VAL_MAX + 1] = '\0';
        refused(val, -EINVAL);
        val[2 + CTXPROF_LABEL_VAL_MAX] = '\0';
        cr_assert_eq(context_filter_add(&f, val, NULL), 0, "a value at the cap is fine");
        key[CTXPROF_LABEL_KEY_MAX] = '\0';
        cr_assert_eq(context_filter_add(&f, key, NULL), 0, "a key at the cap is fine");
}

Test(context_filter, too_many_terms)
{
        struct context_filter f = {0};
        unsigned i;

        for (i = 0; i < CONTEXT_FILTER_MAX_TERMS - 1; i++)
                cr_assert_eq(context_filter_add(&f, "a", NULL), 0);
        cr_assert_eq(context_filter_add(&f, "b,c", NULL), -E2BIG);
        cr_assert_eq(f.n, CONTEXT_FILTER_MAX_TERMS - 1, "nothing added on error");
        cr_assert_eq(context_filter_add(&f, "b", NULL), 0);
        cr_assert_eq(f.n, CONTEXT_FILTER_MAX_TERMS);
}

/* Which filters let BPF drop a sample that read no context (none can keep it). */
Test(context_filter, needs_context)
{
        static const struct {
                const char *spec;
                int needs;
        } cases[] = {
            {"has-context", 1},     {"!has-no-context", 1},  {"route", 1},
            {"route=/checkout", 1}, {"!tier=free,route", 1}, {"has-no-context", 0},
            {"!has-context", 0},    {"!route", 0},           {"!tier=free", 0},
        };
        struct context_filter none = {0};

        cr_assert_eq(context_filter_needs_context(&none), 0, "no terms keep everything");
        for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct context_filter f = {0};

                cr_assert_eq(context_filter_add(&f, cases[i].spec, NULL), 0, "%s", cases[i].spec);
                cr_assert_eq(context_filter_needs_context(&f), cases[i].needs, "%s", cases[i].spec);
                /* the rule it stands for: a sample without context fails f */
                struct decoded_sample s = {0};
                cr_assert_eq(!context_filter_match(&f, &s), cases[i].needs, "%s: match",
                             cases[i].spec);
        }
}
