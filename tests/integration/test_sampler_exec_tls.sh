#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# A TLS location is never applied to an image other than the one it was made for. The daemon
# reads a process's files and memory, then publishes where its context lives; an exec in
# between (the daemon preempted on a busy host) used to overwrite BPF's reset with the old
# image's offsets, followed in the new image until the daemon had handled its exec event and
# located again. Here every publication is delayed by 40 ms (CTXPROF_TEST_LOCATE_DELAY_MS):
# wl_exec_ctx (libctx, img=ctx) execs wl_exec_plain after 20..50 ms, so most of its
# locations are published after it exec'ed, and wl_exec_plain (100 ms) keeps the old one for
# the 40 ms its own location takes. wl_exec_plain is a decoy: its TLS holds pointers to a
# label set img=stale exactly where wl_exec_ctx keeps libctx's variables. No sample may carry
# img=stale and no wl_exec_plain sample any label; the refusals are counted; wl_exec_ctx
# still gets its context. (Before the fix: 200-300 samples with img=stale per run.)
. "$(dirname "$0")/sampler_lib.sh"
[ -x "$WL/wl_exec_ctx" ] && [ -x "$WL/wl_exec_plain" ] || fail "no $WL/wl_exec_*"

CTXPROF_TEST_LOCATE_DELAY_MS=40 record_ok 120 -F 999 -o "$TMP/out.txt" -- \
	"$WL/wl_exec_ctx" 20 20-50 100
stale=$(count "$TMP/out.txt" 'img=stale')
ctx=$(count "$TMP/out.txt" '^wl_exec_ctx-[0-9]+;wl_exec_ctx;img=ctx;')
plain_ctx=$(count "$TMP/out.txt" '^wl_exec_plain-[0-9]+;wl_exec_plain;[^;]*=')
refused=$(stat_json .stale_tls_locations_refused)
echo "img=stale: $stale samples; wl_exec_ctx with img=ctx: $ctx; wl_exec_plain samples with" \
	"labels: $plain_ctx; refused: ${refused:-?}"
grep 'img=stale' "$TMP/out.txt" | head -3
[ "$stale" = 0 ] || fail "$stale samples read the decoy through a stale location"
[ "$plain_ctx" = 0 ] || fail "$plain_ctx wl_exec_plain samples carry labels"
[ "${refused:-0}" -gt 0 ] || fail "no stale location was refused: the race was not exercised"
[ "$ctx" -ge 5 ] || fail "context missing in wl_exec_ctx ($ctx samples with img=ctx)"
echo PASS
