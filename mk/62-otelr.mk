# SPDX-License-Identifier: MIT
# OpenTelemetry context reader (issue 10, reader side): the spec writer of the tests
# (tests/workloads/otel_spec_writer.c, no libctx) in every link mode OTEP 4947 requires, the
# workload that uses it, and the process-context decoder linked into libctxprof.a.
#
#   wl_otel         writer in the executable (local-exec), exported with
#                   --export-dynamic-symbol
#   wl_otel_desc    writer in libotelw_desc.so, TLSDESC (-mtls-dialect=gnu2)
#   wl_otel_gd      writer in libotelw_gd.so, legacy general-dynamic (-mtls-dialect=gnu)
#   wl_otel_ie      writer in libotelw_ie.so, initial-exec (TPOFF64 in a shared library)
#   wl_otel_dlopen  libotelw_desc.so dlopen'ed at start
#   wl_otel_ld      writer in libotelw_ld.so, the pointer hidden (.symtab only), local-dynamic
#                   (module-relative DTPMOD64)
#   wl_otel_pctxonly  the process context alone: no otel_thread_ctx_v1 (-DOTELW_PROCESS_ONLY)
OW_SRC   := tests/workloads/otel_spec_writer.c
OW_HDR   := tests/workloads/otel_spec_writer.h
OW_WL    := tests/workloads/wl_otel.c
# Compiled and linked in one step: no sanitizer (SM_WL_LDFLAGS carries SANFLAGS for the
# workloads that link a sanitized object; this one is a plain target in every variant).
OW_LDFLAGS = $(filter-out $(SANFLAGS),$(SM_WL_LDFLAGS))
OW_BINS  := $(addprefix $(SM_WL)/,wl_otel wl_otel_desc wl_otel_gd wl_otel_ie wl_otel_dlopen \
	wl_otel_pctxonly wl_otel_ld)
OW_LIBS  := $(addprefix $(SM_WL)/,libotelw_desc.so libotelw_gd.so libotelw_ie.so libotelw_ld.so)
TEST_TARGETS += $(OW_BINS) $(OW_LIBS)

$(SM_WL)/wl_otel: $(OW_WL) $(OW_SRC) $(OW_HDR)
	@echo "  CC      $@ (workload, OTel writer in the executable)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $(OW_WL) $(OW_SRC) \
		-Wl,--export-dynamic-symbol=otel_thread_ctx_v1 $(OW_LDFLAGS)

$(SM_WL)/wl_otel_pctxonly: $(OW_WL) $(OW_SRC) $(OW_HDR)
	@echo "  CC      $@ (workload, OTel process context alone)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -DOTELW_PROCESS_ONLY -o $@ $(OW_WL) $(OW_SRC) $(OW_LDFLAGS)

$(SM_WL)/libotelw_desc.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fPIC -shared -ftls-model=global-dynamic -mtls-dialect=gnu2 \
		-Wl,-soname,libotelw_desc.so -o $@ $(OW_SRC)
$(SM_WL)/libotelw_gd.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fPIC -shared -ftls-model=global-dynamic -mtls-dialect=gnu \
		-Wl,-soname,libotelw_gd.so -o $@ $(OW_SRC)
$(SM_WL)/libotelw_ld.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fPIC -shared -DOTELW_HIDDEN_TLS -ftls-model=local-dynamic \
		-mtls-dialect=gnu -Wl,-soname,libotelw_ld.so -o $@ $(OW_SRC)
$(SM_WL)/libotelw_ie.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fPIC -shared -ftls-model=initial-exec \
		-Wl,-soname,libotelw_ie.so -o $@ $(OW_SRC)

$(SM_WL)/wl_otel_%: $(OW_WL) $(OW_HDR) $(SM_WL)/libotelw_%.so
	@echo "  CC      $@ (workload, OTel writer in libotelw_$*.so)"
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $(OW_WL) -L$(SM_WL) -lotelw_$* -Wl,-rpath,'$$ORIGIN' \
		$(OW_LDFLAGS)
$(SM_WL)/wl_otel_dlopen: $(OW_WL) $(OW_HDR) $(SM_WL)/libotelw_desc.so
	@echo "  CC      $@ (workload, OTel writer dlopen'ed)"
	$(Q)$(CC) $(SM_WL_CFLAGS) -DWL_DLOPEN -o $@ $(OW_WL) -Wl,-rpath,'$$ORIGIN' \
		$(OW_LDFLAGS) -ldl

# The process-context decoder includes the generated protobuf-c headers (which include each
# other by bare name), and libctxprof.a carries their code so that every user links it.
$(B)/daemon/engine/otel_process_ctx.o: ALL_CFLAGS += -I$(B)/gen/otel
$(B)/daemon/engine/otel_process_ctx.o: $(OTEL_PROTO_H)
$(B)/libctxprof.a: $(OTEL_PROTO_O)

BENCHES += bench/bench_otel.sh

# musl (musl-gcc, Debian's musl-tools; test package): the writer in a legacy general-dynamic,
# a TLSDESC and an initial-exec library, and the TLSDESC one dlopen'ed (musl gives it dynamic
# TLS: read through musl's DTV). Built only where musl-gcc is installed
# (tests/integration/test_otel_musl.sh says SKIPPED otherwise).
MUSL_CC := $(shell command -v musl-gcc 2>/dev/null)
ifneq ($(MUSL_CC),)
OW_MUSL_CFLAGS := -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -Wall -Werror
OW_MUSL_TLS_gd   := -ftls-model=global-dynamic -mtls-dialect=gnu
OW_MUSL_TLS_desc := -ftls-model=global-dynamic -mtls-dialect=gnu2
OW_MUSL_TLS_ie   := -ftls-model=initial-exec
OW_MUSL_KINDS    := gd desc ie
TEST_TARGETS += $(foreach k,$(OW_MUSL_KINDS),$(SM_WL)/libotelw_musl_$(k).so \
	$(SM_WL)/wl_otel_musl_$(k)) $(SM_WL)/wl_otel_musl_dlopen

$(SM_WL)/libotelw_musl_%.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(MUSL_CC) $(OW_MUSL_CFLAGS) -fPIC -shared $(OW_MUSL_TLS_$*) \
		-Wl,-soname,libotelw_musl_$*.so -o $@ $(OW_SRC)
$(SM_WL)/wl_otel_musl_dlopen: $(OW_WL) $(OW_HDR) $(SM_WL)/libotelw_musl_desc.so
	@echo "  CC      $@ (workload, musl, OTel writer dlopen'ed)"
	$(Q)$(MUSL_CC) $(OW_MUSL_CFLAGS) -DWL_DLOPEN -o $@ $(OW_WL) -Wl,-rpath,'$$ORIGIN' -pthread
$(SM_WL)/wl_otel_musl_%: $(OW_WL) $(OW_HDR) $(SM_WL)/libotelw_musl_%.so
	@echo "  CC      $@ (workload, musl, OTel writer in libotelw_musl_$*.so)"
	$(Q)$(MUSL_CC) $(OW_MUSL_CFLAGS) -o $@ $(OW_WL) -L$(SM_WL) -lotelw_musl_$* \
		-Wl,-rpath,'$$ORIGIN' -pthread
endif
