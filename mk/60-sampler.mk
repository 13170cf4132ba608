# SPDX-License-Identifier: MIT
# Sampler (bpf/sampler.bpf.c, daemon/engine/sampler.c, sink/collapsed, cli/cmd_record): the workloads its
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
SM_WORKLOADS := $(SM_WL)/wl_attrib $(SM_WL)/wl_garbage $(SM_WL)/wl_attrib_so \
                $(SM_WL)/wl_attrib_nopie $(SM_WL)/wl_attrib_dlopen $(SM_WL)/wl_exec_ctx \
                $(SM_WL)/wl_exec_plain $(SM_WL)/wl_deep
TEST_TARGETS += $(SM_WORKLOADS)
BENCHES += bench/bench_sampler.sh bench/bench_scale.sh

$(SM_WL)/wl_attrib: tests/workloads/wl_attrib.c $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $< $(LIBCTX_A) -Wl,--dynamic-list=libctx/libctx.dynlist \
		$(SM_WL_LDFLAGS)

$(SM_WL)/wl_garbage: tests/workloads/wl_garbage.c
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -rdynamic -o $@ $< $(SM_WL_LDFLAGS)

# The same workload with libctx reached every other way: as a DT_NEEDED shared library
# (TLSDESC), linked into a non-PIE executable, and dlopen'ed (static TLS from the surplus, or
# dynamic TLS through the DTV with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0).
$(SM_WL)/wl_attrib_so: tests/workloads/wl_attrib.c $(B)/libctx.so
	@echo "  CC      $< (workload, libctx.so)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $< -L$(B) -lctx -Wl,-rpath,'$$ORIGIN/../..' $(SM_WL_LDFLAGS)

$(SM_WL)/wl_attrib_nopie: tests/workloads/wl_attrib.c $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  CC      $< (workload, non-PIE)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fno-pie -no-pie -o $@ $< $(LIBCTX_A) \
		-Wl,--dynamic-list=libctx/libctx.dynlist $(SM_WL_LDFLAGS)

$(SM_WL)/wl_attrib_dlopen: tests/workloads/wl_attrib.c $(B)/libctx.so
	@echo "  CC      $< (workload, dlopen)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -DWL_DLOPEN -o $@ $< $(SM_WL_LDFLAGS) -ldl

# One process that execs back and forth between two images (the ordering tests).
$(SM_WL)/wl_exec_ctx: tests/workloads/wl_exec.c $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  CC      $< (workload, ctx image)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -DWL_EXEC_CTX -o $@ $< $(LIBCTX_A) \
		-Wl,--dynamic-list=libctx/libctx.dynlist $(SM_WL_LDFLAGS)

# Non-PIE: its TLS initialization image holds absolute addresses (see wl_exec.c).
$(SM_WL)/wl_exec_plain: tests/workloads/wl_exec.c
	@echo "  CC      $< (workload, plain image)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fno-pie -no-pie -o $@ $< $(SM_WL_LDFLAGS)

$(SM_WL)/wl_deep: tests/workloads/wl_deep.c
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $< $(SM_WL_LDFLAGS)
