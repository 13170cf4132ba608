# SPDX-License-Identifier: MIT
# In-kernel .eh_frame unwinding (daemon/stack/cfi_table.c, daemon/engine/kunwind.c,
# bpf/kunwind.bpf.h): its C++ fixture (exceptions and inlining), built like distro code
# (-O2 -g, no frame pointers, no sanitizer). Owner: ehframe.
KU_FX := $(B)/tests/fixtures
TEST_TARGETS += $(KU_FX)/fx_throw

$(KU_FX)/fx_throw: tests/fixtures/fx_throw.cpp
	@echo "  CXX     $<"
	$(Q)mkdir -p $(@D)
	$(Q)g++ -O2 -g -fomit-frame-pointer -Wall -Wextra -Werror -o $@ $< \
		$(filter-out $(SANFLAGS),$(ALL_LDFLAGS))

# Benchmarks: table build cost (no root), and the in-kernel unwinder against perf and
# dwarf-copy on a ~30-frame stack through libc (root).
TEST_TARGETS += $(KU_FX)/fx_deep30 $(KU_FX)/fx_signal $(KU_FX)/fx_dlchurn
BENCHES += $(B)/bench/bench_cfi_table bench/bench_kunwind.sh

$(B)/bench/bench_cfi_table: bench/bench_cfi_table.c $(B)/libctxprof.a
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -o $@ $< $(B)/libctxprof.a $(DAEMON_LIBS) $(ALL_LDFLAGS)
