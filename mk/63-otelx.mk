# SPDX-License-Identifier: MIT
# OpenTelemetry context end to end (issue 10): tests/workloads/wl_otel.c driven through
# libctx's own writer (tests/workloads/otel_libctx_writer.c, the libctx API) instead of the
# spec writer, in libctx's two link modes:
#
#   wl_otel_ctx_so  libctx.so, a DT_NEEDED shared library (TLSDESC)
#   wl_otel_ctx_a   libctx.a in a PIE, otel_thread_ctx_v1 exported by libctx/libctx.dynlist
OX_SRC  := tests/workloads/otel_libctx_writer.c
OX_BINS := $(SM_WL)/wl_otel_ctx_so $(SM_WL)/wl_otel_ctx_a
TEST_TARGETS += $(OX_BINS)

$(SM_WL)/wl_otel_ctx_so: $(OW_WL) $(OW_HDR) $(OX_SRC) $(B)/libctx.so
	@echo "  CC      $@ (workload, libctx.so's OTel writer)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $(OW_WL) $(OX_SRC) -L$(B) -lctx -Wl,-rpath,'$$ORIGIN/../..' \
		$(SM_WL_LDFLAGS)
$(SM_WL)/wl_otel_ctx_a: $(OW_WL) $(OW_HDR) $(OX_SRC) $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  CC      $@ (workload, libctx.a's OTel writer)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $(OW_WL) $(OX_SRC) $(LIBCTX_A) \
		-Wl,--dynamic-list=libctx/libctx.dynlist $(SM_WL_LDFLAGS)
BENCHES += bench/bench_otel_jfr_size.sh
