#!/usr/bin/env bash
# Installs the Debian packages SOLAR's C++ core and its tests need. Idempotent; run as root.
#   build:  g++ (>= 12), zlib (npz reading), nlohmann-json (reports), yaml-cpp (device files),
#           CLI11 (command line)
#   tests:  GoogleTest, clang-tidy / clang-format (lint), chromium (the HTML report is loaded in
#           headless Chromium by tests/python/test_html_report.py)
set -euo pipefail
pkgs=(g++ zlib1g-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev clang-tidy clang-format chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
