#!/usr/bin/env bash
# Installs the Debian 12 packages Switchyard needs to build, test, benchmark and demo,
# skipping those already present. Everything comes from Debian's archive; nothing else is fetched.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost1.81-dev libsimdjson-dev libyaml-cpp-dev libhiredis-dev
  libspdlog-dev libfmt-dev libcli11-dev libxxhash-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libglpk-dev  # the GPU-mix optimizer's MILP solver
  libsodium-dev  # API keys stored as keyed BLAKE2b digests
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

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
