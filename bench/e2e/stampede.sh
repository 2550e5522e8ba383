#!/usr/bin/env bash
# The new-replica stampede (`make bench-stampede`): three gateways sharing state in Redis route an
# established fleet of four emulated replicas under steady open-loop load; one replica is added
# (the shared config file gains a line, every gateway gets SIGHUP). For `least-request` and for
# `least-request-top-k` (with its slow start) the table shows the new replica's share of the
# requests sent in the first 2 / 5 / 10 s against its fair share (1/5), and its peak in-flight
# count on the engine (vllm:num_requests_running + num_requests_waiting, sampled every 100 ms)
# in the first 5 s against the established replicas' median over the same samples.
# Goal: with top-K + slow start the peak stays within 1.5x the fleet median.
#
# Second part: the latency Redis adds per request. One gateway in front of a fixed-answer nginx
# backend (as in proxy_overhead.sh), with `limits.max_inflight_per_replica` set so that admission
# goes through shared state: `backend: memory` vs `backend: redis` with leased in-flight slots
# (the default) vs `backend: redis` admitting request by request (`inflight_slots_ahead: 0`),
# wrk at concurrency 1 and 32, interleaved runs, medians. Goal at 32 connections (leased slots):
# at least 0.8x the memory backend's RPS and at most +0.5 ms p99; PASS/MISS is printed.
#
# Each strategy starts from nothing (new engines, Redis, gateways) on the same seeded arrivals.
# Loopback only; every process started here is stopped on exit.
#
# Environment:
#   STAMPEDE_GPU=A10           GPU profile of every replica (A10: its capacity keeps the load
#                              generator, 3 gateways and 5 engines within a 2-core machine)
#   STAMPEDE_LOAD=0.65         offered load as a fraction of the established fleet's capacity
#   STAMPEDE_WARMUP=10         seconds of load before the add
#   STAMPEDE_WINDOW=15         seconds measured after the add
#   STAMPEDE_STRATEGIES=least-request,least-request-top-k   (none: only the Redis latency part)
#   STAMPEDE_SEED=7  STAMPEDE_SAMPLE_MS=100
#   STAMPEDE_SYNC_MS=100       shared_state.sync_interval_ms: how stale each gateway's view of
#                              the others' in-flight counts may be
#   STAMPEDE_TOPK_YAML         extra YAML under `routing:` for the top-K run, e.g.
#                              "slow_start: { ramp_ms: 10000 }" (default: the product defaults)
#   STAMPEDE_REDIS=0           skip the added-latency part
#   STAMPEDE_LATENCY_RUNS=3  STAMPEDE_LATENCY_DURATION=5s  STAMPEDE_LATENCY_CONCURRENCIES="1 32"
#   STAMPEDE_OUT=build/bench-stampede   SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${STAMPEDE_OUT:-$root/build/bench-stampede}"
gpu="${STAMPEDE_GPU:-A10}"
load="${STAMPEDE_LOAD:-0.65}"
warmup="${STAMPEDE_WARMUP:-10}"
window="${STAMPEDE_WINDOW:-15}"
strategies="${STAMPEDE_STRATEGIES:-least-request,least-request-top-k}"
seed="${STAMPEDE_SEED:-7}"
sample_ms="${STAMPEDE_SAMPLE_MS:-100}"
sync_ms="${STAMPEDE_SYNC_MS:-100}"
[[ "$sync_ms" =~ ^[1-9][0-9]*$ ]] || { echo "stampede: STAMPEDE_SYNC_MS must be a positive integer" >&2; exit 1; }
liveness_ms=$(( sync_ms * 10 > 1000 ? sync_ms * 10 : 1000 ))
topk_yaml="${STAMPEDE_TOPK_YAML:-}"
lat_runs="${STAMPEDE_LATENCY_RUNS:-3}"
lat_duration="${STAMPEDE_LATENCY_DURATION:-5s}"
read -r -a lat_conc <<<"${STAMPEDE_LATENCY_CONCURRENCIES:-1 32}"
# Request shapes (prompt words, output tokens), uniform: long enough outputs for queues to show.
prompt_words="20-120"
max_tokens="64-256"
established=4

