# SPDX-License-Identifier: MIT
# The built-in demo: a libctx-instrumented pretend request server, profiled by `make demo`.
# gcc leaves leaf functions without a frame by default even with -fno-omit-frame-pointer,
# and a frame-pointer walk from such a leaf skips its caller: -mno-omit-leaf-frame-pointer.
DEMO_APP := $(B)/demo/demo_app
ALL_TARGETS += $(DEMO_APP)

$(DEMO_APP): tests/workloads/demo_app.c $(B)/libctx.a
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -O1 -mno-omit-leaf-frame-pointer -o $@ $< $(B)/libctx.a \
		-Wl,--dynamic-list=libctx/libctx.dynlist -lpthread $(ALL_LDFLAGS)

.PHONY: demo
demo: deps
	$(Q)$(MAKE) --no-print-directory real-all
	$(Q)scripts/demo.sh $(B)
BENCHES += bench/bench_record_jfr.sh bench/bench_formats.sh
