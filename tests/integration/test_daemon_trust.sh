#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel check
# ctxprof daemon against a user who prepares its output directory (docs/daemon.md once used
# /tmp/prof): dangling symlinks planted by `nobody` under the predictable .part/.jfr, status
# and lock names must never make the root daemon create a file where they point. Refused at
# start (exit 1, the reason logged, nothing created): a directory nobody owns (writable, or
# 0750 as `install -d -o nobody -m 0750` makes it: after the capability drop root could not
# write there), a sticky world-writable one, a symlink nobody planted in one, a status file
# in one. Accepted: a root-owned 0755 directory holding root-planted dangling links — the
# recording takes the next free name, nothing appears behind a link, the lock is not taken
# through one, and the status file is written.
. "$(dirname "$0")/daemon_lib.sh"
command -v setpriv >/dev/null || skip "no setpriv"
NOBODY=65534
as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
chmod 0711 "$TMP" # nobody may reach its own directories below
VICTIM=$TMP/victims # where the links point: root's only
install -d -m 0700 "$VICTIM"
HOST=$(hostname | sed 's/[^A-Za-z0-9._-]/_/g')
NOCG=/ctxprof-trust-none-$$ # a cgroup that does not exist: no targets, files all the same

# plant DIR: dangling links (made by whoever runs it) for every name the daemon could pick in
# the next 40 s, for the lock and for a status file DIR/status
plant() {
	local d=$1 now i s
	now=$(date -u +%s)
	for i in $(seq 0 40); do
		s=$(date -u -d "@$((now + i))" +%Y%m%dT%H%M%SZ)
		ln -s "$VICTIM/part-$s" "$d/ctxprof-$HOST-$s.jfr.part"
		ln -s "$VICTIM/jfr-$s" "$d/ctxprof-$HOST-$s.jfr"
	done
	ln -s "$VICTIM/lock" "$d/.ctxprof.lock"
	ln -s "$VICTIM/status" "$d/status.tmp"
}
export -f plant
export VICTIM HOST

# refused DIR STATUS WHAT: the daemon exits 1 at start saying WHAT, and nothing is created
refused() {
	local rc
	: >"$DLOG"
	timeout 20 "$CTXPROF" daemon --mode selectors --cgroup "$NOCG" --directory "$1" \
		--status-file "$2" >>"$DLOG" 2>&1
	rc=$?
	[ "$rc" = 1 ] || { cat "$DLOG"; fail "daemon on $1 (status $2) exited $rc, want 1 (refused at start)"; }
	grep -q "$3" "$DLOG" || { cat "$DLOG"; fail "no '$3' in the refusal"; }
	[ -z "$(ls -A "$VICTIM")" ] || { ls -l "$VICTIM"; fail "a file was created through a planted link"; }
	echo "refused $1: $(grep -o 'ctxprof: .*' "$DLOG" | head -1)"
}

# 1. a directory nobody owns and filled with links
install -d -o $NOBODY -m 0755 "$TMP/theirs"
as_nobody bash -c 'plant "$1"' _ "$TMP/theirs" || fail "nobody could not plant links"
refused "$TMP/theirs" "$TMP/theirs/status" "belongs to uid $NOBODY, not to this process"

# 2. nobody's 0750 directory (`install -d -o nobody -m 0750`): refused at start instead of
# every rotation failing once the capabilities are dropped
install -d -o $NOBODY -m 0750 "$TMP/theirs-0750"
refused "$TMP/theirs-0750" "$TMP/status" "belongs to uid $NOBODY"

# 3. a root-owned sticky directory anyone can write (/tmp-like), links planted by nobody
install -d -m 1777 "$TMP/shared"
as_nobody bash -c 'plant "$1"' _ "$TMP/shared" || fail "nobody could not plant links"
refused "$TMP/shared" "$TMP/status" "writable by others"
# ... a symlink nobody made there, pointing at a root-only directory
install -d -m 0700 "$TMP/rootonly"
as_nobody ln -s "$TMP/rootonly" "$TMP/shared/prof"
refused "$TMP/shared/prof" "$TMP/status" "symbolic link of uid $NOBODY"
[ -z "$(ls -A "$TMP/rootonly")" ] || fail "files written into the linked root-only directory"
# ... a status file there
refused "$TMP/out-ok" "$TMP/shared/status" "status file .*writable by others"
# ... a directory of nobody's below a root-owned parent: its parent check names it
refused "$TMP/theirs/sub" "$TMP/status" "$TMP/theirs belongs to uid $NOBODY"

# 4. a root-owned 0755 directory with dangling links planted (before it was root's, or by a
# root process): the daemon records, but never through a link
install -d -m 0755 "$TMP/rootdir"
plant "$TMP/rootdir"
OUT=$TMP/rootdir
ST=$OUT/status
start_daemon --mode selectors --cgroup "$NOCG" --chunk-period 300ms
P=
for _ in $(seq 100); do
	P=$(find "$OUT" -maxdepth 1 -type f -name 'ctxprof-*.jfr.part' | head -1)
	[ -n "$P" ] && break
	sleep 0.1
done
[ -n "$P" ] || { cat "$DLOG"; ls -la "$OUT"; fail "no recording in progress"; }
case "$P" in *Z-[0-9]*.jfr.part) ;; *) fail "$P: not the next free name after the planted ones" ;; esac
[ -f "$ST" ] && [ ! -L "$ST" ] || fail "status file not written"
grep -q "^daemon " "$ST" || fail "status file without its daemon line"
stop_daemon
F=${P%.part}
[ -f "$F" ] && [ ! -L "$F" ] || { ls -la "$OUT"; fail "$F not finished as a regular file"; }
jfr_ok "$F"
[ -L "$OUT/.ctxprof.lock" ] || fail "the planted lock link was replaced"
grep -q "cannot lock $OUT/.ctxprof.lock" "$DLOG" || { cat "$DLOG"; fail "no warning about the lock link"; }
[ -z "$(ls -A "$VICTIM")" ] || { ls -l "$VICTIM"; fail "a file was created through a planted link"; }
echo "root-owned directory with planted links: recorded to $(basename "$F"), nothing behind a link"
echo "PASS: daemon output directory trust"