die() { echo "stampede: $*" >&2; exit 1; }
[ -x "$bin" ] || die "$bin not found; run make build"
for tool in python3 redis-server curl; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh installs it)"
done
mkdir -p "$out"
log="$out/stampede.txt"
csv="$out/stampede.csv"

work="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-stampede.XXXXXX")"
pids=()
stop_all() {  # stops every process in pids, TERM then KILL after 5 s
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  stop_all
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start NAME ARGS...: runs ARGS in the background, waits for its `listening` line (10 s).
start() {
  local name=$1; shift
  : >"$work/$name.out"
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  for _ in $(seq 200); do
    grep -q '^listening' "$work/$name.out" && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.05
  done
  tail -20 "$work/$name.err" >&2 || true
  die "$name did not start"
}

start_redis() {  # prints the port
  local port
  port="$(free_port)"
  redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
    --dir "$work" >"$work/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    if python3 - "$port" <<'PY' 2>/dev/null; then echo "$port"; return 0; fi
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.5)
s.sendall(b"PING\r\n"); assert s.recv(16).startswith(b"+PONG")
PY
    sleep 0.05
  done
  die "redis-server did not start: $(tail -5 "$work/redis.log")"
}

cpu_model="$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
{
  echo "command: STAMPEDE_GPU=$gpu STAMPEDE_LOAD=$load STAMPEDE_WARMUP=$warmup" \
       "STAMPEDE_WINDOW=$window STAMPEDE_SEED=$seed STAMPEDE_SYNC_MS=$sync_ms bash bench/e2e/stampede.sh"
  echo "machine: nproc=$(nproc), CPU \"$cpu_model\", load average $(cut -d' ' -f1-3 /proc/loadavg)" \
       "at start, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "switchyard: $("$bin" --version 2>/dev/null || echo unknown) ($bin)"
} | tee "$log"

# ---------------------------------------------------------------------------------------------
# Capacity of one replica from the emulator's own performance model (the engines run that model):
# output tokens/s at the largest batch, for the mean request shape.
mean_prompt_tokens=$(( (20 + 120) / 2 * 17 / 10 ))
mean_output=$(( (64 + 256) / 2 ))
table="$("$bin" engine --gpu "$gpu" --model llama2-7b --profile-table \
  --table-prompt-tokens "$mean_prompt_tokens" --table-max-tokens "$mean_output" \
  --table-concurrency 256)"
tokps="$(awk -F'|' -v g="$gpu" '$2 ~ ("^ *" g) { gsub(/ /, "", $(NF-1)); print $(NF-1); exit }' <<<"$table")"
[ -n "$tokps" ] || die "no capacity for GPU $gpu in: $table"
rate="$(awk -v t="$tokps" -v o="$mean_output" -v n="$established" -v l="$load" \
  'BEGIN { printf "%.1f", t / o * n * l }')"
{
  echo "fleet: $established established $gpu replicas (llama2-7b) + 1 added; 3 gateways, shared state in Redis (sync every $sync_ms ms)"
  echo "capacity: one $gpu replica ≈ $tokps output tokens/s at batch 256 (prompt ≈ $mean_prompt_tokens," \
       "output $mean_output tokens: emulator profile), so $(awk -v t="$tokps" -v o="$mean_output" \
       'BEGIN { printf "%.1f", t / o }') req/s"
  echo "load: open-loop Poisson $rate req/s (${load} of the established fleet), round-robin over" \
       "the gateways, prompts $prompt_words words, max_tokens $max_tokens, not streamed, seed $seed;" \
       "add at t=${warmup}s, measured ${window}s after; engine /metrics sampled every ${sample_ms} ms"
} | tee -a "$log"

