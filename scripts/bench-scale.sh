#!/usr/bin/env bash
# Scale benchmark of the controller (issues 5 and 6): the release `opcat run` binary in its own
# process against the in-memory API server (over HTTP) and the real docker-registry (TLS, basic
# auth). For each N: N namespaces each with an OperatorGroup and a Subscription to one catalog
# with two source secrets converge from scratch; a steady-state window longer than the resync
# (writes must be 0); then one source secret is rotated until all N copies carry the new data.
# Prints the details per run on stderr; on stdout a Markdown table (min-max over BENCH_ROUNDS
# runs of each N), opcat's requests by verb and resource per phase, the CPU time of opcat and of
# the in-memory API server, and issue 12's targets.
# With --copied-csvs (issue 27): one operator installed for all namespaces and N namespaces, each
# N with copied CSVs on and off (OLMConfig disableCopiedCSVs): converge until every namespace
# holds a Succeeded copy (on), the steady window (0 writes, 0 reads), then the switch flipped
# until every copy is gone (on) or made (off); the runs side by side.
#
# Usage: scripts/bench-scale.sh [--copied-csvs] [N ...]
#        (default N: 200 1000; with --copied-csvs 1000 10000)
# Env:   BENCH_ROUNDS (default 2: every N is run that many times, each from a fresh cluster and
#        controller), BENCH_CONCURRENCY (default 16), BENCH_RESYNC (default 60s),
#        BENCH_STEADY_SECS (default 90; must exceed the resync).
# Takes minutes: not part of scripts/test.sh (`cargo test --benches` runs an N=3 smoke instead).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

mode=()
defaults=(200 1000)
if [ "${1:-}" = --copied-csvs ]; then
  mode=(--copied-csvs)
  defaults=(1000 10000)
  shift
fi
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=("${defaults[@]}")
rounds=${BENCH_ROUNDS:-2}
runs=()
for ((round = 0; round < rounds; round++)); do
  runs+=("${sizes[@]}")
done

echo "machine: $(nproc) CPUs; load:$(uptime | sed 's/.*load average://')" >&2
# The bench profile is the release profile: this builds `opcat` optimised, and the driver runs
# that binary (CARGO_BIN_EXE_opcat; OPCAT_BIN overrides it).
cargo bench --locked --bench scale -- "${mode[@]}" "${runs[@]}" \
  --concurrency "${BENCH_CONCURRENCY:-16}" \
  --resync "${BENCH_RESYNC:-60s}" \
  --steady-secs "${BENCH_STEADY_SECS:-90}"
echo "machine after the runs: load:$(uptime | sed 's/.*load average://')" >&2
