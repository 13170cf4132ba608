#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages, built with the Debian tools (packaging/build-deb.sh: dpkg-buildpackage
# -b from a staging copy, DEB_BUILD_OPTIONS=nocheck): package metadata (dpkg-deb -I), file
# lists (dpkg-deb -c), then all three unpacked with dpkg -x into a scratch root: the binary
# runs from there, the unit, the conffile, the 0750 state directory, headers, .pc and the
# dynamic list are in place, and a program builds against the unpacked libctx-dev with
# pkg-config and runs on the unpacked libctx1. The paths the sidecar Containerfile relies on
# are in the ctxprof package. lintian reports no error and no warning (overrides only in
# packaging/debian/*.lintian-overrides, each with its reason).
. "$(dirname "$0")/lib.sh"
for t in dpkg-buildpackage dh dpkg-deb lintian; do
	command -v $t >/dev/null || fail "$t missing (Debian packages dpkg-dev, debhelper, lintian: make deps-test)"
done
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
export DEB_BUILD_OPTIONS="nocheck noddebs parallel=2"
t0=$SECONDS
packaging/build-deb.sh "$TMP/deb" || fail "packaging/build-deb.sh failed"
echo "built in $((SECONDS - t0)) s"
V=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
D=$TMP/deb
for p in ctxprof libctx1 libctx-dev; do
	[ -f "$D/${p}_${V}_amd64.deb" ] || fail "no ${p}_${V}_amd64.deb"
