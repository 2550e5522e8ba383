#!/usr/bin/env bash
# Fault scenarios under steady load (`make bench-faults`): three emulated A100 replicas behind one
# gateway with shortened health timings; each scenario breaks replica 0 for 4 s and reports
# client-visible failures, time to exclude, time to recover and retry overhead.
# Loopback only; every process started here is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${SWITCHYARD_BIN:-build/release/switchyard}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "$work" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

start() {  # start NAME ARGS... ; appends the first port of its `listening` line to `ports`
  local name=$1; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  disown  # killed on purpose by the crash scenario: no job-control noise
  for _ in $(seq 100); do
    if grep -q '^listening' "$work/$name.out" 2>/dev/null; then break; fi
    sleep 0.05
  done
  ports+=("$(awk '/^listening/{split($2,a,":"); print a[2]; exit}' "$work/$name.out")")
}

ports=()
for i in 0 1 2; do start "engine$i" "$BIN" engine --gpu A100 --model llama2-7b \
  --listen 127.0.0.1:0 --seed "$i"; done
cat >"$work/gateway.yaml" <<YAML
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
workers: 1
routing: { default_strategy: least-request }
health: { failure_threshold: 3, hard_failure_threshold: 6, probe_interval_ms: 250,
          probe_timeout_ms: 500, base_backoff_ms: 500, max_backoff_ms: 4000 }
models:
  - name: llama2-7b
    timeouts: { upstream_first_byte_ms: 1000 }
    replicas:
$(for p in "${ports[@]}"; do echo "      - 127.0.0.1:$p"; done)
YAML
"$BIN" gateway --config "$work/gateway.yaml" >"$work/gateway.out" 2>"$work/gateway.err" &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' "$work/gateway.out" 2>/dev/null && break; sleep 0.05; done
read -r _ client admin < <(grep -m1 '^listening' "$work/gateway.out")
echo "$BIN engine --gpu A100 --model llama2-7b --listen 127.0.0.1:${ports[0]} --seed 0" \
  >"$work/restart.cmd"
echo "${pids[0]}" >"$work/engine0.pid"

echo "command: bash bench/e2e/faults.sh   machine: $(nproc) vCPU, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "load: Poisson ${FAULTS_RATE:-20} req/s of 16-token chat requests, ${FAULTS_DURATION:-12} s per scenario; replica 0 of 3 broken from t=2 s to t=6 s"
python3 bench/e2e/faults.py "${client##*:}" "${admin##*:}" "$(IFS=,; echo "${ports[*]}")" \
  "$work/restart.cmd" "$work/engine0.pid"
# The restarted engine is not a child of this shell: stop it too.
kill "$(cat "$work/engine0.pid")" 2>/dev/null || true
