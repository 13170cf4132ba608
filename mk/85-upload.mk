# SPDX-License-Identifier: MIT
# Delivery benchmark (daemon/service/upload_*.c, uploader.c): bench/bench_upload.sh runs
# bench_upload (one profile's cost) and the daemon's CPU with and without uploads.
BENCH_UPLOAD := $(B)/bench/bench_upload
TEST_TARGETS += $(BENCH_UPLOAD)
BENCHES += bench/bench_upload.sh

$(BENCH_UPLOAD): bench/bench_upload.c $(B)/libctxprof.a | $(BPF_SKELS)
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -MMD -MP -o $@ $< $(B)/libctxprof.a $(DAEMON_LIBS) $(ALL_LDFLAGS)

-include $(wildcard $(B)/bench/bench_upload.d)
