#!/usr/bin/env bash
# Sizes of what the Containerfile ships, computed from the files it copies (no container engine
# needed): the release binary as built, the stripped binary of the image, its separate debug
# info, and the image layer that the runtime stage's `COPY` adds (a tar of usr/local/bin/opcat,
# uncompressed and gzip-compressed as registries store it). The base image's layers
# (distroless cc-debian12) come on top and are not opcat's.
#
# Usage: scripts/image-size.sh   (builds `cargo build --release --bin opcat` first)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked --bin opcat >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out" "$work/layer/usr/local/bin"
# The Containerfile's build stage, step for step.
objcopy --only-keep-debug target/release/opcat "$work/out/opcat.debug"
objcopy --strip-all --add-gnu-debuglink="$work/out/opcat.debug" target/release/opcat "$work/out/opcat"
install -m 0755 "$work/out/opcat" "$work/layer/usr/local/bin/opcat"
ln -s opcat "$work/layer/usr/local/bin/grpc_health_probe"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/layer" -cf "$work/layer.tar" usr
gzip -9 -n -c "$work/layer.tar" > "$work/layer.tar.gz"

size() { stat -c %s "$1"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
echo "| artifact | size |"
echo "|---|---|"
echo "| target/release/opcat (line tables) | $(mb "$(size target/release/opcat)") |"
echo "| image binary (objcopy --strip-all) | $(mb "$(size "$work/out/opcat")") |"
echo "| separate debug info (objcopy --only-keep-debug) | $(mb "$(size "$work/out/opcat.debug")") |"
echo "| image layer of the binary, tar | $(mb "$(size "$work/layer.tar")") |"
echo "| image layer of the binary, tar.gz (as pushed) | $(mb "$(size "$work/layer.tar.gz")") |"
