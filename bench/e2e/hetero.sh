#!/usr/bin/env bash
# The heterogeneous-fleet routing benchmark (longer `switchyard demo`): 2x L20 + 2x A100 for
# llama2-7b, each GPU type's capacity measured first, then one open-loop Poisson load per offered
# load and strategy, on the same seeded arrivals. Writes CSV (one row per load x strategy x GPU
# type, plus "all") and, when gnuplot is present, a PNG: utilisation per GPU type per strategy
# and p99 E2E per strategy.
#
# Environment:
#   HETERO_SECONDS=60        measured seconds per strategy (and per load)
#   HETERO_WARMUP=10         seconds of load before measuring (the gateway learns capacity)
#   HETERO_CAPACITY_SECONDS=20
#   HETERO_LOADS=0.7         offered loads as fractions of fleet capacity
#   HETERO_SWEEP=1           shorthand for HETERO_LOADS=0.3,0.5,0.7,0.9
#   HETERO_STRATEGIES=random,round-robin,least-request,load-balance,load-balance-shape-aware
#   HETERO_SEED=7  HETERO_SLO_TPOT_MS=50  HETERO_OUT=build/bench-hetero
#   HETERO_MIX=name:weight:pmin-pmax:omin-omax,...   request mix (prompt words, output tokens);
#                            default: the demo's 80 % chat / 20 % summarisation. Prompt-heavy,
#                            for load-balance-shape-aware: chat:40:20-120:64-192,sum:60:400-800:16-48
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${HETERO_OUT:-$root/build/bench-hetero}"
seconds="${HETERO_SECONDS:-60}"
warmup="${HETERO_WARMUP:-10}"
capacity_seconds="${HETERO_CAPACITY_SECONDS:-20}"
loads="${HETERO_LOADS:-0.7}"
if [ "${HETERO_SWEEP:-0}" = 1 ]; then loads="0.3,0.5,0.7,0.9"; fi
strategies="${HETERO_STRATEGIES:-random,round-robin,least-request,load-balance,load-balance-shape-aware}"
seed="${HETERO_SEED:-7}"
slo="${HETERO_SLO_TPOT_MS:-50}"

[ -x "$bin" ] || { echo "hetero.sh: $bin not found; run make build" >&2; exit 1; }
mkdir -p "$out"
csv="$out/hetero.csv"
log="$out/hetero.txt"

cmd=("$bin" demo --gpus L20,L20,A100,A100 --seconds "$seconds" --warmup "$warmup"
     --capacity-seconds "$capacity_seconds" --loads "$loads" --strategies "$strategies"
     --seed "$seed" --slo-tpot-ms "$slo" --csv "$csv")
if [ -n "${HETERO_MIX:-}" ]; then cmd+=(--mix "$HETERO_MIX"); fi
{
  echo "command: ${cmd[*]}"
  echo "machine: nproc=$(nproc), CPU \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\"," \
       "load average $(cut -d' ' -f1-3 /proc/loadavg) at start, $(date -u +%Y-%m-%dT%H:%MZ)"
} | tee "$log"
status=0
"${cmd[@]}" | tee -a "$log" || status=$?
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a "$log"
echo "csv: $csv"

if ! command -v gnuplot >/dev/null; then
  echo "gnuplot not found (scripts/install-deps.sh installs gnuplot-nox): no plot"
  exit "$status"
fi

# Per load: one block per strategy with the GPU types' busy and throughput utilisation, and the
# fleet's p99 E2E.
for load in $(awk -F, 'NR > 1 { print $1 }' "$csv" | sort -un); do
  data="$out/hetero-$load.dat"
  awk -F, -v load="$load" '
    NR == 1 { next }
    $1 != load { next }
    {
      if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 }
      if ($4 == "all") { e2e[$3] = $17 } else {
        if (!($4 in gseen)) { gseen[$4] = 1; gpus[++g] = $4 }
        busy[$3, $4] = $9; tput[$3, $4] = $10
      }
    }
    END {
      printf "strategy"
      for (j = 1; j <= g; j++) printf " busy_%s tput_%s", gpus[j], gpus[j]
      printf " e2e_p99_ms\n"
      for (i = 1; i <= n; i++) {
        s = order[i]; printf "%s", s
        for (j = 1; j <= g; j++) printf " %s %s", busy[s, gpus[j]], tput[s, gpus[j]]
        printf " %s\n", e2e[s]
      }
    }' "$csv" > "$data"
  png="$out/hetero-$load.png"
  gnuplot <<GNUPLOT
set terminal pngcairo size 1200,500 noenhanced
set output "$png"
set datafile separator " "
set key autotitle columnhead below
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -20
set multiplot layout 1,2 title "Switchyard heterogeneous benchmark: 2x L20 + 2x A100, llama2-7b, offered load ${load}% of measured capacity"
set title "utilisation per GPU type (%)"
set yrange [0:*]
plot "$data" using 2:xtic(1), '' using 3, '' using 4, '' using 5
set title "p99 end-to-end latency (ms)"
plot "$data" using 6:xtic(1) title "p99 E2E"
unset multiplot
GNUPLOT
  echo "plot: $png"
done
exit "$status"
