#!/bin/sh
# The Debian packages ctxprof needs to build, test and benchmark.
#   deps.sh check    exit 1 and name what is missing
#   deps.sh install  apt-get install what is missing (apt-get update only when needed)
# Idempotent: with everything present it does nothing and touches no network.
set -eu

PKGS="
gcc make pkg-config binutils
clang llvm
libbpf-dev bpftool
libelf-dev libdw-dev zlib1g-dev libzstd-dev
libcriterion-dev
libcap-dev
clang-format
openjdk-17-jdk-headless
linux-perf
procps util-linux time
"
# Fragments may add packages for their own area: one name per line in mk/*.pkgs
for f in "$(dirname "$0")"/../mk/*.pkgs; do
	[ -f "$f" ] && PKGS="$PKGS $(grep -v '^#' "$f")"
done

missing() {
	for p in $PKGS; do
		s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		case "$s" in *"install ok installed"*) ;; *) echo "$p" ;; esac
	done
}

m=$(missing | tr '\n' ' ')
case "${1:-check}" in
check)
	if [ -n "$m" ]; then
		echo "missing Debian packages: $m" >&2
		echo "run 'make deps' (as root) to install them" >&2
		exit 1
	fi ;;
install)
	[ -z "$m" ] && exit 0
	if [ "$(id -u)" != 0 ]; then
		echo "missing Debian packages: $m; 'make deps' must run as root" >&2
		exit 1
	fi
	echo "installing: $m"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	if ! apt-get install -y -q --no-install-recommends $m; then
		apt-get update -q
		apt-get install -y -q --no-install-recommends $m
	fi ;;
*) echo "usage: $0 check|install" >&2; exit 2 ;;
esac
