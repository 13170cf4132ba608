# SPDX-License-Identifier: MIT
# The daemon's metrics endpoint (daemon/service/metrics_*.c, daemon_metrics.c): served by
# libmicrohttpd (mk/metrics.pkgs). Before 40-tests.mk, which copies DAEMON_LIBS into TEST_LIBS.
DAEMON_LIBS += -lmicrohttpd
# the daemon's CPU per scrape (printed by `make bench`)
BENCHES += bench/bench_metrics.sh
