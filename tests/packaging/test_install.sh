#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: alone (make install rewrites build/libctx.pc for its own PREFIX)
# `make install` into a scratch DESTDIR with a non-default PREFIX: checks the installed tree
# (binary, libctx and its symlinks, headers, libctx.pc with the right prefix, dynlist, unit,
# config, docs), then compiles and links a small libctx program against the installed copy
# with pkg-config (PKG_CONFIG_SYSROOT_DIR into the scratch root), shared and static, and runs
# both. Runs without root.
. "$(dirname "$0")/lib.sh"
P=/opt/ctxprof-test
R=$TMP/root
oldprefix=$(cat "$B/install-prefix.stamp" 2>/dev/null || echo /usr/local)
# Installing with another PREFIX regenerates $B/libctx.pc; put it back afterwards.
trap 'make -s --no-print-directory B="$B" PREFIX="$oldprefix" "$B/libctx.pc" >/dev/null; rm -rf "$TMP"' EXIT

make -s --no-print-directory B="$B" install DESTDIR="$R" PREFIX=$P >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log"; fail "make install failed"; }

for f in bin/ctxprof lib/libctx.so.1.0.0 lib/libctx/libcustomlabels-ctx.so share/man/man1/ctxprof.1 lib/libctx.a \
	include/ctx/ctx.h include/ctx/abi.h lib/pkgconfig/libctx.pc share/libctx/libctx.dynlist \
	lib/systemd/system/ctxprof.service share/doc/ctxprof/packaging.md; do
	[ -f "$R$P/$f" ] || fail "missing $P/$f"
done
[ -f "$R/etc/ctxprof/ctxprof.conf" ] || fail "missing /etc/ctxprof/ctxprof.conf"
[ -x "$R$P/bin/ctxprof" ] || fail "ctxprof not executable"
for l in libctx.so.1 libctx.so; do
	[ -L "$R$P/lib/$l" ] && [ "$(readlink "$R$P/lib/$l")" = libctx.so.1.0.0 ] ||
		fail "$l is not a symlink to libctx.so.1.0.0"
done
[ "$(stat -c %a "$R$P/lib/libctx.a")" = 644 ] || fail "libctx.a mode $(stat -c %a "$R$P/lib/libctx.a")"
soname=$(readelf -d "$R$P/lib/libctx.so.1.0.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libctx.so.1 ] || fail "SONAME '$soname'"
grep -qx "ExecStart=$P/bin/ctxprof daemon --config /etc/ctxprof/ctxprof.conf" \
	"$R$P/lib/systemd/system/ctxprof.service" || fail "unit ExecStart not rewritten for PREFIX"
cmp -s packaging/ctxprof.conf "$R/etc/ctxprof/ctxprof.conf" || fail "config differs"
"$R$P/bin/ctxprof" --help >"$TMP/help" 2>&1 || fail "installed ctxprof --help failed"
grep -q record "$TMP/help" || fail "ctxprof --help does not mention record"
ok "installed tree"

# A second install keeps an edited config.
echo "; edited" >>"$R/etc/ctxprof/ctxprof.conf"
make -s --no-print-directory B="$B" install-service DESTDIR="$R" PREFIX=$P >/dev/null 2>&1 ||
	fail "second install-service failed"
grep -q '; edited' "$R/etc/ctxprof/ctxprof.conf" || fail "reinstall overwrote the config"
ok "existing config kept"

export PKG_CONFIG_PATH=$R$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR=
pkg-config --exists libctx || fail "pkg-config does not find libctx"
[ "$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=prefix libctx)" = $P ] ||
	fail "libctx.pc prefix is '$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=prefix libctx)', want $P"
[ "$(pkg-config --modversion libctx)" = 1.0.0 ] || fail "version $(pkg-config --modversion libctx)"
cflags=$(pkg-config --cflags libctx) libs=$(pkg-config --libs libctx)
echo "cflags: $cflags  libs: $libs"
[[ "$cflags" == *"-I$R$P/include"* ]] || fail "cflags do not point into the scratch root"

cat >"$TMP/prog.c" <<'C'
#include <ctx/abi.h>
#include <ctx/ctx.h>
#include <stdio.h>
#include <string.h>
extern __thread custom_labels_labelset_t *custom_labels_current_set;
int main(void)
{
	if (ctx_set_span(42, 7) != 0 || ctx_set_label_str("route", "/checkout") != 0)
		return 1;
	const custom_labels_labelset_t *s = custom_labels_current_set;
	for (size_t i = 0; s && i < s->count; i++)
		if (s->storage[i].key.buf && s->storage[i].key.len == 5 &&
		    !memcmp(s->storage[i].key.buf, "route", 5))
			return printf("route=%.*s\n", (int)s->storage[i].value.len,
				      (const char *)s->storage[i].value.buf) < 0;
	return 2;
}
C
# shellcheck disable=SC2086
gcc -std=gnu11 -Wall -Werror $cflags -o "$TMP/prog" "$TMP/prog.c" $libs || fail "shared link failed"
out=$(LD_LIBRARY_PATH=$R$P/lib "$TMP/prog") || fail "shared program exited $?"
[ "$out" = "route=/checkout" ] || fail "shared program printed '$out'"
LD_LIBRARY_PATH=$R$P/lib ldd "$TMP/prog" | grep -q "libctx.so.1 => $R$P/lib/libctx.so.1" ||
	fail "program did not load the installed libctx.so.1"
ok "shared: $out"

# Static: the archive plus the dynamic list named by the .pc (Libs.private), so that the ABI
# symbols stay visible to the profiler.
dynlist=$R$(PKG_CONFIG_SYSROOT_DIR= pkg-config --variable=dynlist libctx)
[ -f "$dynlist" ] || fail "dynlist variable points to missing $dynlist"
# shellcheck disable=SC2086
gcc -std=gnu11 -Wall -Werror $cflags -o "$TMP/prog_static" "$TMP/prog.c" "$R$P/lib/libctx.a" \
	-Wl,--dynamic-list="$dynlist" -lpthread || fail "static link failed"
out=$("$TMP/prog_static") || fail "static program exited $?"
[ "$out" = "route=/checkout" ] || fail "static program printed '$out'"
nm -D "$TMP/prog_static" | grep -q ' custom_labels_current_set$' ||
	fail "static program does not export custom_labels_current_set"
ok "static: $out"
echo "PASS"
