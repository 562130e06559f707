#!/usr/bin/env bash
# Benchmark: `opcat catalog validate` on two large real catalogs against a parse-only baseline
# (PyYAML with the libyaml C loader), in one hyperfine run, plus peak RSS.
#
# Targets (docs/performance.md): opcat wall time <= 0.2x the baseline's on each catalog
# (stretch 0.1x), peak RSS <= 2x the catalog's size on disk.
#
# Usage: scripts/bench-catalog.sh            (data from $OPCAT_SHARED_DATA, default ../shared/data)
# Output: a table on stdout; hyperfine's JSON and Markdown in target/bench-catalog/.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/shared-catalogs.sh

# Tools: hyperfine, GNU time, PyYAML built with libyaml.
need_apt=()
command -v hyperfine >/dev/null 2>&1 || need_apt+=(hyperfine)
[ -x /usr/bin/time ] || need_apt+=(time)
python3 -c 'import yaml; yaml.CSafeLoader' >/dev/null 2>&1 || need_apt+=(python3-yaml)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi
python3 -c 'import yaml; yaml.CSafeLoader' || { echo "PyYAML lacks the libyaml C loader (yaml.CSafeLoader)" >&2; exit 1; }

cargo build --release --locked --bin opcat
opcat="$PWD/target/release/opcat"
out="target/bench-catalog"
mkdir -p "$out"

baseline='python3 -c '"'"'import sys,yaml,pathlib;[list(yaml.load_all(p.read_text(),Loader=yaml.CSafeLoader)) for p in pathlib.Path(sys.argv[1]).rglob("*") if p.is_file()]'"'"

# Both catalogs must be valid, or the timing would measure an error path.
"$opcat" catalog validate "$certified"
"$opcat" catalog validate "$community"

hyperfine --warmup 2 --runs "${RUNS:-10}" --export-json "$out/hyperfine.json" --export-markdown "$out/hyperfine.md" \
  -n "baseline certified-v4.16" "$baseline $certified" \
  -n "opcat certified-v4.16" "$opcat catalog validate $certified" \
  -n "baseline community-v4.21" "$baseline $community" \
  -n "opcat community-v4.21" "$opcat catalog validate $community"

peak_rss_kb() {
  /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ {print $2}'
}

python3 - "$out/hyperfine.json" \
  "$(du -sb "$certified" | cut -f1)" "$(peak_rss_kb "$opcat" catalog validate "$certified")" \
  "$(du -sb "$community" | cut -f1)" "$(peak_rss_kb "$opcat" catalog validate "$community")" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
sizes = {"certified-v4.16": (int(sys.argv[2]), int(sys.argv[3]) * 1024),
         "community-v4.21": (int(sys.argv[4]), int(sys.argv[5]) * 1024)}
print()
print("| catalog | size on disk | baseline (PyYAML CSafeLoader) | opcat validate | ratio | opcat peak RSS | RSS / size |")
print("|---|---|---|---|---|---|---|")
for name, (size, rss) in sizes.items():
    base, ours = results[f"baseline {name}"], results[f"opcat {name}"]
    ratio = ours["mean"] / base["mean"]
    print(f"| {name} | {size / 1e6:.1f} MB | {base['mean'] * 1000:.0f} ± {base['stddev'] * 1000:.0f} ms"
          f" | {ours['mean'] * 1000:.0f} ± {ours['stddev'] * 1000:.0f} ms | {ratio:.3f}x"
          f" | {rss / 1e6:.1f} MB | {rss / size:.2f}x |")
EOF
