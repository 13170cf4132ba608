# SPDX-License-Identifier: MIT
# The parser helper (daemon/service/parser_server.c): its cost against in-process parsing.
BENCHES += bench/bench_parser.sh
