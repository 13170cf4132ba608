# SPDX-License-Identifier: MIT
# The library-load hook and the event bounds (daemon/engine/load_hook.c, bpf/sampler.bpf.c):
# the hostile target of tests/hostile/test_event_flood.sh and test_fork_bomb.sh (libctx
# linked in statically, so an unprivileged copy runs anywhere), and the bench of what a
# non-target's syscalls and spawns cost while ctxprof runs. Owner: hooks.
HOOKS_FX := $(B)/tests/fixtures
ALL_TARGETS += $(HOOKS_FX)/fx_event_flood
BENCHES += bench/bench_syscall.sh

$(HOOKS_FX)/fx_event_flood: tests/fixtures/fx_event_flood.c $(B)/libctx.a
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libctx.a -Wl,--dynamic-list=libctx/libctx.dynlist \
		-lpthread -ldl $(ALL_LDFLAGS)

# The JIT-like target of tests/hostile/test_perf_map_*.sh: code in anonymous executable
# memory named by a perf map (libctx linked in statically, like fx_event_flood).
ALL_TARGETS += $(HOOKS_FX)/fx_perf_map

$(HOOKS_FX)/fx_perf_map: tests/fixtures/fx_perf_map.c $(B)/libctx.a
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libctx.a -Wl,--dynamic-list=libctx/libctx.dynlist \
		$(ALL_LDFLAGS)
