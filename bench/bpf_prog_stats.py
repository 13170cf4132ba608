#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# bpf_prog_stats.py — prints "run_time_ns run_cnt target_samples" for the newest loaded
# ctxprof_sample program: BPF stats from `bpftool prog show` and the CTXPROF_CNT_SAMPLES
# counter (first u64 of the per-CPU `counters` map it uses) summed over CPUs. Used by
# bench_sampler.sh while a recording runs; prints "0 0 0" when nothing is loaded.
import json
import subprocess


def bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True)
    return json.loads(out.stdout or "null")


progs = [p for p in bpftool("prog", "show") or [] if p.get("name") == "ctxprof_sample"]
if not progs:
    print("0 0 0")
    raise SystemExit(0)
prog = max(progs, key=lambda p: p["id"])
samples = 0
for mid in prog.get("map_ids", []):
    info = bpftool("map", "show", "id", str(mid)) or {}
    if info.get("name") != "counters":
        continue
    for entry in bpftool("map", "dump", "id", str(mid)) or []:
        for cpu in entry.get("values", []):
            raw = bytes(int(b, 16) for b in cpu["value"][:8])
            samples += int.from_bytes(raw, "little")
print(prog.get("run_time_ns", 0), prog.get("run_cnt", 0), samples)
