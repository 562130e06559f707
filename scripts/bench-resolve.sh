#!/usr/bin/env bash
# Sweep benchmark (issue 13): `opcat resolve` (release build) on every bundle of the shared
# certified-operators v4.16 catalog that declares dependencies (olm.package.required,
# olm.gvk.required, olm.constraint), each as a first install with --starting-csv in a channel
# that lists it (the default channel when it does). Two configurations:
#   certified            the certified catalog alone (the Subscription's catalog);
#   certified+community  plus community-operators-prod v4.21 as a second catalog of the global
#                        namespace, priority -1.
# Every bundle must either print a plan (exit 0) or name what is missing (exit 1, "error:"
# lines); anything else (a crash, another exit code, no explanation, over 30 s) fails the script.
#
# Usage: scripts/bench-resolve.sh      (data from $OPCAT_SHARED_DATA, default ../shared/data)
#        RUNS=5 scripts/bench-resolve.sh
# Output: counts, the explanations, and the mean wall time of a whole sweep over RUNS runs
# (default 3); per-bundle outputs in target/bench-resolve/.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/shared-catalogs.sh
runs="${RUNS:-3}"

cargo build --release --locked --bin opcat
opcat="$PWD/target/release/opcat"
out="target/bench-resolve"
rm -rf "$out"
mkdir -p "$out"

# "package channel bundle" for each bundle with dependencies, from opcat's own render.
"$opcat" catalog render "$certified" | python3 -c '
import json, sys
blobs = []
decoder = json.JSONDecoder()
text = sys.stdin.read()
i = 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i == len(text):
        break
    blob, i = decoder.raw_decode(text, i)
    blobs.append(blob)
default = {b["name"]: b.get("defaultChannel") for b in blobs if b.get("schema") == "olm.package"}
channels = {}
for b in blobs:
    if b.get("schema") == "olm.channel":
        for e in b.get("entries", []):
            channels.setdefault((b["package"], e["name"]), []).append(b["name"])
kinds = {"olm.package.required", "olm.gvk.required", "olm.constraint"}
for b in blobs:
    if b.get("schema") != "olm.bundle":
        continue
    if not any(p.get("type") in kinds for p in b.get("properties", [])):
        continue
    listed = sorted(channels.get((b["package"], b["name"]), []))
    channel = default[b["package"]] if default[b["package"]] in listed else listed[0]
    print(b["package"], channel, b["name"])
' > "$out/bundles.txt"
total=$(wc -l < "$out/bundles.txt")
echo "bundles with dependencies: $total"

# One sweep: resolve every bundle; records outcomes in $out/<config>/.
sweep() {
  local config="$1"; shift
  local dir="$out/$config"
  mkdir -p "$dir"
  while read -r package channel bundle; do
    local rc=0
    timeout 30 "$opcat" resolve "$certified" "$@" --namespace team-a --package "$package" \
      --channel "$channel" --starting-csv "$bundle" >"$dir/$bundle.out" 2>"$dir/$bundle.err" || rc=$?
    echo "$rc" >"$dir/$bundle.rc"
  done <"$out/bundles.txt"
}

report() {
  local config="$1" resolved=0 missing=0 bad=0
  while read -r _ _ bundle; do
    local rc
    rc=$(cat "$out/$config/$bundle.rc")
    if [ "$rc" = 0 ] && [ -s "$out/$config/$bundle.out" ]; then
      resolved=$((resolved + 1))
    elif [ "$rc" = 1 ] && grep -q '^error: ' "$out/$config/$bundle.err"; then
      missing=$((missing + 1))
    else
      bad=$((bad + 1))
      echo "  FAILED: $bundle (exit $rc): $(head -c 300 "$out/$config/$bundle.err")"
    fi
  done <"$out/bundles.txt"
  echo "$config: $resolved resolve, $missing name what is missing, $bad other"
  if [ "$missing" -gt 0 ]; then
    echo "  what is missing (bundles naming it):"
    cat "$out/$config"/*.err | sed -E 's/^error: [^ ]+ requires /requires /' | sort | uniq -c \
      | sort -rn | sed 's/^/   /'
  fi
  [ "$bad" = 0 ]
}

timed() {
  local config="$1"; shift
  local total_s=0
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s.%N)
    sweep "$config" "$@"
    end=$(date +%s.%N)
    total_s=$(python3 -c "print($total_s + $end - $start)")
  done
  python3 -c "
mean = $total_s / $runs
print(f'$config: mean sweep {mean:.2f} s over $runs runs, {mean / $total * 1000:.0f} ms per bundle ($total bundles)')"
}

status=0
timed certified
report certified || status=1
timed certified+community --catalog "olm/community@-1=$community"
report certified+community || status=1
exit "$status"
