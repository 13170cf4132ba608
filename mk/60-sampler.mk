# Sampler (bpf/sampler.bpf.c, daemon/sampler*.c, collapsed, cmd_record): the workloads its
# root tests profile and its benchmarks. Owner: sampler.
#
# Workloads are *targets*: built with frame pointers and without the variant's sanitizer
# flags (ASan would change the stacks under test). Until libctx is merged they publish
# context through tests/workloads/ctx_shim.c (same ABI), exported with -rdynamic so the
# TLS locator finds the symbols in .dynsym.
SM_WL := $(B)/tests/workloads
SM_WL_CFLAGS = $(filter-out $(SANFLAGS),$(ALL_CFLAGS)) -O2 -g -fno-omit-frame-pointer \
               -mno-omit-leaf-frame-pointer
SM_WL_LDFLAGS = $(filter-out $(SANFLAGS),$(ALL_LDFLAGS)) -rdynamic -lpthread
SM_WORKLOADS := $(SM_WL)/wl_attrib $(SM_WL)/wl_garbage
ALL_TARGETS += $(SM_WORKLOADS)
BENCHES += bench/bench_sampler.sh

$(SM_WL)/%: tests/workloads/%.c tests/workloads/ctx_shim.c
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $^ $(SM_WL_LDFLAGS)
