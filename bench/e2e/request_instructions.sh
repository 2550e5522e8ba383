#!/usr/bin/env bash
# Instructions and cache misses per proxied request, counted instead of timed: one Switchyard
# worker and one nginx worker in front of the same backend, each run under Valgrind's callgrind
# with its cache model, counting only while wrk runs (after a warm-up). Counts do not depend on
# what else the machine runs, so they compare builds and proxies where timings on a shared VM
# cannot (docs/benchmarks.md, "Coroutine frames under a kilobyte").
#
# The shape is proxy_overhead.sh's small one: a backend nginx returning a 191-byte chat
# completion, wrk POSTing an 82-byte chat body. Under callgrind a proxy runs about 50 times
# slower, so each run serves a few thousand requests; per-request figures include the event
# loop's work for that batch size, so compare runs at the same concurrency.
#
# Environment: SWITCHYARD (binary, default build/release/switchyard), COUNT_CONCURRENCIES
# (default "32 256"), COUNT_SECONDS (counted seconds per run, default 5), COUNT_TARGETS (default
# "switchyard nginx"; other names are taken as Switchyard binaries to count, e.g. an older build).
# The last-level cache is modelled as 1 MiB (COUNT_LL, bytes): one core's L2 on the reference VM.
# Only 127.0.0.1 is used; every process started here is stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."

SWITCHYARD="${SWITCHYARD:-build/release/switchyard}"
read -r -a CONCURRENCIES <<<"${COUNT_CONCURRENCIES:-32 256}"
read -r -a TARGETS <<<"${COUNT_TARGETS:-switchyard nginx}"
SECONDS_COUNTED="${COUNT_SECONDS:-5}"
LL="${COUNT_LL:-1048576}"

die() { echo "request_instructions: $*" >&2; exit 1; }
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
  echo "installing valgrind (Debian package)"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq valgrind >/dev/null
fi
for tool in valgrind callgrind_control nginx wrk curl taskset python3; do
  command -v "$tool" >/dev/null || die "$tool is missing (make deps)"
done
[ -x "$SWITCHYARD" ] || die "no binary at $SWITCHYARD (make build)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-count.XXXXXX")"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
BACKEND_PORT=$(free_port)
readonly BACKEND_BODY='{"id":"cmpl-1","object":"chat.completion","model":"llama2-7b","choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":13,"completion_tokens":1,"total_tokens":14}}'
readonly REQUEST_BODY='{"model":"llama2-7b","messages":[{"role":"user","content":"Say this is a test!"}]}'

nginx_conf() {  # name, server block
  mkdir -p "$WORK/$1"
  cat <<EOF
worker_processes 1; daemon off; master_process off;
pid $WORK/$1/nginx.pid; error_log $WORK/$1/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/$1/cb; proxy_temp_path $WORK/$1/p; fastcgi_temp_path $WORK/$1/f;
  uwsgi_temp_path $WORK/$1/u; scgi_temp_path $WORK/$1/s;
  keepalive_requests 100000000; keepalive_timeout 75s;
  $2
}
EOF
}
nginx_conf backend "server { listen 127.0.0.1:$BACKEND_PORT reuseport;
  location / { default_type application/json; return 200 '$BACKEND_BODY'; } }" \
  >"$WORK/backend.conf"
taskset -c 0 nginx -c "$WORK/backend.conf" -p "$WORK/backend" >/dev/null 2>&1 &
PIDS+=($!)

# wrk's script: the same POST as proxy_overhead.sh's.
printf 'wrk.method = "POST"\nwrk.path = "/v1/chat/completions"\n%s\nwrk.body = %s\n' \
  'wrk.headers["Content-Type"] = "application/json"' "'$REQUEST_BODY'" >"$WORK/chat.lua"

