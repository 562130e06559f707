#!/usr/bin/env bash
# The test command (README "Quickstart", second command). Installs what the tests need on a
# fresh Debian machine, then runs the whole suite. Nothing is skipped because a tool is missing:
# missing tools are installed here, and tests fail loudly if they still cannot find them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

# Tests named third_party_* read real third-party catalogs and bundles from the shared data
# directory beside the repository (never copied into it). Every behaviour they check is also
# covered by tests on our own fixtures; when the data is absent they are not run, and this says so.
data="${OPCAT_SHARED_DATA:-$(pwd)/../shared/data}"
filter=()
if [ -d "$data/fbc" ]; then
  export OPCAT_SHARED_DATA="$(cd "$data" && pwd)"
  echo "test.sh: third-party data at $OPCAT_SHARED_DATA: third_party_* tests run"
else
  echo "test.sh: NOTICE: no third-party data at $data (set OPCAT_SHARED_DATA);" \
       "third_party_* tests are NOT run in this invocation" >&2
  filter=(--skip third_party_)
fi

cargo test --workspace --lib --bins --tests --locked -- "${filter[@]}"
cargo test --workspace --doc --locked
# Benchmarks run once in test mode, so they keep compiling and working.
cargo test --workspace --benches --locked
