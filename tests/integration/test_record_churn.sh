#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# ctxprof record -- a shell that runs /bin/true 500 times: every child is followed from its
# fork through its exec to its exit, most of them before they have any executable mapping
# of their own. Runs in the ASan/UBSan variant too (kind rootsan), where a NULL/0 corner
# (qsort(NULL, 0) on an empty maps table) aborts.
. "$(dirname "$0")/sampler_lib.sh"
record_ok 300 -F 999 -o "$TMP/churn.txt" -- sh -c 'for i in $(seq 500); do /bin/true; done'
procs=$(sed -n 's/.* processes \([0-9]*\).*/\1/p' "$TMP/e")
echo "processes followed: $procs"
[ "${procs:-0}" -ge 250 ] || fail "only ${procs:-0} of 501 processes followed"
echo "PASS: record churn"