# ---------------------------------------------------------------------------------------------
# One strategy: a fresh fleet, Redis and gateways; the Python driver does load, add and sampling.
run_strategy() {
  local strategy=$1 label=$1 redis_port engine_ports=() addrs=() gw_clients=() gw_admins=() gw_pids=()
  redis_port="$(start_redis)"
  : >"$work/replicas.yaml"
  for i in $(seq 0 "$established"); do echo "- { gpu: $gpu, seed: $((i + 1)) }" >>"$work/replicas.yaml"; done
  start engines "$bin" engine --model llama2-7b --replicas "$work/replicas.yaml"
  read -r -a addrs <<<"$(sed -n 's/^listening //p' "$work/engines.out" | head -1)"
  [ "${#addrs[@]}" -eq $((established + 1)) ] || die "engines printed '$(head -1 "$work/engines.out")'"
  local routing="default_strategy: $strategy"
  if [ "$strategy" = least-request-top-k ] && [ -n "$topk_yaml" ]; then
    routing="$routing
  $topk_yaml"
  fi
  write_config() {  # write_config FILE N: the gateway config with the first N replicas
    {
      cat <<YAML
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
workers: 1
reload_poll_interval_ms: 200
routing:
  $routing
telemetry: { scrape_interval_ms: 100 }
shared_state: { backend: redis, address: 127.0.0.1:$redis_port, sync_interval_ms: $sync_ms,
                liveness_ttl_ms: $liveness_ms }
logging: { level: info, access_log: false }
models:
  - name: llama2-7b
    replicas:
YAML
      for a in "${addrs[@]:0:$2}"; do echo "      - { address: $a, labels: { gpu: $gpu } }"; done
    } >"$1"
  }
  write_config "$work/gateway.yaml" "$established"
  write_config "$work/gateway-after.yaml" $((established + 1))
  for g in 0 1 2; do
    start "gateway$g" "$bin" gateway --config "$work/gateway.yaml"
    gw_pids+=("${pids[-1]}")
    local line
    read -r _ c a < <(grep -m1 '^listening' "$work/gateway$g.out")
    gw_clients+=("$c"); gw_admins+=("$a")
  done
  # Every gateway must answer (and see the others in Redis) before the load starts.
  for c in "${gw_clients[@]}"; do
    curl -sf --max-time 10 -H 'Content-Type: application/json' \
      -d '{"model":"llama2-7b","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}' \
      "http://$c/v1/chat/completions" >/dev/null || die "gateway $c does not answer"
  done
  sleep 1
  echo "running $label: engines ${addrs[*]} (the last one is added), gateways ${gw_clients[*]}" >&2
  python3 "$root/bench/e2e/stampede.py" --label "$label" \
    --gateways "$(IFS=,; echo "${gw_clients[*]}")" --admins "$(IFS=,; echo "${gw_admins[*]}")" \
    --gateway-pids "$(IFS=,; echo "${gw_pids[*]}")" --engines "$(IFS=,; echo "${addrs[*]}")" \
    --config "$work/gateway.yaml" --config-after "$work/gateway-after.yaml" \
    --rate "$rate" --warmup "$warmup" --window "$window" --sample-ms "$sample_ms" \
    --prompt-words "$prompt_words" --max-tokens "$max_tokens" --seed "$seed" --out "$out" \
    >"$work/$label.json" &
  pids+=($!)
  wait "${pids[-1]}" || die "stampede.py failed for $label"
  cat "$work/$label.json" >>"$out/summaries.jsonl"
  # Anything the gateways logged at warn or above is worth seeing.
  for g in 0 1 2; do
    grep -E '\] \[(warning|error|critical)\]' "$work/gateway$g.err" | grep -v 'change only on restart' \
      | sed "s/^/  gateway$g ($label): /" | head -5 >&2 || true
  done
  stop_all
}

: >"$out/summaries.jsonl"
strategy_list=()
[ "$strategies" = none ] || IFS=, read -r -a strategy_list <<<"$strategies"
for s in "${strategy_list[@]}"; do run_strategy "$s"; done

