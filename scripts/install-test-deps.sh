#!/usr/bin/env bash
# Installs the third-party programs the tests run for real (idempotent; quiet when all present).
# `--demo`: only what scripts/demo.sh needs (docker-registry, and a C compiler for ring's C
# parts); no skopeo, umoci, openssl, make or Python tools.
set -euo pipefail

demo_only=0
[ "${1:-}" != "--demo" ] || demo_only=1

need_apt=()
command -v docker-registry >/dev/null 2>&1 || need_apt+=(docker-registry)
# ring (TLS) has C parts, built with the system compiler.
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
if [ "$demo_only" -eq 0 ]; then
  command -v skopeo >/dev/null 2>&1 || need_apt+=(skopeo)
  command -v umoci >/dev/null 2>&1 || need_apt+=(umoci)
  command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
  # opcat's allocator (tikv-jemalloc-sys) is C, built with make.
  command -v make >/dev/null 2>&1 || need_apt+=(make)
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  # docker-registry ships a systemd unit that would listen on 0.0.0.0:5000; keep package
  # scripts from starting services (tests start their own registry on loopback).
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo_cmd[@]}" tee "$policy" >/dev/null
    "${sudo_cmd[@]}" chmod +x "$policy"
    created_policy=1
  fi
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${need_apt[@]}"
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    "${sudo_cmd[@]}" systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
  fi
  [ "$created_policy" -eq 0 ] || "${sudo_cmd[@]}" rm -f "$policy"
fi

[ "$demo_only" -eq 0 ] || exit 0

# Python test tools, pinned, in a virtualenv (never the system's site-packages):
# kubernetes-validate checks deploy/ offline (tests/ops_deploy.rs); prometheus-client's
# OpenMetrics parser is the reference the /metrics output must parse with (tests/ops_admin.rs);
# grpcio (with grpcio-tools to compile proto/registry.proto) is the third-party client of
# `opcat catalog serve` (tests/registry_grpc_python.rs).
# Tests find the virtualenv at $OPCAT_TEST_VENV (default ~/.cache/opcat-test-tools/venv).
venv="${OPCAT_TEST_VENV:-$HOME/.cache/opcat-test-tools/venv}"
python_tools=("kubernetes-validate==1.37.0" "prometheus-client==0.26.0" "grpcio==1.85.1" "grpcio-tools==1.85.1")
# pip freeze spells names with `_` or `-` as the package does; compare them normalised.
installed="$("$venv/bin/python" -m pip freeze 2>/dev/null | tr '[:upper:]_' '[:lower:]-' || true)"
missing_tool=0
for tool in "${python_tools[@]}"; do
  grep -qx "$(printf '%s' "$tool" | tr '[:upper:]_' '[:lower:]-')" <<<"$installed" || missing_tool=1
done
if [ "$missing_tool" -eq 1 ]; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -q
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends python3 python3-venv
  fi
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${python_tools[@]}"
fi

