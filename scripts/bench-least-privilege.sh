#!/usr/bin/env bash
# Least-privilege sweep (issue 23): each of the 379 bundles of the shared certified-operators
# v4.16 catalog installed alone, with a catalog pull secret holding the four registries of an
# OpenShift global pull secret (cloud.openshift.com, quay.io, registry.redhat.io,
# registry.connect.redhat.com). Prints Markdown tables: how many entries each copy holds, how
# many bundles need more than one registry, which registries are needed how often, and the
# registries of images no entry covers (assumed public). Pure computation with opcat's own
# copy code: no cluster, no registry, no timing.
#
# Usage: scripts/bench-least-privilege.sh      (data from $OPCAT_SHARED_DATA, default ../shared/data)
set -euo pipefail
cd "$(dirname "$0")/.."
export OPCAT_SHARED_DATA="${OPCAT_SHARED_DATA:-$(cd .. && pwd)/shared/data}"
[ -f "$OPCAT_SHARED_DATA/SHA256SUMS" ] || { echo "shared data not found at $OPCAT_SHARED_DATA (set OPCAT_SHARED_DATA)" >&2; exit 1; }
# The numbers do not depend on optimisation: the test build (shared with `cargo test`) is enough.
cargo test --locked --quiet --bench least_privilege -- --bench