# Counts one target at one concurrency; prints "target conns requests Ir D1mr LLm".
count() {
  local target=$1 conns=$2 port cmd
  port=$(free_port)
  if [ "$target" = nginx ]; then
    nginx_conf "proxy-$port" "upstream backend { server 127.0.0.1:$BACKEND_PORT; keepalive 1024;
      keepalive_requests 100000000; }
      server { listen 127.0.0.1:$port reuseport; location / { proxy_pass http://backend;
      proxy_http_version 1.1; proxy_set_header Connection \"\"; } }" >"$WORK/proxy-$port.conf"
    cmd=(nginx -c "$WORK/proxy-$port.conf" -p "$WORK/proxy-$port")
  else
    local binary=$SWITCHYARD
    [ "$target" = switchyard ] || binary=$target
    cat >"$WORK/gateway-$port.yaml" <<EOF
listen: 127.0.0.1:$port
admin_listen: 127.0.0.1:0
workers: 1
routing: { default_strategy: least-request }
models:
  - name: llama2-7b
    replicas:
      - address: 127.0.0.1:$BACKEND_PORT
        labels: { gpu: A100 }
EOF
    cmd=("$binary" gateway --config "$WORK/gateway-$port.yaml")
  fi
  taskset -c 1 valgrind --tool=callgrind --instr-atstart=no --cache-sim=yes \
    --LL="$LL",16,64 --callgrind-out-file="$WORK/count-$port.out" "${cmd[@]}" \
    >"$WORK/count-$port.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  local ready=0
  for _ in $(seq 120); do
    if curl -s -o /dev/null --max-time 2 -H 'Content-Type: application/json' \
        -d "$REQUEST_BODY" "http://127.0.0.1:$port/v1/chat/completions"; then
      ready=1
      break
    fi
    sleep 0.5
  done
  [ "$ready" = 1 ] || die "$target did not answer (log: $(tail -3 "$WORK/count-$port.log"))"
  taskset -c 0 wrk -t1 -c"$conns" -d2s -s "$WORK/chat.lua" "http://127.0.0.1:$port" >/dev/null
  callgrind_control -i on "$pid" >/dev/null 2>&1
  local out
  out=$(taskset -c 0 wrk -t1 -c"$conns" -d"${SECONDS_COUNTED}s" -s "$WORK/chat.lua" \
    "http://127.0.0.1:$port")
  callgrind_control -i off "$pid" >/dev/null 2>&1
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local requests
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  python3 - "$target" "$conns" "$requests" "$WORK/count-$port.out" <<'EOF'
import sys
target, conns, requests, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
events, totals = [], []
for line in open(path):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith("totals:"):
        totals = [int(x) for x in line.split()[1:]]
d = dict(zip(events, totals))
n = max(1, requests)
print(target, conns, requests, round(d.get("Ir", 0) / n), round(d.get("D1mr", 0) / n, 1),
      round((d.get("DLmr", 0) + d.get("DLmw", 0)) / n, 1))
EOF
}

echo "per proxied request, counted by callgrind (last level modelled as $LL bytes)"
printf '%-12s %6s %9s %13s %15s %17s\n' target conns requests instructions "L1 read misses" \
  "last-level misses"
results="$WORK/results"
for conns in "${CONCURRENCIES[@]}"; do
  for target in "${TARGETS[@]}"; do
    count "$target" "$conns" | tee -a "$results" |
      awk '{printf "%-12s %6s %9s %13s %15s %17s\n", $1, $2, $3, $4, $5, $6}'
  done
done
if grep -q '^switchyard ' "$results" && grep -q '^nginx ' "$results"; then
  awk '$1 == "switchyard" {ir[$2] = $4; d1[$2] = $5}
       $1 == "nginx" {nir[$2] = $4; nd1[$2] = $5}
       END {for (c in ir) if (c in nir)
         printf "switchyard/nginx at %s connections: instructions %.2fx, L1 read misses %.2fx\n",
                c, ir[c] / nir[c], d1[c] / nd1[c]}' "$results"
fi
