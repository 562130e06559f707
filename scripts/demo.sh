#!/usr/bin/env bash
# The quickstart (README's first command): opcat installs the example operator (bundles/,
# catalog/) from a private registry, on this machine, without a Kubernetes cluster.
#
# It installs only what the demo needs (the real docker-registry and a C compiler, via
# `scripts/install-test-deps.sh --demo`; no skopeo, umoci or Python), builds only the two
# programs it runs (`opcat`, `opcat-demo`) with the lean `demo` profile, and runs `opcat-demo`:
# a real registry with TLS and basic auth, the real `opcat bundle push` / `opcat catalog push`,
# an in-memory stand-in for the Kubernetes API, the real `opcat run` against it and the
# deploy/examples manifests, narrated step by step. Exit 0 when every step held; everything it
# starts is removed at the end (also on Ctrl-C).
#
# Arguments go to opcat-demo (`scripts/demo.sh --help`). The first run's time is the build
# (measured in docs/performance.md#first-run-of-the-quickstart); the demo itself takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> [demo.sh 1/3] Installing what the demo runs (docker-registry, a C compiler), if missing"
scripts/install-test-deps.sh --demo

# One cargo invocation for both, so they share one feature resolution (no rebuilds between).
# Without jemalloc (the `jemalloc` feature): the demo does not need it, and its C build is slow.
echo "==> [demo.sh 2/3] Building opcat and opcat-demo (profile demo; the first build takes minutes, cargo shows its progress)"
cargo build --locked --profile demo --no-default-features \
  -p opcat --bin opcat -p opcat-demo --bin opcat-demo
target_dir="${CARGO_TARGET_DIR:-target}"
echo "==> [demo.sh 3/3] Running the demo"
exec "$target_dir/demo/opcat-demo" --opcat "$target_dir/demo/opcat" --repo . "$@"
