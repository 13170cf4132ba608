# SPDX-License-Identifier: MIT
# The ctxprof binary: daemon/cli/main.c + every other daemon/*/*.c (as $(B)/libctxprof.a,
# which unit tests link too). Adding a file to a stage folder needs no edit here.
# Includes name the stage folder ("engine/sampler.h"), from -Idaemon; the layering check
# (scripts/check-layers.sh, run by `make test`) keeps them going down the stages only.
DAEMON_SRCS := $(filter-out daemon/cli/main.c,$(wildcard daemon/*/*.c))
DAEMON_OBJS := $(patsubst %.c,$(B)/%.o,$(DAEMON_SRCS))
DAEMON_LIBS := -lbpf -lelf -ldw -lz -lpthread -lm -linih -lcap -lseccomp -lprotobuf-c -lcurl
CTXPROF     := $(B)/ctxprof
ALL_TARGETS += $(CTXPROF)

$(B)/daemon/%.o: daemon/%.c | $(BPF_SKELS)
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -MMD -MP -c $< -o $@

# pprof's profile.proto (Debian golang-github-google-pprof-dev) compiled by protoc-c into
# $(B)/gen at build time; sink/pprof.c encodes with it. Generated code: no -Werror.
PPROF_PROTO := /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
PPROF_GEN   := $(B)/gen/profile.pb-c.c $(B)/gen/profile.pb-c.h

$(PPROF_GEN) &: $(PPROF_PROTO)
	@echo "  PROTOC  $<"
	$(Q)mkdir -p $(B)/gen
	$(Q)protoc-c --proto_path=$(dir $<) --c_out=$(B)/gen $<

$(B)/gen/profile.pb-c.o: $(B)/gen/profile.pb-c.c
	$(Q)$(CC) -std=gnu11 $(CFLAGS) $(SANFLAGS) -I$(B)/gen -c $< -o $@

$(B)/daemon/sink/pprof.o: $(B)/gen/profile.pb-c.h

$(B)/libctxprof.a: $(DAEMON_OBJS) $(B)/gen/profile.pb-c.o
	$(Q)rm -f $@ && ar rcs $@ $^

$(CTXPROF): $(B)/daemon/cli/main.o $(B)/libctxprof.a
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

-include $(wildcard $(B)/daemon/*/*.d)
