# SPDX-License-Identifier: MIT
# Installation and packaging. Owner of this fragment: packaging.
# Owns `make install` (binary, libctx via install-libctx, systemd unit, default config, docs)
# and the packaging tests; never builds anything itself (it installs what the other
# fragments build) and never writes outside $(B) except below $(DESTDIR)$(PREFIX),
# $(DESTDIR)$(SYSCONFDIR) and $(DESTDIR)$(UNITDIR) during `make install`.
#
#   make install [PREFIX=/usr/local] [DESTDIR=] [SYSCONFDIR=/etc] [UNITDIR=...]
#
# Layout (below $(DESTDIR)):
#   $(PREFIX)/bin/ctxprof
#   $(LIBDIR)/libctx.so.1.0.0, libctx.so.1, libctx.so, libctx.a    (LIBDIR ?= $(PREFIX)/lib)
#   $(LIBDIR)/libctx/libcustomlabels-ctx.so  (private: see mk/20-libctx.mk)
#   $(LIBDIR)/pkgconfig/libctx.pc            (prefix= is the install PREFIX)
#   $(PREFIX)/include/ctx/ctx.h, abi.h
#   $(PREFIX)/share/libctx/libctx.dynlist
#   $(UNITDIR)/ctxprof.service               (paths rewritten for BINDIR and SYSCONFDIR)
#   $(SYSCONFDIR)/ctxprof/ctxprof.conf       (never overwritten if it exists)
#   $(MANDIR)/man1/ctxprof.1                 (mk/82-man.mk)
#   $(DOCDIR)/README.md, packaging.md, jfr.md, libctx.md
BINDIR     ?= $(PREFIX)/bin
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
DOCDIR     ?= $(PREFIX)/share/doc/ctxprof
CTXPROF_DOCS := README.md docs/packaging.md docs/jfr.md docs/libctx.md

# libctx.pc embeds PREFIX when it is generated: regenerate it whenever PREFIX changes, so
# that `make && make install PREFIX=/usr` never installs a .pc that points at /usr/local.
# The stamp's content is the prefix; it is rewritten (and its mtime bumped) only on change.
$(B)/install-prefix.stamp: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(PREFIX) $(LIBDIR)' | cmp -s - $@ || echo '$(PREFIX) $(LIBDIR)' > $@
$(LIBCTX_PC): $(B)/install-prefix.stamp

.PHONY: install install-ctxprof install-service install-docs
# A real install (no DESTDIR) as root refreshes the dynamic linker's cache for libctx.so.1.
install: install-libctx install-ctxprof install-man install-service install-docs
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

install-ctxprof: $(CTXPROF)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(CTXPROF) $(DESTDIR)$(BINDIR)/ctxprof

install-service: packaging/systemd/ctxprof.service packaging/ctxprof.conf
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/ctxprof
	sed -e 's|/usr/bin/ctxprof|$(BINDIR)/ctxprof|g' \
	    -e 's|/etc/ctxprof/|$(SYSCONFDIR)/ctxprof/|g' \
	    -e 's|/usr/share/doc/ctxprof/|$(DOCDIR)/|g' \
	    packaging/systemd/ctxprof.service > $(DESTDIR)$(UNITDIR)/ctxprof.service.tmp
	chmod 644 $(DESTDIR)$(UNITDIR)/ctxprof.service.tmp
	mv $(DESTDIR)$(UNITDIR)/ctxprof.service.tmp $(DESTDIR)$(UNITDIR)/ctxprof.service
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/ctxprof/ctxprof.conf ]; then \
		echo "keeping existing $(DESTDIR)$(SYSCONFDIR)/ctxprof/ctxprof.conf"; \
	else \
		echo "install -m 644 packaging/ctxprof.conf $(DESTDIR)$(SYSCONFDIR)/ctxprof/"; \
		install -m 644 packaging/ctxprof.conf $(DESTDIR)$(SYSCONFDIR)/ctxprof/; \
	fi

install-docs: $(CTXPROF_DOCS)
	install -d $(DESTDIR)$(DOCDIR)
	install -m 644 $(CTXPROF_DOCS) $(DESTDIR)$(DOCDIR)/

# Debian packages: build/deb/*.deb (dpkg-buildpackage from a staging copy of the tree).
.PHONY: deb
deb:
	$(Q)packaging/build-deb.sh

# Tests: scripts, run from the source root with TEST_BUILD set (see tests/run.sh).
#   test_install.sh   make install into a scratch DESTDIR; link a program with pkg-config
#   test_unit.sh      systemd-analyze verify + offline security score of the unit
#   test_k8s_yaml.sh  the Kubernetes example parsed with python3-yaml; Containerfile paths
#   test_deb.sh       dpkg-buildpackage, dpkg-deb checks, dpkg -x into a scratch root
#   test_build_deps.sh  debian/control Build-Depends = scripts/deps.sh build set
#   test_symbols.sh   debian/libctx1.symbols = what libctx.so.1 exports
PLAIN_TESTS += tests/packaging/test_install.sh tests/packaging/test_unit.sh \
              tests/packaging/test_k8s_yaml.sh tests/packaging/test_deb.sh \
              tests/packaging/test_build_deps.sh tests/packaging/test_symbols.sh
