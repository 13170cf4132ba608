# SPDX-License-Identifier: MIT
# Target jobs (daemon/engine/target_jobs.c): the hostile FUSE server of the stall tests
# (tests/hostile/fuse_stall.c, run as root by hostile_lib.sh's start_fuse_stall; never part
# of the product). Owner: jobs.
JOBS_FX := $(B)/tests/fixtures
ALL_TARGETS += $(JOBS_FX)/fuse_stall

$(JOBS_FX)/fuse_stall: tests/hostile/fuse_stall.c
	@echo "  CC      $< (fixture)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS)
