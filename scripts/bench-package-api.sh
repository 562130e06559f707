#!/usr/bin/env bash
# Package API benchmark (issue 24): every package of the shared certified-operators v4.16 and
# community-operators v4.21 catalogs listed in one namespace, over TLS, through the token and
# authorizer caches; p50/p99 latency and the process's memory with and without the API.
# The server runs in a process of its own on opcat's allocator (jemalloc); its RSS is measured.
# Prints a Markdown table on stdout. Targets: p99 < 50 ms, < 10 % more RSS.
#
# Usage: scripts/bench-package-api.sh        Env: BENCH_REQUESTS (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: $(nproc) CPUs; load:$(uptime | sed 's/.*load average://')" >&2
export OPCAT_SHARED_DATA="${OPCAT_SHARED_DATA:-$(cd .. && pwd)/shared/data}"
[ -f "$OPCAT_SHARED_DATA/SHA256SUMS" ] || OPCAT_SHARED_DATA=/work/shared/data
cargo bench --bench package_api --quiet
