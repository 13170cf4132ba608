# SPDX-License-Identifier: MIT
# OpenTelemetry protobuf code, compiled by protoc-c into $(B)/gen/otel at build time:
# - the Process Context payload (OTEP 4719): proto/otel/processcontext.proto, written from the
#   spec's field numbers, on top of upstream's common and resource messages;
# - OTLP profiles (v1development): upstream's profiles.proto and profiles_service.proto.
# The upstream files live unmodified under proto/otel/opentelemetry/ (their NOTICE.md says
# which commit; Apache-2.0). $(OTEL_PROTO_A) holds the generated code as PIC objects, so
# that both libctx (the writer, a shared library; it links only the process context's
# objects, mk/20-libctx.mk) and the daemon (the reader, and the OTLP writer) link the same
# encoder/decoder. Generated code: no -Werror. Link users add -lprotobuf-c; includers of a
# generated header add -I$(B)/gen/otel (the Makefile's ALL_CFLAGS does).
OTEL_UPSTREAM  := opentelemetry/proto/common/v1/common.proto \
                  opentelemetry/proto/resource/v1/resource.proto \
                  opentelemetry/proto/profiles/v1development/profiles.proto \
                  opentelemetry/proto/collector/profiles/v1development/profiles_service.proto
OTEL_PROTOS    := proto/otel/processcontext.proto $(addprefix proto/otel/,$(OTEL_UPSTREAM))
OTEL_PROTO_C   := $(patsubst proto/otel/%.proto,$(B)/gen/otel/%.pb-c.c,$(OTEL_PROTOS))
OTEL_PROTO_H   := $(OTEL_PROTO_C:.c=.h)
OTEL_PROTO_O   := $(OTEL_PROTO_C:.c=.o)
OTEL_PROTO_A   := $(B)/libotelproto.a

$(OTEL_PROTO_C) $(OTEL_PROTO_H) &: $(OTEL_PROTOS)
	@echo "  PROTOC  proto/otel"
	$(Q)mkdir -p $(B)/gen/otel
	$(Q)protoc-c --proto_path=proto/otel --c_out=$(B)/gen/otel $(OTEL_PROTOS)

$(B)/gen/otel/%.pb-c.o: $(B)/gen/otel/%.pb-c.c $(OTEL_PROTO_H)
	$(Q)$(CC) -std=gnu11 $(CFLAGS) $(SANFLAGS) -fPIC -fvisibility=hidden -I$(B)/gen/otel -c $< -o $@

$(OTEL_PROTO_A): $(OTEL_PROTO_O)
	$(Q)rm -f $@ && ar rcs $@ $^

ALL_TARGETS += $(OTEL_PROTO_A)
$(B)/daemon/sink/otlp.o: $(OTEL_PROTO_H)
$(B)/daemon/service/upload_http.o: $(OTEL_PROTO_H)
