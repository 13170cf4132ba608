# SPDX-License-Identifier: MIT
# bench_lib.sh — sourced by the root benches that read the kernel's BPF stats, after they cd to
# the repository: `. bench/bench_lib.sh NAME`. Skips (exit 0) without root; makes $TMP,
# removed at exit; puts kernel.bpf_stats_enabled back at exit to what it was (the benches
# turn it on). Printed numbers only: nothing here asserts.
bench_name=$1
[ "$(id -u)" = 0 ] || { echo "$bench_name: needs root, skipped"; exit 0; }
TMP=$(mktemp -d "/tmp/ctxprof-$bench_name.XXXXXX")
old_stats=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
trap 'echo "$old_stats" > /proc/sys/kernel/bpf_stats_enabled 2>/dev/null; rm -rf "$TMP"' EXIT
