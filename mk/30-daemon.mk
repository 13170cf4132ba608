# The ctxprof binary: daemon/cli/main.c + every other daemon/*/*.c (as $(B)/libctxprof.a,
# which unit tests link too). Adding a file to a stage folder needs no edit here.
# Includes name the stage folder ("engine/sampler.h"), from -Idaemon; the layering check
# (scripts/check-layers.sh, run by `make test`) keeps them going down the stages only.
DAEMON_SRCS := $(filter-out daemon/cli/main.c,$(wildcard daemon/*/*.c))
DAEMON_OBJS := $(patsubst %.c,$(B)/%.o,$(DAEMON_SRCS))
DAEMON_LIBS := -lbpf -lelf -ldw -lz -lpthread -lm -linih -lcap
CTXPROF     := $(B)/ctxprof
ALL_TARGETS += $(CTXPROF)

$(B)/daemon/%.o: daemon/%.c | $(BPF_SKELS)
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -MMD -MP -c $< -o $@

$(B)/libctxprof.a: $(DAEMON_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CTXPROF): $(B)/daemon/cli/main.o $(B)/libctxprof.a
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

-include $(wildcard $(B)/daemon/*/*.d)
