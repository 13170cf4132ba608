#!/bin/sh
# SPDX-License-Identifier: MIT
# The Debian packages ctxprof needs, in two sets:
#   build  what `make` (the product) needs: packaging/debian/control's Build-Depends are
#          exactly these, less build-essential (tests/packaging/test_build_deps.sh)
#   test   what the tests and benchmarks need on top (`make test`, `make bench`)
#
#   deps.sh check [build|test]    exit 1 and name what is missing
#   deps.sh install [build|test]  apt-get install what is missing (apt-get update only when needed)
#   deps.sh list [build|test]     print the set, one name a line
# Idempotent: with everything present it does nothing and touches no network.
set -eu

# build-essential (gcc, make, binutils: implied by Debian's Build-Depends) and the base
BUILD_PKGS="
gcc make binutils
clang llvm
libbpf-dev bpftool
libelf-dev libdw-dev zlib1g-dev
"
# Fragments add packages for their own area, one name per line: mk/NAME.pkgs for the build,
# mk/NAME.test.pkgs for the tests and benchmarks.
pkgs_of() { # build|test
	for f in "$(dirname "$0")"/../mk/*.pkgs; do
		[ -f "$f" ] || continue
		case "$f" in *.test.pkgs) kind="test" ;; *) kind="build" ;; esac
		[ "$kind" = "$1" ] && grep -v '^#' "$f"
	done
	return 0
}

set_=${2:-build}
case "$set_" in
build) PKGS="$BUILD_PKGS $(pkgs_of build)" ;;
test) PKGS="$(pkgs_of test)" ;;
*) echo "usage: $0 check|install|list build|test" >&2; exit 2 ;;
esac

missing() {
	for p in $PKGS; do
		s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		case "$s" in *"install ok installed"*) ;; *) echo "$p" ;; esac
	done
}

case "${1:-check}" in
list)
	# shellcheck disable=SC2086
	printf '%s\n' $PKGS | sort -u ;;
check)
	m=$(missing | tr '\n' ' ')
	if [ -n "$m" ]; then
		echo "missing Debian packages ($set_): $m" >&2
		[ "$set_" = build ] && echo "run 'make deps' (as root) to install them" >&2
		[ "$set_" = test ] && echo "run 'make deps-test' (as root) to install them" >&2
		exit 1
	fi ;;
install)
	m=$(missing | tr '\n' ' ')
	[ -z "$m" ] && exit 0
	if [ "$(id -u)" != 0 ]; then
		echo "missing Debian packages ($set_): $m; installing them must run as root" >&2
		exit 1
	fi
	echo "installing ($set_): $m"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if ! apt-get install -y -q --no-install-recommends $m; then
		apt-get update -q
		apt-get install -y -q --no-install-recommends $m
	fi ;;
*) echo "usage: $0 check|install|list build|test" >&2; exit 2 ;;
esac
