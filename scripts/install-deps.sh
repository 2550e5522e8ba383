#!/usr/bin/env bash
# Installs the Debian 12 packages Switchyard needs to build, test, benchmark and demo,
# skipping those already present. Everything comes from Debian's archive, except the openai npm
# client for tests/npm, from the npm registry.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost1.81-dev libsimdjson-dev libyaml-cpp-dev libhiredis-dev
  libspdlog-dev libfmt-dev libcli11-dev libxxhash-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libglpk-dev  # the GPU-mix optimizer's MILP solver
  libsodium-dev  # API keys stored as keyed BLAKE2b digests
  # KV-cache events (ZMQ PUB/SUB + ROUTER replay) from the engines and the emulator. Not
  # libmsgpack-dev: it pulls libboost-dev 1.74, which conflicts with libboost1.81-dev.
  libzmq3-dev
  clang libclang-rt-14-dev  # libFuzzer targets (make fuzz-smoke)
  redis-server nginx-light wrk curl python3 gnuplot-nox
  prometheus chromium  # promtool checks /metrics; headless chromium tests the dashboard
  python3-yaml         # tests/deploy/validate_manifests.py reads the rendered manifests
)
# `kubectl kustomize` renders deploy/kubernetes in the tests: Debian's kubectl, unless one is
# already on the PATH (it would conflict with another vendor's /usr/bin/kubectl).
if ! command -v kubectl >/dev/null; then packages+=(kubernetes-client); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js for the openai npm client tests: Debian's, unless a node is already installed.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The official openai npm client (tests/npm/package.json), from the npm registry.
root="$(cd "$(dirname "$0")/.." && pwd)"
# Without it those tests skip themselves, so a registry that cannot be reached is not fatal.
if [ ! -d "$root/tests/npm/node_modules/openai" ] && command -v npm >/dev/null; then
  npm install --prefix "$root/tests/npm" --no-audit --no-fund --silent ||
    echo "npm install failed: the openai npm client tests will be skipped" >&2
fi
