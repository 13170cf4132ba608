#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel, long
# The OTLP fault matrix: test_daemon_upload_spool.sh with [upload] format = otlp (UPLOAD_FORMAT,
# upload_lib.sh): every profile delivered once, each body the finished file converted
# (compared, decoded against the upstream schema, with `ctxprof report --format otlp` of the
# file but for its resource).
UPLOAD_FORMAT=otlp
. "$(dirname "$0")/test_daemon_upload_spool.sh"
