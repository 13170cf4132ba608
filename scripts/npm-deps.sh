#!/bin/sh
# SPDX-License-Identifier: MIT
# The npm packages of package.json / package-lock.json (test dependencies, never the build's):
# playwright-core, which drives Debian's chromium in tests/integration/test_record_html.sh,
# and d3 / d3-flame-graph, whose built files the product vendors in web/vendor/ (the build is
# offline and npm-free; see mk/75-html.mk); the lockfile pins their versions.
#   npm-deps.sh check    exit 1 and say so when node_modules does not match package-lock.json
#   npm-deps.sh install  `npm ci` when it does not; otherwise nothing (no network)
#   npm-deps.sh vendor   copy d3 / d3-flame-graph from node_modules into web/vendor/ (after a
#                        version bump in package.json and `npm-deps.sh install`)
# Idempotent: node_modules/.ctxprof-lock records the lockfile's checksum after a good install.
set -eu
cd "$(dirname "$0")/.."

stamp=node_modules/.ctxprof-lock
want=$(sha256sum package-lock.json | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)

# web/vendor/NAME <- node_modules/PATH (tests/lint/test_web_vendor.sh compares the same pairs)
VENDORED="d3.min.js:d3/dist/d3.min.js
LICENSE.d3:d3/LICENSE
d3-flamegraph.min.js:d3-flame-graph/dist/d3-flamegraph.umd.min.js
LICENSE.d3-flame-graph:d3-flame-graph/LICENSE"

case "${1:-check}" in
check)
	if [ "$want" != "$have" ]; then
		echo "npm packages missing or stale (node_modules does not match package-lock.json)" >&2
		echo "run 'make deps-test' to install them (npm ci)" >&2
		exit 1
	fi ;;
install)
	[ "$want" = "$have" ] && exit 0
	if ! command -v npm >/dev/null; then
		# this image's nodejs ships npm; Debian's does not
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm
	fi
	echo "installing npm packages (npm ci)"
	npm ci --no-audit --no-fund --loglevel=error
	echo "$want" > "$stamp" ;;
vendor)
	echo "$VENDORED" | while IFS=: read -r dst src; do
		cp "node_modules/$src" "web/vendor/$dst"
	done ;;
list)
	echo "$VENDORED" ;;
*) echo "usage: $0 check|install|vendor|list" >&2; exit 2 ;;
esac