done
ls "$D"/*.deb | grep -v -E '/(ctxprof|libctx1|libctx-dev)_' && fail "unexpected extra packages"

field() { dpkg-deb -f "$D/${1}_${V}_amd64.deb" "$2"; }
[ "$(field ctxprof Package)" = ctxprof ] || fail "ctxprof Package field"
field ctxprof Depends | grep -q libbpf1 || fail "ctxprof does not depend on libbpf1: $(field ctxprof Depends)"
field libctx-dev Depends | grep -qF "libctx1 (= $V)" || fail "libctx-dev Depends: $(field libctx-dev Depends)"
[ "$(field libctx1 Section)" = libs ] || fail "libctx1 Section $(field libctx1 Section)"
dpkg-deb -I "$D/libctx1_${V}_amd64.deb" symbols >"$TMP/symbols" || fail "libctx1 has no symbols file"
grep -q '^libctx.so.1 libctx1' "$TMP/symbols" || fail "symbols file lacks libctx.so.1"
grep -q "^ .*@Base 0.1.0-" "$TMP/symbols" && fail "symbols the source's libctx1.symbols lacks (versioned with the Debian revision)"
dpkg-deb -I "$D/libctx1_${V}_amd64.deb" triggers | grep -q ldconfig || fail "libctx1 has no ldconfig trigger"
[ "$(dpkg-deb -I "$D/ctxprof_${V}_amd64.deb" conffiles)" = /etc/ctxprof/ctxprof.conf ] ||
	fail "conffiles: $(dpkg-deb -I "$D/ctxprof_${V}_amd64.deb" conffiles)"
ok "metadata (version $V)"

contents() { dpkg-deb -c "$D/${1}_${V}_amd64.deb" | awk '{print $6}' | sed 's|^\./|/|'; }
has() { # package path...
	local p=$1 f
	shift
	contents "$p" >"$TMP/list.$p"
	for f in "$@"; do grep -qxF "$f" "$TMP/list.$p" || fail "$p lacks $f"; done
}
has ctxprof /usr/bin/ctxprof /lib/systemd/system/ctxprof.service /etc/ctxprof/ctxprof.conf /var/lib/ctxprof/ \
	/usr/share/man/man1/ctxprof.1.gz
has libctx1 /usr/lib/$MA/libctx.so.1.0.0 /usr/lib/$MA/libctx.so.1 /usr/lib/$MA/libctx/libcustomlabels-ctx.so
has libctx-dev /usr/include/ctx/ctx.h /usr/include/ctx/abi.h /usr/lib/$MA/libctx.a /usr/lib/$MA/libctx.so \
	/usr/lib/$MA/pkgconfig/libctx.pc /usr/share/libctx/libctx.dynlist
grep -q include "$TMP/list.libctx1" "$TMP/list.ctxprof" && fail "headers outside libctx-dev"
ok "file lists"

R=$TMP/root
for p in ctxprof libctx1 libctx-dev; do dpkg -x "$D/${p}_${V}_amd64.deb" "$R" || fail "dpkg -x $p"; done
"$R/usr/bin/ctxprof" --help >"$TMP/help" 2>&1 || fail "unpacked ctxprof --help failed"
grep -q daemon "$TMP/help" || grep -q record "$TMP/help" || fail "unexpected --help output"
cmp -s packaging/systemd/ctxprof.service "$R/lib/systemd/system/ctxprof.service" || fail "unit differs from the source"
cmp -s packaging/ctxprof.conf "$R/etc/ctxprof/ctxprof.conf" || fail "config differs from the source"
[ "$(stat -c %a "$R/var/lib/ctxprof")" = 750 ] || fail "state dir mode $(stat -c %a "$R/var/lib/ctxprof")"
[ "$(readlink "$R/usr/lib/$MA/libctx.so")" = libctx.so.1.0.0 ] || fail "libctx.so symlink"
grep -qx 'prefix=/usr' "$R/usr/lib/$MA/pkgconfig/libctx.pc" || fail "libctx.pc prefix: $(grep prefix= "$R/usr/lib/$MA/pkgconfig/libctx.pc")"
grep -qx "libdir=/usr/lib/$MA" "$R/usr/lib/$MA/pkgconfig/libctx.pc" || fail "libctx.pc libdir: $(grep libdir= "$R/usr/lib/$MA/pkgconfig/libctx.pc")"
zcat "$R/usr/share/man/man1/ctxprof.1.gz" | grep -q '^\.SS ctxprof record' || fail "man page lacks ctxprof record"
ok "unpacked tree"

cat >"$TMP/prog.c" <<'C'
#include <ctx/ctx.h>
#include <stdio.h>
int main(void)
{
	struct ctx_stats st;
	if (ctx_set_span(1, 2) != 0 || ctx_set_label_str("k", "v") != 0)
		return 1;
	ctx_get_stats(&st);
	return printf("slots=%llu\n", (unsigned long long)st.slots_total) < 0 || st.slots_total == 0;
}
C
export PKG_CONFIG_PATH=$R/usr/lib/$MA/pkgconfig PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR=
# shellcheck disable=SC2046
gcc -std=gnu11 -Wall -Werror $(pkg-config --cflags libctx) -o "$TMP/prog" "$TMP/prog.c" \
	$(pkg-config --libs libctx) || fail "link against the unpacked libctx-dev failed"
out=$(LD_LIBRARY_PATH=$R/usr/lib/$MA "$TMP/prog") || fail "program on the unpacked libctx1 exited $?"
LD_LIBRARY_PATH=$R/usr/lib/$MA ldd "$TMP/prog" | grep -qF "$R/usr/lib/$MA/libctx.so.1" || fail "did not load the unpacked libctx.so.1"
ok "program built with pkg-config against libctx-dev runs on libctx1: $out"

# The sidecar image cannot be built here (no container engine); check what it relies on.
grep -q 'build/deb/ctxprof_\*_amd64.deb' packaging/container/Containerfile || fail "Containerfile does not copy the ctxprof .deb"
for f in $(grep -oE '(/usr/bin/ctxprof|/etc/ctxprof/ctxprof.conf)' packaging/container/Containerfile | sort -u); do
	grep -qxF "$f" "$TMP/list.ctxprof" || fail "Containerfile path $f not in the ctxprof package"
	echo "ok: Containerfile path $f is in the package"
done

lintian --tag-display-limit 0 --fail-on error,warning "$D"/*.changes ||
	fail "lintian reports errors or warnings (above)"
ok "lintian: no error, no warning"
echo PASS
