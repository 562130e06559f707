#!/usr/bin/env bash
# The test command (README "Quickstart", second command). Installs what the tests need on a
# fresh Debian machine, then runs the whole suite. Nothing is skipped when a tool is missing:
# missing tools are installed here, and the tests fail loudly if they still cannot find them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

cargo test --workspace --all-targets --locked
