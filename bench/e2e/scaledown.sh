#!/usr/bin/env bash
# Traffic-aware scale-down (`make bench-scaledown`): three gateways discovering four emulated
# replicas from the fake Kubernetes API server, sharing state in Redis, under steady load of
# streamed requests; the Deployment shrinks from 4 to 3. Compares "Kubernetes picks" (no
# deletion-cost annotation, no preStop drain) with Switchyard's choice + drain-wait, and with an
# optimizer recommendation that drains the victim ahead of the shrink. Goal: 0 requests failed
# or cut mid-stream. See bench/e2e/scaledown.py for what is measured.
#
# Environment:
#   SCALEDOWN_RUNS=2            runs per mode (interleaved)
#   SCALEDOWN_MODES=kubernetes-picks,switchyard,switchyard-predrain
#   SCALEDOWN_GPU=A10  SCALEDOWN_RATE=3  SCALEDOWN_WARMUP=12  SCALEDOWN_AFTER=20
#   SCALEDOWN_GRACE=60 (terminationGracePeriodSeconds)  SCALEDOWN_PREDRAIN=8
#   SCALEDOWN_MAX_TOKENS=128-512  SCALEDOWN_SEED=11
#   SCALEDOWN_OUT=build/bench-scaledown  SWITCHYARD=build/release/switchyard
#   FAKE_KUBE=build/release/fake-kube-apiserver
# Loopback only; every process started is stopped on exit. About 1 min per run.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
fake="${FAKE_KUBE:-$root/build/release/fake-kube-apiserver}"
out="${SCALEDOWN_OUT:-$root/build/bench-scaledown}"
die() { echo "scaledown: $*" >&2; exit 1; }
[ -x "$bin" ] || die "$bin not found; run make build"
[ -x "$fake" ] || die "$fake not found; run make build"
for tool in python3 redis-server; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh installs it)"
done
mkdir -p "$out"
log="$out/scaledown.txt"
{
  echo "# make bench-scaledown, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$log"
python3 "$root/bench/e2e/scaledown.py" --switchyard "$bin" --fake-apiserver "$fake" \
  --out "$out" \
  --modes "${SCALEDOWN_MODES:-kubernetes-picks,switchyard,switchyard-predrain}" \
  --runs "${SCALEDOWN_RUNS:-2}" --gpu "${SCALEDOWN_GPU:-A10}" --rate "${SCALEDOWN_RATE:-3}" \
  --warmup "${SCALEDOWN_WARMUP:-12}" --after "${SCALEDOWN_AFTER:-20}" \
  --grace "${SCALEDOWN_GRACE:-60}" --predrain "${SCALEDOWN_PREDRAIN:-8}" \
  --max-tokens "${SCALEDOWN_MAX_TOKENS:-128-512}" --seed "${SCALEDOWN_SEED:-11}" | tee -a "$log"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"

if command -v gnuplot >/dev/null; then
  png="$out/scaledown.png"
  plots=""
  for f in "$out"/*-0-victim.csv; do
    [ -f "$f" ] || continue
    mode="$(basename "$f" -0-victim.csv)"
    plots+="\"$f\" using 1:2 with steps lw 2 title \"$mode\", "
  done
  if [ -n "$plots" ]; then
    gnuplot <<GNUPLOT
set terminal pngcairo size 1100,500 noenhanced
set output "$png"
set datafile separator ","
set key top right
set title "Scale-down: requests in flight on the deleted replica (engine running + waiting), run 0"
set xlabel "seconds since the Pod's deletion"
set ylabel "requests in flight on the victim"
set yrange [0:*]
set grid
plot ${plots%, }
GNUPLOT
    echo "plot: $png" | tee -a "$log"
  fi
fi
echo "table: $log; rows: $out/scaledown.csv"
