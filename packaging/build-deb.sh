#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages (ctxprof, libctx1, libctx-dev) with dpkg-buildpackage from a
# staging copy of the tree, because debian/ must sit at the source root and the tree keeps
# it in packaging/debian. Owns the staging directory and build/deb/; never touches the
# working tree otherwise (the staging copy has its own build/).
#   packaging/build-deb.sh [OUTDIR]      default OUTDIR: build/deb
# Environment: DEB_BUILD_OPTIONS (default "nocheck noddebs parallel=$(nproc)"),
#              KEEP_STAGING=1 keeps the staging copy for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d /tmp/ctxprof-deb.XXXXXX)
[ "${KEEP_STAGING:-0}" = 1 ] || trap 'rm -rf "$stage"' EXIT

# The source as git sees it (tracked files plus uncommitted edits, nothing from build/).
src=$stage/ctxprof
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src"
else
	tar --exclude=./build -cf - . | tar -xf - -C "$src"
fi
rm -rf "$src/debian"
cp -a packaging/debian "$src/debian"

export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-"nocheck noddebs parallel=$(nproc)"}
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$stage/build.log" 2>&1 || {
	tail -n 60 "$stage/build.log" >&2
	echo "dpkg-buildpackage failed; full log: $stage/build.log (kept)" >&2
	trap - EXIT
	exit 1
}
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mv "$stage"/*.deb "$stage"/*.buildinfo "$stage"/*.changes "$out"/
cp "$stage/build.log" "$out/build.log"
ls -1 "$out"/*.deb
