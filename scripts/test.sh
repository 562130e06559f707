#!/usr/bin/env bash
# The test command (README "Quickstart", second command). Installs what the tests need on a
# fresh Debian machine, then runs the whole suite. Nothing is skipped because a tool is missing:
# missing tools are installed here, and tests fail loudly if they still cannot find them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

# Third-party test data: real catalogs and bundles nobody here wrote, kept beside the repository
# and never copied into it (its README names each source repository and commit). Tests named
# third_party_* and the benchmarks read it. It cannot be downloaded from this machine, so it is
# required, not optional: a missing or altered copy stops the run here with what to do, instead
# of running fewer tests.
data="${OPCAT_SHARED_DATA:-$(pwd)/../shared/data}"
if [ ! -f "$data/SHA256SUMS" ]; then
  echo "test.sh: the third-party test data is not at $data." >&2
  echo "test.sh: put the shared data directory there, or set OPCAT_SHARED_DATA to it." >&2
  exit 1
fi
if ! (cd "$data" && sha256sum --quiet --strict -c SHA256SUMS); then
  echo "test.sh: the third-party test data at $data does not match its SHA256SUMS." >&2
  exit 1
fi
export OPCAT_SHARED_DATA="$(cd "$data" && pwd)"

cargo test --workspace --lib --bins --tests --locked
cargo test --workspace --doc --locked
# Benchmarks run once in test mode, so they keep compiling and working.
cargo test --workspace --benches --locked
