#!/usr/bin/env bash
# Benchmark of the in-memory API server's authentication and RBAC (fake-apiserver, release):
# 200 GETs through kube::Client as the admin (system:masters, allowed before any rule is read)
# and as a token user allowed by a RoleBinding, among 1 000 namespaces with a RoleBinding each
# and 300 ClusterRoleBindings; then the create-and-watch throughput bench the scale bench
# relies on, to compare with main.
#
# Usage: scripts/bench-authz.sh
# Output: one line per measurement (criterion's median and bounds); details in
# target/criterion/.
set -euo pipefail
cd "$(dirname "$0")/.."

run() {
  cargo bench --locked -p fake-apiserver --bench "$1" -- --noplot 2>/dev/null \
    | awk '/time:/ { split($0, a, "time:"); n = a[1]; gsub(/^ +| +$/, "", n); if (n == "") n = prev;
                     printf "%-55s %s\n", n, a[2]; next }
           NF { prev = $0; gsub(/^ +| +$/, "", prev) }'
}

printf '%-55s %s\n' "benchmark" "time [low median high]"
run authorize
run create_and_watch
