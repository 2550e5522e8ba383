#!/usr/bin/env bash
# The control plane at scale (`make bench-control-plane`): 256, 1,024 and 4,096 emulated replicas
# (several `switchyard engine --replicas` processes), 1 and 3 gateways sharing a real Redis, idle
# and under a light open-loop load; gateway CPU and RSS, engine CPU and the scrapes the engines
# served, Redis CPU and bytes/s, signal age p99, reload time. Before/after when BASELINE is set
# (a switchyard binary built from the older commit), runs interleaved. About 12 min with a
# baseline. Loopback only; every process started is stopped on exit.
#
# Environment:
#   BASELINE=/path/to/switchyard      the binary to compare against (none: after only)
#   CP_REPLICAS=256,1024,4096  CP_GATEWAYS=1,3  CP_LOADS=idle,light
#   CP_SECONDS=10 (measured)  CP_WARMUP=4  CP_LIGHT_RATE=20 (requests/s)
#   CP_OUT=build/bench-control-plane  SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${CP_OUT:-$root/build/bench-control-plane}"
die() { echo "bench-control-plane: $*" >&2; exit 1; }
[ -x "$bin" ] || die "$bin not found; run make build"
for tool in python3 redis-server redis-cli gnuplot; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh installs it)"
done
if [ -n "${BASELINE:-}" ] && [ ! -x "$BASELINE" ]; then die "BASELINE=$BASELINE is not executable"; fi
mkdir -p "$out"
# Thousands of replicas: a socket per replica per gateway for scrapes and probes.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

echo "machine: $(nproc) CPUs, $(uptime | sed 's/.*load average/load average/')" | tee "$out/machine.txt"
python3 "$root/bench/e2e/control_plane.py" --after "$bin" --before "${BASELINE:-}" \
  --replicas "${CP_REPLICAS:-256,1024,4096}" --gateways "${CP_GATEWAYS:-1,3}" \
  --loads "${CP_LOADS:-idle,light}" --seconds "${CP_SECONDS:-10}" --warmup "${CP_WARMUP:-4}" \
  --light-rate "${CP_LIGHT_RATE:-20}" --out "$out"
echo "after: $(uptime | sed 's/.*load average/load average/')" | tee -a "$out/machine.txt"
python3 "$root/bench/e2e/control_plane_report.py" "$out"
