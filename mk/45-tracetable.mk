# SPDX-License-Identifier: MIT
# Trace table (daemon/sink/trace_table.c, daemon/sink/hazard.c): its benchmark. The unit and TSan tests
# are found by naming convention (tests/unit/test_trace_table.c, tests/unit/tsan_trace_table.c).
# Owner of this fragment: tracetable.
BENCH_TRACE_TABLE := $(B)/bench/bench_trace_table
BENCHES += $(BENCH_TRACE_TABLE)

$(BENCH_TRACE_TABLE): bench/bench_trace_table.c $(B)/libctxprof.a | $(BPF_SKELS)
	@echo "  BENCH   $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -MMD -MP -o $@ $< $(B)/libctxprof.a $(DAEMON_LIBS) $(ALL_LDFLAGS)

-include $(wildcard $(B)/bench/bench_trace_table.d)
