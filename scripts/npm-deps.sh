#!/bin/sh
# The npm packages ctxprof needs (package.json / package-lock.json at the top of the tree):
# d3 and d3-flame-graph, vendored into the HTML flame graph page at build time, and
# playwright-core, which drives Debian's chromium in tests/integration/test_record_html.sh.
#   npm-deps.sh check    exit 1 and say so when node_modules does not match package-lock.json
#   npm-deps.sh install  `npm ci` when it does not; otherwise nothing (no network)
# Idempotent: node_modules/.ctxprof-lock records the lockfile's checksum after a good install.
set -eu
cd "$(dirname "$0")/.."

stamp=node_modules/.ctxprof-lock
want=$(sha256sum package-lock.json | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)

case "${1:-check}" in
check)
	if [ "$want" != "$have" ]; then
		echo "npm packages missing or stale (node_modules does not match package-lock.json)" >&2
		echo "run 'make deps' to install them (npm ci)" >&2
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
*) echo "usage: $0 check|install" >&2; exit 2 ;;
esac
