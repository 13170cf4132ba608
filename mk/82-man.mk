# SPDX-License-Identifier: MIT
# The ctxprof(1) man page, generated from the program's --help texts (scripts/gen-man.sh), so
# that it cannot drift from the options; part of the product (`make`), installed by
# `make install` (install-man) and the Debian package. Owner: release.
MANDIR    ?= $(PREFIX)/share/man
CTXPROF_MAN := $(B)/ctxprof.1
# (the sanitizer variants, SANFLAGS set, build the same page from the same texts: skipped)
ifeq ($(SANFLAGS),)
ALL_TARGETS += $(CTXPROF_MAN)
endif

$(CTXPROF_MAN): $(CTXPROF) scripts/gen-man.sh
	@echo "  MAN     $@"
	$(Q)scripts/gen-man.sh $(CTXPROF) > $@.tmp && mv $@.tmp $@

.PHONY: install-man
install-man: $(CTXPROF_MAN)
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(CTXPROF_MAN) $(DESTDIR)$(MANDIR)/man1/ctxprof.1
