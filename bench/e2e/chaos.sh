#!/usr/bin/env bash
# The chaos soak (`make bench-chaos`): three gateways sharing state in a real redis-server, in
# front of six emulated replicas of llama2-7b (three L20, three A100; one engine process each, so
# each can be crashed), with `limits: { max_inflight_per_replica: N }`, under steady open-loop
# load (Poisson, streamed and non-streamed chat requests, well below the fleet's capacity under
# the limit). After a warm-up, every CHAOS_EVENT_EVERY seconds one chaos event, cycling through:
#   engine-crash     SIGKILL one engine, restart it on the same port after CHAOS_DOWN_SECONDS
#   engine-hang      SIGSTOP one engine for CHAOS_HANG_SECONDS, then SIGCONT
#   replica-remove   remove one replica from every gateway's config file (and SIGHUP them)
#   redis-restart    SIGKILL redis-server, start it again (empty) on the same port
#   gateway-restart  SIGTERM gateway 1 or 2, wait for its exit, start it again on the same ports
#   replica-add      put the removed replica back (file edit + SIGHUP)
# Gateway 0 is never restarted: its RSS from the end of the warm-up to the end is the leak
# witness. The load generator (bench/e2e/chaos.py) behaves like a client behind an L4 load
# balancer: it sends each request to a gateway whose /readyz (or /healthz, on a binary without
# /readyz) answered 200 at its last poll, and reroutes a request refused or reset before it was
# fully sent. Goals: no client-visible failure of a request that had not started streaming; no
# engine sample above the limit; flat RSS; with a sanitizer build, no sanitizer report.
#
# Deterministic for a seed (arrivals, event order and targets); bounded in time and requests;
# loopback only; every process started here is stopped on exit, also on Ctrl-C or failure.
#
# Environment:
#   CHAOS_SECONDS=600        load duration (events run from the warm-up to 10 s before the end)
#   CHAOS_WARMUP=15          seconds of load before the first event (RSS "start" is taken here)
#   CHAOS_EVENT_EVERY=6      seconds between the starts of two events
#   CHAOS_SEED=1             arrivals, event targets
#   CHAOS_LIMIT=5            limits.max_inflight_per_replica
#   CHAOS_RATE=6             requests/s offered (all gateways together)
#   CHAOS_STREAM_FRACTION=0.5  CHAOS_MAX_TOKENS=16-192  CHAOS_PROMPT_WORDS=10-80
#   CHAOS_HANG_SECONDS=3     CHAOS_DOWN_SECONDS=2     CHAOS_WORKERS=1 (gateway workers)
#   CHAOS_STRATEGY=least-request   CHAOS_SAMPLE_MS=20   CHAOS_POLL_MS=200
#   CHAOS_EVENTS=engine-crash,engine-hang,replica-remove,redis-restart,gateway-restart,replica-add
#                            the cycle, in this order (e.g. CHAOS_EVENTS=redis-restart alone)
#   CHAOS_MAX_REQUESTS=20000 CHAOS_OUT=build/bench-chaos
#   SWITCHYARD=build/release/switchyard   another build, e.g. build/debug/switchyard (ASan+UBSan):
#                            every process's stderr is grepped for sanitizer reports either way
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
[[ "$bin" = /* ]] || bin="$root/$bin"
out="${CHAOS_OUT:-$root/build/bench-chaos}"
seconds="${CHAOS_SECONDS:-600}"
warmup="${CHAOS_WARMUP:-15}"
every="${CHAOS_EVENT_EVERY:-6}"
seed="${CHAOS_SEED:-1}"
limit="${CHAOS_LIMIT:-5}"
rate="${CHAOS_RATE:-6}"
stream_fraction="${CHAOS_STREAM_FRACTION:-0.5}"
max_tokens="${CHAOS_MAX_TOKENS:-16-192}"
prompt_words="${CHAOS_PROMPT_WORDS:-10-80}"
hang_s="${CHAOS_HANG_SECONDS:-3}"
down_s="${CHAOS_DOWN_SECONDS:-2}"
workers="${CHAOS_WORKERS:-1}"
strategy="${CHAOS_STRATEGY:-least-request}"
sample_ms="${CHAOS_SAMPLE_MS:-20}"
poll_ms="${CHAOS_POLL_MS:-200}"
max_requests="${CHAOS_MAX_REQUESTS:-20000}"
all_events=engine-crash,engine-hang,replica-remove,redis-restart,gateway-restart,replica-add
events_wanted="${CHAOS_EVENTS:-$all_events}"
tail_s=10           # no event starts in the last 10 s of load
gpus=(L20 L20 L20 A100 A100 A100)

die() { echo "chaos: $*" >&2; exit 1; }
for v in seconds warmup every seed limit hang_s down_s workers max_requests; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "CHAOS_${v^^} must be a whole number (got '${!v}')"
done
[ "$seconds" -gt $((warmup + tail_s)) ] || die "CHAOS_SECONDS must exceed CHAOS_WARMUP + $tail_s"
[ -x "$bin" ] || die "$bin not found; run make build"
cycle=()
IFS=, read -r -a wanted <<<"$events_wanted"
for e in "${wanted[@]}"; do
  case "$e" in
    engine-crash|engine-hang|replica-remove|redis-restart|gateway-restart|replica-add)
      cycle+=("${e//-/_}") ;;
    *) die "CHAOS_EVENTS: unknown event '$e'" ;;
  esac
done
[ ${#cycle[@]} -gt 0 ] || die "CHAOS_EVENTS is empty"
for tool in python3 redis-server redis-cli curl; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/install-deps.sh installs it)"
done
sanitized=0
grep -q -a -m1 '__asan_init' "$bin" && sanitized=1
mkdir -p "$out"
rm -rf "$out/logs" "$out/evidence"
rm -f "$out"/*.csv "$out"/*.png "$out"/report.md "$out"/sanitizer.txt "$out"/load.json \
  "$out"/unexpected.txt
: >"$out/unexpected.txt"
log="$out/chaos.txt"

work="$(mktemp -d "${TMPDIR:-/tmp}/switchyard-chaos.XXXXXX")"
mkdir -p "$work/logs" "$work/pids"
declare -A pid_of     # process name -> pid of the running one
declare -A starts     # process name -> how many times it was started (log file suffix)

# stop SIGNAL NAME...: sends SIGNAL to each named process (resumed first, in case it was stopped),
# waits up to 15 s for all of them, then KILLs and reaps what is left.
stop() {
  local sig=$1 name pid left; shift
  local -a mine=()
  for name in "$@"; do
    pid=${pid_of[$name]:-}
    [ -n "$pid" ] || continue
    mine+=("$pid")
    kill -CONT "$pid" 2>/dev/null || true
    kill -"$sig" "$pid" 2>/dev/null || true
  done
  for _ in $(seq 150); do
    left=0
    for pid in "${mine[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ $left = 0 ] && break
    sleep 0.1
  done
  local st
  for name in "$@"; do
    pid=${pid_of[$name]:-}
    [ -n "$pid" ] || continue
    kill -KILL "$pid" 2>/dev/null || true
    st=0; wait "$pid" 2>/dev/null || st=$?
    echo "$name $sig $st" >>"$work/exits.txt"  # how each process ended
    unset "pid_of[$name]"
  done
}
stop_all() {  # resumes everything, then: the load generator, the gateways (graceful), the rest
  local pid
  for pid in "${pid_of[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
  stop TERM load
  stop TERM gateway0 gateway1 gateway2
  stop TERM "${!pid_of[@]}"
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  stop_all
  if [ -d "$work/logs" ]; then
    mkdir -p "$out/logs" && cp "$work"/logs/* "$out/logs/" 2>/dev/null || true
  fi
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
now() { date +%s.%N; }
sleep_until() {  # epoch seconds
  local d
  d="$(awk -v t="$1" -v n="$(now)" 'BEGIN { d = t - n; printf "%.3f", (d > 0 ? d : 0) }')"
  sleep "$d"
}

# launch NAME ARGS...: runs ARGS in the background with its own log files; waits (20 s) for a
# `listening` line on stdout.
launch() {
  local name=$1 n; shift
  n=$(( ${starts[$name]:-0} + 1 )); starts[$name]=$n
  local o="$work/logs/$name.$n.out" e="$work/logs/$name.$n.err"
  : >"$o"
  "$@" >"$o" 2>"$e" &
  pid_of[$name]=$!
  echo "${pid_of[$name]}" >"$work/pids/$name.pid"
  for _ in $(seq 400); do
    grep -q '^listening' "$o" && return 0
    kill -0 "${pid_of[$name]}" 2>/dev/null || break
    sleep 0.05
  done
  tail -20 "$e" >&2 || true
  die "$name did not start ($*)"
}

redis_port="$(free_port)"
start_redis() {
  local n; n=$(( ${starts[redis]:-0} + 1 )); starts[redis]=$n
  redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$work" \
    >"$work/logs/redis.$n.log" 2>&1 &
  pid_of[redis]=$!
  for _ in $(seq 200); do
    [ "$(redis_ping)" = PONG ] && return 0
    sleep 0.05
  done
  die "redis-server did not start: $(tail -5 "$work/logs/redis.$n.log")"
}
redis_ping() { timeout 2 redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null || true; }

engine_ports=()
for i in 0 1 2 3 4 5; do engine_ports+=("$(free_port)"); done
start_engine() {
  launch "engine$1" "$bin" engine --gpu "${gpus[$1]}" --model llama2-7b \
    --listen "127.0.0.1:${engine_ports[$1]}" --seed $(( $1 + 1 ))
}

client_ports=(); admin_ports=()
for g in 0 1 2; do client_ports+=("$(free_port)"); admin_ports+=("$(free_port)"); done
removed=-1  # the replica currently removed from the config files, -1 = none
write_config() {  # write_config GATEWAY: its own file, without the removed replica
  local g=$1 i f="$work/gateway$1.yaml"
  {
    cat <<YAML
listen: 127.0.0.1:${client_ports[$g]}
admin_listen: 127.0.0.1:${admin_ports[$g]}
workers: $workers
reload_poll_interval_ms: 500
routing: { default_strategy: $strategy }
shared_state: { backend: redis, address: 127.0.0.1:$redis_port }
logging: { level: info, access_log: false }
models:
  - name: llama2-7b
    limits: { max_inflight_per_replica: $limit }
    replicas:
YAML
    for i in 0 1 2 3 4 5; do
      [ "$i" = "$removed" ] && continue
      echo "      - { address: 127.0.0.1:${engine_ports[$i]}, labels: { gpu: ${gpus[$i]} } }"
    done
  } >"$f.tmp"
  mv "$f.tmp" "$f"  # atomic: a poll never reads half a file
}
start_gateway() {
  write_config "$1"
  launch "gateway$1" "$bin" gateway --config "$work/gateway$1.yaml"
  echo "${pid_of[gateway$1]}" >"$work/pids/gateway$1.pid"
}
# ready GATEWAY: its readiness probe answers 200 (/readyz; /healthz on a binary without it).
ready() {
  local a="127.0.0.1:${admin_ports[$1]}" code
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$a/readyz" || true)"
  if [ "$code" = 404 ]; then
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$a/healthz" || true)"
  fi
  [ "$code" = 200 ]
}
wait_ready() {  # wait_ready GATEWAY SECONDS
  for _ in $(seq $(( $2 * 20 ))); do ready "$1" && return 0; sleep 0.05; done
  return 1
}
# lists REPLICA_INDEX GATEWAY: whether the gateway's /debug/fleet lists the replica.
lists() {
  curl -s --max-time 1 "http://127.0.0.1:${admin_ports[$2]}/debug/fleet" \
    | grep -q "\"127.0.0.1:${engine_ports[$1]}\""
}

cpu_model="$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
{
  echo "command: CHAOS_SECONDS=$seconds CHAOS_SEED=$seed CHAOS_LIMIT=$limit CHAOS_RATE=$rate" \
       "CHAOS_EVENT_EVERY=$every${CHAOS_EVENTS:+ CHAOS_EVENTS=$events_wanted}" \
       "SWITCHYARD=${bin#"$root"/} bash bench/e2e/chaos.sh"
  echo "machine: nproc=$(nproc), CPU \"$cpu_model\"," \
       "load average $(cut -d' ' -f1-3 /proc/loadavg)" \
       "at start, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "switchyard: $("$bin" --version 2>/dev/null || echo unknown) ($bin)" \
       "$([ $sanitized = 1 ] && echo 'sanitizer build')"
  echo "fleet: 6 engine processes (llama2-7b: 3 x L20, 3 x A100), 3 gateways (workers: $workers," \
       "$strategy, limits.max_inflight_per_replica: $limit), shared state in redis-server" \
       "$(redis-server --version | awk '{print $3}')"
  echo "load: Poisson $rate req/s, ${stream_fraction} streamed, max_tokens $max_tokens, prompts" \
       "$prompt_words words, seed $seed; warm-up ${warmup} s, then an event every ${every} s" \
       "($events_wanted);" \
       "engines sampled every $sample_ms ms, readiness polled every $poll_ms ms"
} | tee "$log"

# ---------------------------------------------------------------------------------------------
# The fleet.
start_redis
for i in 0 1 2 3 4 5; do start_engine "$i"; done
for g in 0 1 2; do start_gateway "$g"; done
for g in 0 1 2; do
  wait_ready "$g" 30 \
    || die "gateway$g not ready after 30 s: $(tail -5 "$work/logs/gateway$g.1.out")"
  curl -sf --max-time 20 -H 'Content-Type: application/json' \
    -d '{"model":"llama2-7b","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}' \
    "http://127.0.0.1:${client_ports[$g]}/v1/chat/completions" >/dev/null \
    || die "gateway$g does not answer a chat request"
done

t0="$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 1 }')"
join() { local IFS=,; echo "$*"; }
clients=(); admins=(); engines=()
for g in 0 1 2; do
  clients+=("127.0.0.1:${client_ports[$g]}")
  admins+=("127.0.0.1:${admin_ports[$g]}")
done
for i in 0 1 2 3 4 5; do engines+=("127.0.0.1:${engine_ports[$i]}"); done
python3 "$root/bench/e2e/chaos.py" load --gateways "$(join "${clients[@]}")" \
  --admins "$(join "${admins[@]}")" --engines "$(join "${engines[@]}")" --pid-dir "$work/pids" \
  --redis "127.0.0.1:$redis_port" \
  --t0 "$t0" --seconds "$seconds" --rate "$rate" --seed "$seed" \
  --stream-fraction "$stream_fraction" --prompt-words "$prompt_words" --max-tokens "$max_tokens" \
  --max-requests "$max_requests" --sample-ms "$sample_ms" --poll-ms "$poll_ms" --out "$out" \
  >"$work/logs/load.out" 2>"$work/logs/load.err" &
pid_of[load]=$!

# ---------------------------------------------------------------------------------------------
# Chaos events, one at a time: ENGINE/GATEWAY/REPLICA targets drawn from the seed.
RANDOM=$seed
events="$out/events.csv"
echo "start,end,type,target,detail" >"$events"
record() {  # record START TYPE TARGET DETAIL
  local end; end="$(now)"
  echo "$1,$end,$2,$3,$4" >>"$events"
  printf '  t=%6.1f s  %-15s %-9s %s\n' "$(awk -v s="$1" -v t0="$t0" 'BEGIN { print s - t0 }')" \
    "$2" "$3" "$4" | tee -a "$log" >&2
}
picked=0
pick_engine() {  # sets `picked`: a replica that is in the configs (not in a subshell: RANDOM)
  while :; do picked=$(( RANDOM % 6 )); [ "$picked" != "$removed" ] && break; done
}
engine_crash() {
  local i start; pick_engine; i=$picked; start="$(now)"
  stop KILL "engine$i" 2>/dev/null  # (no "Killed" job notice)
  sleep "$down_s"
  start_engine "$i"
  record "$start" engine-crash "engine$i" "SIGKILL; down ${down_s} s; restarted on its port"
}
engine_hang() {
  local i start pid; pick_engine; i=$picked; start="$(now)"; pid="${pid_of[engine$i]}"
  kill -STOP "$pid"
  sleep "$hang_s"
  kill -CONT "$pid"
  record "$start" engine-hang "engine$i" "SIGSTOP for ${hang_s} s"
}
redis_restart() {
  local start; start="$(now)"
  stop KILL redis 2>/dev/null
  sleep "$down_s"
  start_redis
  record "$start" redis-restart redis "SIGKILL; down ${down_s} s; restarted empty on its port"
}
gateway_restart() {
  local g=$(( 1 + RANDOM % 2 )) start t_exit detail pid
  start="$(now)"; pid="${pid_of[gateway$g]}"
  kill -TERM "$pid"
  for _ in $(seq 450); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    detail="still running 45 s after SIGTERM: killed;"
  else
    detail=""
  fi
  stop KILL "gateway$g"  # reaps it (and kills it if it is still there)
  t_exit="$(awk -v s="$start" -v n="$(now)" 'BEGIN { printf "%.2f", n - s }')"
  start_gateway "$g"
  if wait_ready "$g" 30; then
    detail+=" SIGTERM; exited after ${t_exit} s; ready again after"
    detail+=" $(awk -v s="$start" -v n="$(now)" 'BEGIN { printf "%.2f", n - s }') s"
  else
    detail+=" SIGTERM; exited after ${t_exit} s; NOT ready 30 s after its restart"
  fi
  record "$start" gateway-restart "gateway$g" "$detail"
}
reload_all() {  # writes every gateway's file and sends SIGHUP; waits until each applied it
  local want=$1 i=$2 g ok
  for g in 0 1 2; do write_config "$g"; done
  for g in 0 1 2; do kill -HUP "${pid_of[gateway$g]}" 2>/dev/null || true; done
  for g in 0 1 2; do
    ok=0
    for _ in $(seq 100); do
      if [ "$want" = listed ] && lists "$i" "$g"; then ok=1; break; fi
      if [ "$want" = gone ] && ! lists "$i" "$g"; then ok=1; break; fi
      sleep 0.05
    done
    [ $ok = 1 ] || echo -n "gateway$g did not apply it within 5 s; "
  done
}
replica_remove() {
  local i start detail; pick_engine; i=$picked; start="$(now)"
  removed=$i
  detail="$(reload_all gone "$i")"
  record "$start" replica-remove "engine$i" "${detail}removed from every gateway's file + SIGHUP"
}
replica_add() {
  local i=$removed start detail
  [ "$i" -ge 0 ] || return 0
  start="$(now)"
  removed=-1
  detail="$(reload_all listed "$i")"
  record "$start" replica-add "engine$i" "${detail}added back to every gateway's file + SIGHUP"
}

echo "running: gateways ${clients[*]}, engines ${engines[*]}, redis 127.0.0.1:$redis_port" >&2
next="$(awk -v t="$t0" -v w="$warmup" 'BEGIN { printf "%.3f", t + w }')"
last_start="$(awk -v t="$t0" -v s="$seconds" -v e="$tail_s" 'BEGIN { printf "%.3f", t + s - e }')"
k=0
while awk -v n="$next" -v l="$last_start" 'BEGIN { exit !(n < l) }'; do
  sleep_until "$next"
  kill -0 "${pid_of[load]}" 2>/dev/null \
    || die "the load generator stopped: $(tail -5 "$work/logs/load.err")"
  "${cycle[$(( k % ${#cycle[@]} ))]}"
  k=$(( k + 1 ))
  next="$(awk -v n="$next" -v e="$every" -v now="$(now)" \
    'BEGIN { t = n + e; printf "%.3f", (t > now ? t : now) }')"
done
replica_add  # the fleet ends whole
for name in "${!pid_of[@]}"; do  # a process that died without being told to is a finding
  [ "$name" = load ] && continue
  kill -0 "${pid_of[$name]}" 2>/dev/null \
    || echo "$name exited on its own before the end" >>"$out/unexpected.txt"
done
wait "${pid_of[load]}" || die "the load generator failed: $(tail -20 "$work/logs/load.err")"
unset "pid_of[load]"
: >"$work/exits.txt"
stop_all  # graceful: gateways' sanitizers report leaks at exit
mkdir -p "$out/logs" && cp "$work"/logs/* "$out/logs/"
# Exit statuses at the end (SIGTERM): anything but 0 (or 143, the default for TERM) is a finding.
awk '$2 == "TERM" && $3 != 0 && $3 != 143 { print $1 " exited with status " $3 " after SIGTERM" }' \
  "$work/exits.txt" >>"$out/unexpected.txt"
statuses="$(awk '$2 == "TERM" { printf "%s%s=%s", sep, $1, $3; sep = " " }' "$work/exits.txt")"
echo "exit statuses after the final SIGTERM: $statuses" | tee -a "$log"

# ---------------------------------------------------------------------------------------------
# Report.
grep -H -n -E "ERROR: AddressSanitizer|runtime error:|LeakSanitizer" \
  "$work"/logs/*.err "$work"/logs/*.out \
  | sed "s|$work/logs/||" >"$out/sanitizer.txt" || true
names=(); for i in 0 1 2 3 4 5; do names+=("engine$i"); done
python3 "$root/bench/e2e/chaos.py" report --out "$out" --limit "$limit" \
  --engine-names "$(join "${names[@]}")" --engine-gpus "$(join "${gpus[@]}")" \
  --warmup "$warmup" --sample-ms "$sample_ms" $([ $sanitized = 1 ] && echo --sanitized) \
  | tee -a "$log"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; logs: $out/logs/" | tee -a "$log"

if command -v gnuplot >/dev/null; then
  gnuplot <<GNUPLOT
set terminal pngcairo size 1200,560 noenhanced
set datafile separator ","
set grid
set key outside right
set xlabel "seconds since the start of the load"
types = "engine-crash engine-hang redis-restart gateway-restart replica-remove replica-add"
colors = "black red blue dark-green orange purple"
events = "$out/events-plot.csv"
set output "$out/inflight.png"
set title "Chaos soak: each engine's highest in flight per second (running + waiting),\
 limit $limit; events as marks above"
set ylabel "requests in flight on the engine"
set yrange [0:$limit + 3]
plot for [i=2:7] "$out/inflight-per-second.csv" using 1:i with steps title columnhead(i), \
     $limit with lines lw 2 dt 2 lc rgb "red" title "limit", \
     for [k=0:5] events using 1:(\$4 == k ? $limit + 1 + k * 0.3 : 1/0) with points pt 7 ps 0.8 \
       lc rgb word(colors, k + 1) title word(types, k + 1)
set output "$out/outcomes.png"
set title "Chaos soak: requests by the time they ended; events as marks below"
set ylabel "requests"
set yrange [-3:*]
plot "$out/outcomes-per-second.csv" using 1:2 with steps title columnhead(2), \
     "" using 1:3 with impulses lw 3 title "failed before streaming", \
     "" using 1:4 with impulses lw 3 title "stream cut", \
     "" using 1:5 with impulses lw 1 title "rerouted", \
     for [k=0:5] events using 1:(\$4 == k ? -0.4 - k * 0.4 : 1/0) with points pt 7 ps 0.8 \
       lc rgb word(colors, k + 1) title word(types, k + 1)
set output "$out/rss.png"
set title "Chaos soak: gateway RSS (VmRSS); gateway0 is never restarted"
set ylabel "MiB"
set yrange [0:*]
plot for [g=0:2] "$out/rss-plot.csv" index g using 1:3 with lines lw 2 title sprintf("gateway%d", g)
GNUPLOT
  echo "plots: $out/inflight.png $out/outcomes.png $out/rss.png" | tee -a "$log"
fi
