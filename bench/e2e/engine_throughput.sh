#!/usr/bin/env bash
# Engine emulator throughput: for each GPU profile, one emulated llama2-7b replica
# (`switchyard engine`, pinned to CPU 1) under closed-loop load from `switchyard bench` (pinned to
# CPU 0) at concurrency 1, 16 and 64, next to what the roofline model predicts for the same load
# (`switchyard engine --profile-table`, a virtual-clock run of the same model).
# Then the capacity check: one engine process (one core) serving a B200-profile replica with a
# large batch limit at rising concurrency, measured against the prediction: the emulator keeps
# its intended timing while measured tokens/s stays within 5% of the model's.
#
# Environment: SWITCHYARD (binary, default build/release/switchyard), MAX_TOKENS (default 128),
#              REQUESTS_PER_CLIENT (default 4), GPUS (default "A10 L20 V100 A100 H100 B200"),
#              CAPACITY_LEVELS (default "64 128 256 512 1024"), SKIP_CAPACITY=1 to skip part 2.
# Only 127.0.0.1 is used; every process started here is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/../.."
readonly SWITCHYARD="${SWITCHYARD:-build/release/switchyard}"
readonly MAX_TOKENS="${MAX_TOKENS:-128}"
readonly PER_CLIENT="${REQUESTS_PER_CLIENT:-4}"
read -r -a GPU_LIST <<<"${GPUS:-A10 L20 V100 A100 H100 B200}"
read -r -a CAPACITY <<<"${CAPACITY_LEVELS:-64 128 256 512 1024}"
readonly PROMPT_TOKENS=30  # the load generator's 16-word prompts estimate to ~30 tokens

die() { echo "engine_throughput: $*" >&2; exit 1; }
[ -x "$SWITCHYARD" ] || die "$SWITCHYARD not built (run make build)"
command -v taskset >/dev/null || die "taskset not found"

workdir=$(mktemp -d)
engine_pid=""
cleanup() {
  if [ -n "$engine_pid" ]; then kill "$engine_pid" 2>/dev/null || true; wait "$engine_pid" 2>/dev/null || true; fi
  rm -rf "$workdir"
}
trap cleanup EXIT

# start_engine ARGS...: starts an engine on CPU 1 and sets $port.
start_engine() {
  taskset -c 1 "$SWITCHYARD" engine --listen 127.0.0.1:0 "$@" >"$workdir/engine.out" 2>"$workdir/engine.err" &
  engine_pid=$!
  for _ in $(seq 100); do
    if grep -q '^listening ' "$workdir/engine.out"; then break; fi
    sleep 0.05
  done
  port=$(awk '/^listening /{split($2, a, ":"); print a[2]}' "$workdir/engine.out")
  [ -n "$port" ] || die "engine did not start: $(cat "$workdir/engine.err")"
}
stop_engine() { kill "$engine_pid"; wait "$engine_pid" || true; engine_pid=""; }

# measure CONCURRENCY: prints "tokens_per_s tpot_ms" measured over HTTP.
measure() {
  local c=$1
  taskset -c 0 "$SWITCHYARD" bench --port "$port" --concurrency "$c" \
    --requests $((c * PER_CLIENT)) --max-tokens "$MAX_TOKENS" >"$workdir/bench.out" \
    || die "bench failed at concurrency $c: $(tail -3 "$workdir/bench.out")"
  awk '/^result /{for (i = 2; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
                  printf "%s %s\n", v["tokens_per_s"], v["tpot_mean_ms"]}' "$workdir/bench.out"
}

# predicted GPU CONCURRENCY... [--profiles FILE]: one line of predicted tokens/s per concurrency.
predicted_row() {
  local gpu=$1 levels=$2; shift 2
  "$SWITCHYARD" engine --profile-table --table-prompt-tokens "$PROMPT_TOKENS" \
    --table-max-tokens "$MAX_TOKENS" --table-concurrency "$levels" "$@" |
    awk -F'|' -v g="$gpu" '$2 ~ "^ *"g"(-80GB)? *$" {for (i = 5; i < NF; i++) printf "%s ", $i; print ""}'
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "llama2-7b, prompt ~${PROMPT_TOKENS} tokens, ${MAX_TOKENS} output tokens, ${PER_CLIENT} requests per client"
echo
echo "| GPU | c=1 predicted | c=1 measured | c=16 predicted | c=16 measured | c=64 predicted | c=64 measured |"
echo "|---|---|---|---|---|---|---|"
for gpu in "${GPU_LIST[@]}"; do
  read -r -a predicted <<<"$(predicted_row "$gpu" 1,16,64)"
  start_engine --gpu "$gpu"
  row="| $gpu |"
  i=0
  for c in 1 16 64; do
    read -r tps _ <<<"$(measure "$c")"
    row+=" ${predicted[$i]} | $(printf '%.0f' "$tps") |"
    i=$((i + 1))
  done
  stop_engine
  echo "$row"
done

[ "${SKIP_CAPACITY:-0}" = 1 ] && exit 0
echo
echo "Capacity: one engine process on CPU 1, B200 profile, max_num_seqs 4096; load generator on CPU 0"
cat >"$workdir/profiles.yaml" <<YAML
engine: {max_num_seqs: 4096, max_num_batched_tokens: 65536}
gpus: [{name: B200, memory_gb: 180, bandwidth_gbps: 8000, tflops: 2250}]
models: [{name: llama2-7b, params: 6.74e9, layers: 32, hidden_size: 4096, heads: 32, kv_heads: 32}]
YAML
levels=$(IFS=,; echo "${CAPACITY[*]}")
read -r -a predicted <<<"$(predicted_row B200 "$levels" --profiles "$workdir/profiles.yaml")"
start_engine --gpu B200 --profiles "$workdir/profiles.yaml"
echo
echo "| concurrency | predicted tok/s | measured tok/s | measured/predicted | engine CPU % |"
echo "|---|---|---|---|---|"
i=0
for c in "${CAPACITY[@]}"; do
  cpu_before=$(awk '{print $14 + $15}' "/proc/$engine_pid/stat")
  t0=$(date +%s.%N)
  read -r tps _ <<<"$(measure "$c")"
  t1=$(date +%s.%N)
  cpu_after=$(awk '{print $14 + $15}' "/proc/$engine_pid/stat")
  cpu=$(awk -v a="$cpu_before" -v b="$cpu_after" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.0f", (b - a) / hz / (t1 - t0) * 100}')
  ratio=$(awk -v m="$tps" -v p="${predicted[$i]}" 'BEGIN {printf "%.3f", m / p}')
  echo "| $c | ${predicted[$i]} | $(printf '%.0f' "$tps") | $ratio | $cpu |"
  i=$((i + 1))
done
stop_engine
