/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_checksum.c — the span checksum (Knuth multiplicative hash) against
 * vectors computed here by an independent formulation: 128-bit products reduced mod 2^64 and
 * the root id's halves swapped with division/remainder, never the library's expression.
 * Also checks what ctx_set_span/ctx_clear_span actually write into the TLS record.
 */
#include <criterion/criterion.h>

#include "ctx/ctx.h"

extern __thread struct ctx_span_context ctx_span_context_v1;

static uint64_t ref_checksum(uint64_t span, uint64_t root)
{
        const unsigned __int128 two64 = (unsigned __int128)1 << 64;
        const uint64_t K = 11400714819323198485ULL; /* 0x9E3779B97F4A7C15 in decimal */
        uint64_t hi = root / 4294967296ULL, lo = root % 4294967296ULL;
        uint64_t swapped = lo * 4294967296ULL + hi;
        uint64_t a = (uint64_t)(((unsigned __int128)span * K) % two64);
        uint64_t b = (uint64_t)(((unsigned __int128)swapped * K) % two64);
        uint64_t h = a ^ b;
        return h == 0 ? ~(uint64_t)0 : h;
}

/* what an implementation without the half-swap would compute, same independent style */
static uint64_t ref_noswap(uint64_t span, uint64_t root)
{
        const unsigned __int128 two64 = (unsigned __int128)1 << 64;
        const uint64_t K = 11400714819323198485ULL;
        uint64_t a = (uint64_t)(((unsigned __int128)span * K) % two64);
        uint64_t b = (uint64_t)(((unsigned __int128)root * K) % two64);
        uint64_t h = a ^ b;
        return h == 0 ? ~(uint64_t)0 : h;
}

Test(libctx_checksum, vectors)
{
        /* hand-checkable anchors */
        cr_assert_eq(ref_checksum(1, 0), 0x9E3779B97F4A7C15ULL);
        cr_assert_eq(ref_checksum(0, 1ULL << 32), 0x9E3779B97F4A7C15ULL, "halves swapped");
        cr_assert_eq(ref_checksum(0, 1), 0x7F4A7C1500000000ULL, "1 << 32 times K mod 2^64");

        struct {
                uint64_t span, root;
        } v[] = {
            {0, 0},          /* h = 0 -> all ones */
            {1ULL << 32, 1}, /* span == swap(root) -> h = 0 -> all ones */
            {0x0123456789ABCDEFULL, 0x89ABCDEF01234567ULL}, /* == swap -> 0 -> ones */
            {1, 0},
            {0, 1},
            {0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL},
            {0x1122334455667788ULL, 0x99AABBCCDDEEFF00ULL},
            {42, 42},
            {0xDEADBEEF, 0xCAFEBABE00000000ULL},
        };
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                uint64_t want = ref_checksum(v[i].span, v[i].root);
                cr_assert_eq(ctx_span_checksum(v[i].span, v[i].root), want, "vector %zu", i);
                cr_assert_neq(want, 0);
        }
        cr_assert_eq(ctx_span_checksum(0, 0), 0xFFFFFFFFFFFFFFFFULL);
        cr_assert_eq(ctx_span_checksum(1ULL << 32, 1), 0xFFFFFFFFFFFFFFFFULL);
        /* The half-swap makes the hash tell {span, root} from {root, span}. Without it the
         * hash is symmetric (a·K ^ b·K), so a record whose two ids were exchanged would still
         * validate. (Two roots with the same span never collide, swap or not: x·K is a
         * bijection, so a check on such a pair cannot see the swap.) */
        const uint64_t a = 0x0000000100000002ULL, b = 5;
        cr_assert_eq(ref_noswap(a, b), ref_noswap(b, a), "no swap: symmetric");
        cr_assert_neq(ctx_span_checksum(a, b), ctx_span_checksum(b, a), "swap: not symmetric");
        /* and the library hashes the swapped root, not the plain one: 0·K ^ swap(1)·K is
         * 2^32·K, where the plain hash would give 1·K */
        cr_assert_neq(ref_noswap(0, 1), 0x7F4A7C1500000000ULL);
        cr_assert_eq(ctx_span_checksum(0, 1), 0x7F4A7C1500000000ULL);
        cr_assert_eq(ctx_span_checksum(0, 1ULL << 32), 0x9E3779B97F4A7C15ULL);
}

Test(libctx_checksum, record_written_by_library)
{
        uint64_t x = 0x243F6A8885A308D3ULL; /* pi digits: a cheap deterministic sequence */
        for (int i = 0; i < 1000; i++) {
                uint64_t s = x, r = x * 6364136223846793005ULL + 1442695040888963407ULL;
                x = r ^ (r >> 29);
                if (i == 0)
                        s = 0, r = 0;
                cr_assert_eq(ctx_set_span(s, r), 0);
                cr_assert_eq(ctx_span_context_v1.span_id, s);
                cr_assert_eq(ctx_span_context_v1.root_span_id, r);
                cr_assert_eq(ctx_span_context_v1.checksum, ref_checksum(s, r), "i=%d", i);
        }
        cr_assert_eq(ctx_clear_span(), 0);
        cr_assert_eq(ctx_span_context_v1.checksum, 0);
}
