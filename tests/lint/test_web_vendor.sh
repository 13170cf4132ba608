#!/bin/bash
# SPDX-License-Identifier: MIT
# The d3 / d3-flame-graph files the HTML page inlines (web/vendor/, see mk/75-html.mk) are the
# ones package-lock.json pins: byte for byte what `npm ci` put in node_modules. After a version
# bump in package.json this fails until `scripts/npm-deps.sh vendor` is run and committed.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail() { echo "FAIL: $*"; exit 1; }

if ! scripts/npm-deps.sh check 2>/dev/null; then
	[ "${CI:-}" = true ] && fail "node_modules missing or stale: CI must have run 'make deps-test'"
	echo "SKIPPED: node_modules missing or stale (run 'make deps-test')"
	exit 77
fi
n=0
while IFS=: read -r dst src; do
	cmp -s "node_modules/$src" "web/vendor/$dst" ||
		fail "web/vendor/$dst differs from node_modules/$src (package-lock.json): run 'scripts/npm-deps.sh vendor'"
	n=$((n + 1))
done < <(scripts/npm-deps.sh list)
[ $n -ge 4 ] || fail "only $n vendored files listed"
echo "PASS: $n files in web/vendor/ match node_modules (package-lock.json)"
