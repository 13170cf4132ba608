# SPDX-License-Identifier: MIT
# Shared by the packaging tests (sourced): owns the scratch directory, failure reporting and
# the "normal build only" rule. Never installs outside its scratch directory.
set -u
cd "$(dirname "$0")/../.."
SRC=$PWD
B=${TEST_BUILD:-build}
case "$B" in
build) ;;
*) echo "SKIPPED: packaging is checked in the normal build only (this is $B)"; exit 77 ;;
esac
TMP=$(mktemp -d /tmp/ctxprof-pkgtest.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
# /usr/bin/python3 explicitly: a python3 earlier in PATH may lack python3-yaml.
PY=/usr/bin/python3
