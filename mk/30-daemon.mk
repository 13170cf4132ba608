# The ctxprof binary: daemon/main.c + every other daemon/*.c (as $(B)/libctxprof.a, which
# unit tests link too). Adding a daemon/*.c file needs no edit here.
DAEMON_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
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

$(CTXPROF): $(B)/daemon/main.o $(B)/libctxprof.a
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

-include $(wildcard $(B)/daemon/*.d)
