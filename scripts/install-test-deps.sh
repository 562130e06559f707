#!/usr/bin/env bash
# Installs the third-party programs the tests run for real (idempotent; quiet when all present).
set -euo pipefail

need_apt=()
command -v docker-registry >/dev/null 2>&1 || need_apt+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || need_apt+=(skopeo)
command -v umoci >/dev/null 2>&1 || need_apt+=(umoci)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)

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
