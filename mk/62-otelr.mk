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
OW_SRC   := tests/workloads/otel_spec_writer.c
OW_HDR   := tests/workloads/otel_spec_writer.h
OW_WL    := tests/workloads/wl_otel.c
# Compiled and linked in one step: no sanitizer (SM_WL_LDFLAGS carries SANFLAGS for the
# workloads that link a sanitized object; this one is a plain target in every variant).
OW_LDFLAGS = $(filter-out $(SANFLAGS),$(SM_WL_LDFLAGS))
OW_BINS  := $(addprefix $(SM_WL)/,wl_otel wl_otel_desc wl_otel_gd wl_otel_ie wl_otel_dlopen)
OW_LIBS  := $(addprefix $(SM_WL)/,libotelw_desc.so libotelw_gd.so libotelw_ie.so)
TEST_TARGETS += $(OW_BINS) $(OW_LIBS)

$(SM_WL)/wl_otel: $(OW_WL) $(OW_SRC) $(OW_HDR)
	@echo "  CC      $@ (workload, OTel writer in the executable)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -o $@ $(OW_WL) $(OW_SRC) \
		-Wl,--export-dynamic-symbol=otel_thread_ctx_v1 $(OW_LDFLAGS)

$(SM_WL)/libotelw_desc.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fPIC -shared -ftls-model=global-dynamic -mtls-dialect=gnu2 \
		-Wl,-soname,libotelw_desc.so -o $@ $(OW_SRC)
$(SM_WL)/libotelw_gd.so: $(OW_SRC) $(OW_HDR)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SM_WL_CFLAGS) -fPIC -shared -ftls-model=global-dynamic -mtls-dialect=gnu \
		-Wl,-soname,libotelw_gd.so -o $@ $(OW_SRC)
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