if [ ${#strategy_list[@]} -gt 0 ]; then  # (not indented: heredocs inside)
python3 - "$out/summaries.jsonl" "$csv" "$topk_yaml" "$window" <<'PY' | tee -a "$log"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def f(v, d=1):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{d}f}"
def pct(v):
    return "n/a" if v is None or math.isnan(v) else f"{100 * v:.0f} %"
print()
print("New replica after the add (fair share 1/5 = 20 %; in flight = engine running + waiting)")
print("| strategy | share 0-2 s | share 0-5 s | share 0-10 s | new peak 0-5 s | fleet median 0-5 s"
      " | peak / median | goal <= 1.5 | established max peak 0-5 s"
      f" | new peak / median 0-{sys.argv[4]} s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    name = r["label"] + (" (slow start)" if r["label"] == "least-request-top-k" else "")
    print(f"| {name} | {pct(r['share_2s'])} | {pct(r['share_5s'])} | {pct(r['share_10s'])} | "
          f"{f(r['new_peak_5s'], 0)} | {f(r['fleet_median_5s'])} | {f(r['ratio_5s'], 2)} | "
          f"{'met' if r['goal_met'] else 'missed'} | {f(r['established_peak_max_5s'], 0)} | "
          f"{f(r['new_peak_window'], 0)} / {f(r['fleet_median_window'])} |")
print()
print("Per second after the add: the new replica's share of the requests sent in that second")
for r in rows:
    print(f"  {r['label']:<20} " + " ".join("  -" if v is None else f"{100 * v:3.0f}"
                                            for v in r["share_per_second"]))
print()
for r in rows:
    print(f"{r['label']}: {r['requests']} requests, {r['errors']} errors; fleet median in flight "
          f"before the add {f(r['fleet_median_before'])}; the new replica reached the median "
          f"{'after ' + str(r['catch_up_s']) + ' s' if r.get('catch_up_s') is not None else 'not within the window'}; E2E p50 {f(r['e2e_p50_s'], 2)} s, "
          f"p99 {f(r['e2e_p99_s'], 2)} s; requests sent in 0-5 s: E2E p50 on the new replica "
          f"{f(r['new_e2e_p50_5s_s'], 2)} s vs {f(r['established_e2e_p50_5s_s'], 2)} s on the "
          f"others; gateways listed the new replica after {r['gateway_listed_ms']} ms, first "
          f"routed to it after {r['gateway_first_routed_ms']} ms")
if sys.argv[3]:
    print(f"top-K run with routing: {sys.argv[3]}")
keys = ["label", "rate", "share_2s", "share_5s", "share_10s", "new_peak_5s", "fleet_median_5s",
        "ratio_5s", "goal_met", "established_peak_max_5s", "new_peak_window",
        "fleet_median_window", "ratio_window", "fleet_median_before", "catch_up_s", "requests", "errors",
        "e2e_p50_s", "e2e_p99_s", "new_e2e_p50_5s_s", "established_e2e_p50_5s_s"]
with open(sys.argv[2], "w") as out:
    out.write(",".join(keys) + "\n")
    for r in rows:
        out.write(",".join(str(r.get(k, "")) for k in keys) + "\n")
PY
echo "csv: $csv (time series: $out/<strategy>-samples.csv, requests: $out/<strategy>-requests.csv)" \
  | tee -a "$log"

if command -v gnuplot >/dev/null; then
  png="$out/stampede.png"
  plots=""
  for s in "${strategy_list[@]}"; do
    f="$out/$s-samples.csv"
    [ -f "$f" ] || continue
    plots+="\"$f\" using 1:6 with lines lw 2 title \"$s: new replica\", "
    plots+="\"$f\" using 1:7 with lines dt 2 title \"$s: established median\", "
  done
  gnuplot <<GNUPLOT
set terminal pngcairo size 1100,500 noenhanced
set output "$png"
set datafile separator ","
set key autotitle columnhead top right
set title "New-replica stampede: in flight on the engine (running + waiting), replica added at t = 0"
set xlabel "seconds since the add"
set ylabel "requests in flight"
set xrange [-3:$window]
set yrange [0:*]
set grid
plot ${plots%, }
GNUPLOT
  echo "plot: $png" | tee -a "$log"
fi
fi

# ---------------------------------------------------------------------------------------------
# Added latency per request: shared state in Redis vs in memory, one gateway, fixed backend.
if [ "${STAMPEDE_REDIS:-1}" = 0 ]; then exit 0; fi
for tool in nginx wrk; do command -v "$tool" >/dev/null || die "$tool not found"; done
[[ "$lat_duration" =~ ^[0-9]+s$ ]] || die "STAMPEDE_LATENCY_DURATION must look like 5s"
pin_client=(); pin_proxy=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  pin_client=(taskset -c 0); pin_proxy=(taskset -c 1)
fi
backend_port="$(free_port)"
mkdir -p "$work/nginx"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/client_body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:$backend_port;
    location / {
      default_type application/json;
      return 200 '{"id":"cmpl-1","object":"chat.completion","model":"llama2-7b","choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":13,"completion_tokens":1,"total_tokens":14}}';
    }
  }
}
EOF
"${pin_client[@]}" nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx.conf" \
  >"$work/nginx.log" 2>&1 &
