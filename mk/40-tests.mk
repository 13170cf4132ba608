# SPDX-License-Identifier: MIT
# Test programs, by naming convention (no edit needed to add one):
#   tests/unit/test_*.c         Criterion unit test: every variant (normal, ASan/UBSan)
#   tests/unit/tsan_*.c         Criterion test of concurrent code: also under TSan
#   tests/integration/test_*.c  Criterion, needs root + BTF (real BPF, perf events)
#   tests/integration/test_*.sh script, needs root + BTF
#   tests/integration/test_*churn*.sh  the same, also in the ASan/UBSan variant
# Each is linked with libctxtest.a (tests/*.c: readers the tests and benches share, never
# part of the product), libctxprof.a and libctx.a. Extra programs a test needs (workloads,
# fixtures) are built by the owning area's own fragment.
TEST_HELPER_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard tests/*.c))
TEST_HELPERS := $(B)/libctxtest.a
TEST_LIBS := $(TEST_HELPERS) $(B)/libctxprof.a $(B)/libctx.a -lcriterion $(DAEMON_LIBS) -ldl

$(B)/tests/%.o: tests/%.c | $(BPF_SKELS)
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -Itests -MMD -MP -c $< -o $@
$(TEST_HELPERS): $(TEST_HELPER_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

UNIT_TESTS += $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/test_*.c))
TSAN_TESTS += $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/tsan_*.c))
ROOT_TESTS += $(patsubst tests/integration/%.c,$(B)/tests/integration/%,$(wildcard tests/integration/test_*.c))
ROOT_TESTS += $(wildcard tests/integration/test_*.sh)
# Hostile targets (an unprivileged attacker against the default daemon; tests/hostile/hostile_lib.sh).
ROOT_TESTS += $(wildcard tests/hostile/test_*.sh)
# The control target's rate under each of those attacks against its rate before (issue 19's
# budget, printed by `make bench`).
BENCHES += bench/bench_hostile.sh
# Churn (thousands of short processes: exec, exit, no mappings yet) also runs in the ASan/UBSan
# variant: that is where a NULL/0 corner of the maps or ELF code aborts.
ROOT_SAN_TESTS += $(wildcard tests/integration/test_*churn*.sh)
# Lints and packaging checks (PLAIN_TESTS) look at sources and the normal build only: no
# sanitizer variant runs them again.
# The include rule between daemon/ stages (scripts/check-layers.sh) and its self-test.
PLAIN_TESTS += tests/lint/test_layers.sh
# Files a target names are opened only through util/target_open.h, and its self-test.
PLAIN_TESTS += tests/lint/test_safe_open.sh
# The docs name every flag and config key (scripts/check-docs.sh) and its self-test.
PLAIN_TESTS += tests/lint/test_docs.sh
# Every source file names its folder's licence (scripts/spdx.sh --check) and its self-test.
PLAIN_TESTS += tests/lint/test_spdx.sh

define test_link
	@echo "  TEST    $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -Itests -MMD -MP -o $@ $< $(TEST_LIBS) $(ALL_LDFLAGS)
endef
$(B)/tests/unit/%: tests/unit/%.c $(TEST_HELPERS) $(B)/libctxprof.a $(B)/libctx.a | $(BPF_SKELS)
	$(test_link)
$(B)/tests/integration/%: tests/integration/%.c $(TEST_HELPERS) $(B)/libctxprof.a $(B)/libctx.a | $(BPF_SKELS)
	$(test_link)

-include $(wildcard $(B)/tests/*.d $(B)/tests/unit/*.d $(B)/tests/integration/*.d)
