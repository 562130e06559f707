#!/usr/bin/env bash
# Benchmark of `opcat catalog serve` (issue 25) on the two large shared catalogs:
# start-to-serving time (spawn to the first SERVING health answer), peak RSS (VmHWM) after
# reading every bundle, ListBundles throughput (best of RUNS reads: bundles/s and MB/s of
# encoded messages) and SIGTERM-to-exit time. The client is Python grpcio from the test tools'
# virtualenv (scripts/install-test-deps.sh).
#
# Goal (issue 25): serving certified-operators v4.16 within 1 s of start.
#
# Usage: scripts/bench-grpc.sh          (RUNS=5 by default; data from $OPCAT_SHARED_DATA)
# Output: a table on stdout. Timings are noisy while other builds run: rerun on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/shared-catalogs.sh
scripts/install-test-deps.sh
venv="${OPCAT_TEST_VENV:-$HOME/.cache/opcat-test-tools/venv}"

cargo build --release --locked --bin opcat
opcat="$PWD/target/release/opcat"
runs="${RUNS:-5}"
port="${PORT:-50071}"

{
  printf 'catalog\tserving_ms\tpeak_rss_MiB\tbundles\tlist_ms\tbundles/s\tMB/s\tstop_ms\texit\n'
  for entry in "certified-v4.16:$certified" "community-v4.21:$community"; do
    "$venv/bin/python" scripts/bench_grpc.py "$opcat" proto/registry.proto "${entry#*:}" "${entry%%:*}" "$port" "$runs"
  done
} | column -t -s $'\t'
