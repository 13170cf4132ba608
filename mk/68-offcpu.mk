# SPDX-License-Identifier: MIT
# Off-CPU profiling (bpf/offcpu.bpf.h, --event off-cpu/wall): the workload its root tests
# profile and its benchmark. Owner: offcpu. Built like the sampler's workloads (frame
# pointers, libctx.a with its TLS exported, no sanitizer); no sibling calls, so that each
# do_* function stays on the stack it blocks in.
OFFCPU_WL := $(SM_WL)/wl_offcpu
TEST_TARGETS += $(OFFCPU_WL)

$(SM_WL)/wl_offcpu: tests/workloads/wl_offcpu.c $(LIBCTX_A) libctx/libctx.dynlist mk/68-offcpu.mk
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fno-optimize-sibling-calls -o $@ $< $(LIBCTX_A) -Wl,--dynamic-list=libctx/libctx.dynlist \
		$(SM_WL_LDFLAGS)
BENCHES += bench/bench_offcpu.sh