pids+=($!)
redis_port="$(start_redis)"
# Three gateways: shared state in memory (the baseline), in Redis with leased in-flight slots
# (the default) and in Redis admitting request by request (inflight_slots_ahead: 0).
lat_backends=(memory redis redis-each)
declare -A url
for backend in "${lat_backends[@]}"; do
  case "$backend" in
    memory) state="shared_state: { backend: memory }" ;;
    redis) state="shared_state: { backend: redis, address: 127.0.0.1:$redis_port, sync_interval_ms: 100, liveness_ttl_ms: 1000 }" ;;
    redis-each) state="shared_state: { backend: redis, address: 127.0.0.1:$redis_port, sync_interval_ms: 100, liveness_ttl_ms: 1000, inflight_slots_ahead: 0 }" ;;
  esac
  cat >"$work/lat-$backend.yaml" <<YAML
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
workers: 1
routing: { default_strategy: least-request }
$state
logging: { level: warn, access_log: false }
models:
  - name: llama2-7b
    limits: { max_inflight_per_replica: 100000 }
    replicas:
      - 127.0.0.1:$backend_port
YAML
  start "lat-$backend" "${pin_proxy[@]}" "$bin" gateway --config "$work/lat-$backend.yaml"
  read -r _ c _ < <(grep -m1 '^listening' "$work/lat-$backend.out")
  url[$backend]="http://$c"
done
cat >"$work/chat.lua" <<'EOF'
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"llama2-7b","messages":[{"role":"user","content":"Say this is a test!"}]}'
EOF
for backend in "${lat_backends[@]}"; do
  for _ in $(seq 50); do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -H 'Content-Type: application/json' \
      -d '{"model":"llama2-7b","messages":[]}' "${url[$backend]}/v1/chat/completions" || true)"
    [ "$code" = 200 ] && break
    sleep 0.1
  done
  [ "$code" = 200 ] || die "the $backend gateway answers $code"
done
to_us() {
  awk -v v="$1" 'BEGIN { n = v + 0; m = 1
    if (v ~ /us$/) m = 1; else if (v ~ /ms$/) m = 1000; else if (v ~ /s$/) m = 1000000
    printf "%.1f", n * m }'
}
results="$work/latency.tsv"
: >"$results"
{
  echo
  echo "Added latency of shared state: one gateway (1 worker$([ ${#pin_proxy[@]} -gt 0 ] && echo ', CPU1'))" \
       "in front of a fixed-answer nginx, limits.max_inflight_per_replica set (admission through" \
       "shared state), wrk -t1 -d$lat_duration$([ ${#pin_client[@]} -gt 0 ] && echo ' on CPU0 with nginx'), $lat_runs interleaved runs"
} | tee -a "$log"
for c in "${lat_conc[@]}"; do
  for backend in "${lat_backends[@]}"; do
    "${pin_client[@]}" wrk -t1 -c"$c" -d1s -s "$work/chat.lua" "${url[$backend]}/v1/chat/completions" >/dev/null
  done
  for r in $(seq "$lat_runs"); do
    for backend in "${lat_backends[@]}"; do
      timeout 60 "${pin_client[@]}" wrk -t1 -c"$c" -d"$lat_duration" --latency -s "$work/chat.lua" \
        "${url[$backend]}/v1/chat/completions" >"$work/wrk.out" 2>&1 || die "wrk failed: $(cat "$work/wrk.out")"
      rps="$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.out")"
      p50="$(to_us "$(awk '$1 == "50%" {print $2}' "$work/wrk.out")")"
      p99="$(to_us "$(awk '$1 == "99%" {print $2}' "$work/wrk.out")")"
      errors="$(awk '/Non-2xx or 3xx responses:/ {e += $NF} /Socket errors:/ {for (i = 3; i <= NF; i += 2) e += $(i + 1)} END {print e + 0}' "$work/wrk.out")"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$backend" "$r" "$rps" "$p50" "$p99" "$errors" >>"$results"
      printf '  c=%-3s run %s %-10s %8.0f req/s  p50 %7.0f us  p99 %7.0f us  errors %s\n' \
        "$c" "$r" "$backend" "$rps" "$p50" "$p99" "$errors" | tee -a "$log"
    done
  done
