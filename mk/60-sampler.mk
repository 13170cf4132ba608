# Sampler (bpf/sampler.bpf.c, daemon/sampler*.c, collapsed, cmd_record): the workloads its
# root tests profile and its benchmarks. Owner: sampler.
#
# Workloads are *targets*: compiled with frame pointers and without the variant's sanitizer
# flags (ASan would change the stacks under test); linked with the variant's flags because
# the variant's libctx.a carries them. wl_attrib publishes context through libctx.a (its TLS
# exported with libctx's dynamic list); wl_garbage is a hostile writer of its own.
SM_WL := $(B)/tests/workloads
SM_WL_CFLAGS = $(filter-out $(SANFLAGS),$(ALL_CFLAGS)) -O2 -g -fno-omit-frame-pointer \
               -mno-omit-leaf-frame-pointer
SM_WL_LDFLAGS = $(ALL_LDFLAGS) -lpthread
SM_WORKLOADS := $(SM_WL)/wl_attrib $(SM_WL)/wl_garbage
ALL_TARGETS += $(SM_WORKLOADS)
BENCHES += bench/bench_sampler.sh

$(SM_WL)/wl_attrib: tests/workloads/wl_attrib.c $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $< $(LIBCTX_A) -Wl,--dynamic-list=libctx/libctx.dynlist \
		$(SM_WL_LDFLAGS)

$(SM_WL)/wl_garbage: tests/workloads/wl_garbage.c
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -rdynamic -o $@ $< $(SM_WL_LDFLAGS)
