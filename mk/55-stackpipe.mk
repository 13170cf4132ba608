# SPDX-License-Identifier: MIT
# Stack pipeline (daemon/stack/: modules, proc_maps, symbolize, unwind_dwarf): test fixtures and the
# unwinding benchmark. Owner: stackpipe.
#
# Fixtures are the *targets* the tests profile, so they are built like distro code: -O2 -g,
# no frame pointers, and without the variant's sanitizer flags (ASan would interpose qsort
# and change the call chain under test). The code under test (libctxprof.a, the test
# programs) keeps the variant's flags.
SP_FX := $(B)/tests/fixtures
SP_FX_CFLAGS = $(filter-out $(SANFLAGS) -fno-omit-frame-pointer,$(ALL_CFLAGS)) -O2 -g \
               -fomit-frame-pointer
SP_FX_LDFLAGS = $(filter-out $(SANFLAGS),$(ALL_LDFLAGS))
SP_FIXTURES := $(SP_FX)/fx_qsort $(SP_FX)/fx_qsort_stripped $(SP_FX)/fx_inline $(SP_FX)/fx_cxx \
               $(SP_FX)/fx_dlopen $(SP_FX)/libfx_plugin.so $(SP_FX)/fx_redzone
TEST_TARGETS += $(SP_FIXTURES)
BENCHES += $(B)/bench/bench_unwind

$(SP_FX)/fx_qsort_stripped: $(SP_FX)/fx_qsort
	$(Q)strip --strip-all -o $@ $<

$(SP_FX)/fx_cxx: tests/fixtures/fx_cxx.cpp
	@echo "  CXX     $<"
	$(Q)mkdir -p $(@D)
	$(Q)g++ -O2 -g -Wall -Wextra -Werror -o $@ $< $(SP_FX_LDFLAGS)

$(SP_FX)/libfx_plugin.so: tests/fixtures/fx_plugin.c
	@echo "  CC      $< (fixture)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SP_FX_CFLAGS) -fPIC -shared -o $@ $< $(SP_FX_LDFLAGS)

$(SP_FX)/fx_%: tests/fixtures/fx_%.c
	@echo "  CC      $< (fixture)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SP_FX_CFLAGS) -o $@ $< $(SP_FX_LDFLAGS)

$(B)/bench/bench_unwind: bench/bench_unwind.c $(B)/libctxprof.a
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -Itests -o $@ $< $(B)/libctxprof.a $(DAEMON_LIBS) \
		$(ALL_LDFLAGS)
