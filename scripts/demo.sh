#!/usr/bin/env bash
# The quickstart (README's first command): opcat installs the example operator (bundles/,
# catalog/) from a private registry, on this machine, without a Kubernetes cluster.
#
# It installs what it needs (the real docker-registry, via scripts/install-test-deps.sh), builds
# opcat and the demo, and runs `opcat-demo`: a real registry with TLS and basic auth, the real
# `opcat bundle push` / `opcat catalog push`, an in-memory stand-in for the Kubernetes API, the
# real `opcat run` against it and the deploy/examples manifests, narrated step by step. Exit 0
# when every step held; everything it starts is removed at the end (also on Ctrl-C).
#
# Arguments go to opcat-demo (`scripts/demo.sh --help`). A debug build: on a fresh machine the
# build dominates, and it is minutes shorter than a release build; the demo itself takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh

# One cargo invocation for both, so they share one feature resolution (no rebuilds between).
cargo build --locked -p opcat --bin opcat -p opcat-demo --bin opcat-demo
target_dir="${CARGO_TARGET_DIR:-target}"
exec "$target_dir/debug/opcat-demo" --opcat "$target_dir/debug/opcat" --repo . "$@"
