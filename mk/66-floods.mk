# SPDX-License-Identifier: MIT
# The flooding target of the store-bound hostile tests (tests/hostile/test_hostile_*_flood.sh):
# tests/workloads/wl_flood.c, built like the sampler's workloads (frame pointers, no
# sanitizer, libctx.a with its dynamic list).
FL_WL := $(B)/tests/workloads/wl_flood
ALL_TARGETS += $(FL_WL)

$(FL_WL): tests/workloads/wl_flood.c $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  CC      $< (workload)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $< $(LIBCTX_A) -Wl,--dynamic-list=libctx/libctx.dynlist \
		$(SM_WL_LDFLAGS)
