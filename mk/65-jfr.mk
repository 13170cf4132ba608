# SPDX-License-Identifier: MIT
# JFR writer area: the RecordingFile checker the tests run, and the writer benchmark.
# Owner of this fragment: jfr.
JFRCHECK := $(B)/java/JfrCheck.class $(B)/java/RecordCheck.class $(B)/java/PyroCheck.class \
            $(B)/java/FloodCheck.class
TEST_TARGETS += $(JFRCHECK)

$(B)/java/%.class: tests/java/%.java
	@echo "  JAVAC   $<"
	$(Q)mkdir -p $(@D)
	$(Q)javac -d $(@D) $<

BENCH_JFR := $(B)/bench/bench_jfr
BENCHES += $(BENCH_JFR)

$(BENCH_JFR): bench/bench_jfr.c $(B)/libctxprof.a
	@echo "  BENCH   $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -o $@ $< $(B)/libctxprof.a $(DAEMON_LIBS) $(ALL_LDFLAGS)
