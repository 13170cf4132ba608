#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel, long
# One series per service in the default configuration (split = host): the one host file is
# uploaded as one OTLP resource per process its samples came from (the JFR thread's pid),
# named by its service, with its pid, executable, container and pod: the test of
# test_daemon_upload_series_otlp.sh with SERIES_SPLIT=host.
SERIES_SPLIT=host
. "$(dirname "$0")/test_daemon_upload_series_otlp.sh"
