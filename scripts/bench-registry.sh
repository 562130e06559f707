#!/usr/bin/env bash
# Pull-path benchmark: opcat vs `skopeo copy` + `tar -xzf` on the large third-party catalog,
# against a real registry on loopback. Prints a Markdown table (time, peak RSS).
# Env: OPCAT_SHARED_DATA (default ../shared/data), BENCH_RUNS (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh
need_apt=()
command -v hyperfine >/dev/null 2>&1 || need_apt+=(hyperfine)
[ -x /usr/bin/time ] || need_apt+=(time)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi

export OPCAT_SHARED_DATA=${OPCAT_SHARED_DATA:-$(cd .. && pwd)/shared/data}
cargo bench --locked --bench registry_pull
