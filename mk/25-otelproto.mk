# OpenTelemetry Process Context payload (OTEP 4719): proto/otel/*.proto, written from the
# spec's field numbers, compiled by protoc-c into $(B)/gen/otel at build time.
# $(OTEL_PROTO_A) holds the generated code as PIC objects, so that both libctx (the writer,
# a shared library) and the daemon (the reader) link the same encoder/decoder.
# Generated code: no -Werror. Link users add -lprotobuf-c.
OTEL_PROTOS    := $(wildcard proto/otel/*.proto)
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