done
# The Redis gateways must really have used Redis: their shared-state metrics count calls (the
# request path's and the sync's) and requests.
calls_line=""
for backend in redis redis-each; do
  read -r _ _ admin_addr < <(grep -m1 '^listening' "$work/lat-$backend.out")
  curl -s --max-time 5 "http://$admin_addr/metrics" >"$work/lat-$backend.metrics" || true
  calls_line+="$(awk -v b="$backend" '
    /^switchyard_shared_state_calls_total\{role="request"/ {r += $NF}
    /^switchyard_shared_state_calls_total/ {n += $NF}
    /^switchyard_shared_state_degraded_total/ {d += $NF}
    END {printf "%s: %d calls (%d on the request path), %d degraded; ", b, n, r, d}' \
    "$work/lat-$backend.metrics")"
done
awk -F'\t' -v runs="$lat_runs" -v calls="$calls_line" '
  function median(k,    n, i, j, t, a) {
    n = cnt[k]; for (i = 1; i <= n; i++) a[i] = v[k, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function add(key, x) { v[key, ++cnt[key]] = x }
  { add($1 SUBSEP $2 SUBSEP "rps", $4); add($1 SUBSEP $2 SUBSEP "p50", $5)
    add($1 SUBSEP $2 SUBSEP "p99", $6); err[$1, $2] += $7; if (!seen[$1]++) order[++nc] = $1 }
  END {
    name[1] = "memory"; name[2] = "redis"; name[3] = "redis-each"
    printf "\n| conns | state | RPS | p50 (us) | p99 (us) | errors |\n|---|---|---|---|---|---|\n"
    for (k = 1; k <= nc; k++) { c = order[k]
      for (b = 1; b <= 3; b++) { s = name[b]
        printf "| %s | %s | %.0f | %.0f | %.0f | %d |\n", c, s, median(c SUBSEP s SUBSEP "rps"),
          median(c SUBSEP s SUBSEP "p50"), median(c SUBSEP s SUBSEP "p99"), err[c, s] } }
    printf "\nmedians of %d runs; added by Redis (redis: leased in-flight slots; redis-each: " \
           "admission request by request):\n", runs
    for (k = 1; k <= nc; k++) { c = order[k]
      m50 = median(c SUBSEP "memory" SUBSEP "p50"); m99 = median(c SUBSEP "memory" SUBSEP "p99")
      mr = median(c SUBSEP "memory" SUBSEP "rps")
      for (b = 2; b <= 3; b++) { s = name[b]
        r50 = median(c SUBSEP s SUBSEP "p50"); r99 = median(c SUBSEP s SUBSEP "p99")
        rr = median(c SUBSEP s SUBSEP "rps")
        verdict = ""
        # The goal at 32 connections: at least 0.8x the memory backend'"'"'s RPS, p99 at most +0.5 ms.
        if (c == 32 && s == "redis")
          verdict = (rr >= 0.8 * mr && r99 - m99 <= 500) ? "  PASS (>= x0.80 RPS, <= +500 us p99)" \
                                                          : "  MISS (goal >= x0.80 RPS, <= +500 us p99)"
        printf "  c=%s %-10s: p50 %+.0f us (x%.2f), p99 %+.0f us (x%.2f), RPS x%.2f%s\n", c, s,
          r50 - m50, (m50 > 0 ? r50 / m50 : 0), r99 - m99, (m99 > 0 ? r99 / m99 : 0),
          (mr > 0 ? rr / mr : 0), verdict } }
    printf "%s\n", calls
  }' "$results" | tee -a "$log"
cp "$results" "$out/redis-latency.tsv"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a "$log"
