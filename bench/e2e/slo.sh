#!/usr/bin/env bash
# SLO routing and deadline-aware admission (`make bench-slo`), two parts.
#
# 1. The product page's experiment: A10 + L20 emulated replicas of llama2-7b, chat (short prompts,
#    64-256 output tokens) and code generation (prompts over 4k tokens, 32-64 output tokens) at
#    7 : 4, offered at SLO_RATE requests/s, SLO P99 TPOT <= SLO_TPOT_MS. Every strategy gets a
#    fresh fleet and gateway and the same seeded arrivals (`switchyard demo`): random (the page's
#    "no routing"), least-request, load-balance, load-balance-shape-aware, the three slo variants
#    and the Oracle (chat -> A10, code -> L20, least-request within the type, pinned with
#    x-switchyard-gpu). Table of SLO attainment, goodput, refusals, peak gateway queue and
#    TTFT/TPOT/E2E p50/p99 per strategy; CSV; PNG (goodput and P99 TPOT per strategy).
# 2. A surge against deadlines (bench/e2e/surge.py): 70 % load, 2x capacity for 30 s, 70 % again;
#    clients give up at 30 s; admission off / fifo / deadline. Goodput, wasted engine work,
#    refusals, p50/p99.
# 3. A long prompt's TTFT per GPU type (bench/e2e/long_prompt_ttft.py): a 4,096-token prompt alone
#    on A10, L20 and A100, measured over HTTP next to the roofline the emulator runs and the bare
#    datasheet bound.
#
# Environment:
#   SLO_GPUS=A10x4,L20x10  the fleet (GPUxN, comma-separated)
#   SLO_GPU_COSTS=...      prices per replica-hour for the slo strategies (GPU:price,...;
#                          default: data/gpu_prices.yaml's usd_per_hour of each type)
#   SLO_RATE=11            requests/s offered (7 : 4 chat : code)
#   SLO_SECONDS=40  SLO_WARMUP=10  SLO_SEED=7  SLO_TPOT_MS=50
#   SLO_STRATEGIES=random,least-request,load-balance,load-balance-shape-aware,slo-pack-load,
#                  slo-least-load,slo,oracle
#   SLO_PARTS="1 2 3"      which parts to run
#   SLO_OUT=build/bench-slo   SWITCHYARD=build/release/switchyard
#   SURGE_* knobs: see bench/e2e/surge.py
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${SLO_OUT:-$root/build/bench-slo}"
gpus_spec="${SLO_GPUS:-A10x4,L20x10}"
rate="${SLO_RATE:-11}"
seconds="${SLO_SECONDS:-40}"
warmup="${SLO_WARMUP:-10}"
seed="${SLO_SEED:-7}"
tpot="${SLO_TPOT_MS:-50}"
strategies="${SLO_STRATEGIES:-random,least-request,load-balance,load-balance-shape-aware,slo-pack-load,slo-least-load,slo,oracle}"
parts="${SLO_PARTS:-1 2 3}"
# 7 : 4 chat : code; prompt words (about 1.7 tokens each), output tokens.
mix="chat:7:20-300:64-256,code:4:2400-2800:32-64"

[ -x "$bin" ] || { echo "slo.sh: $bin not found; run make build" >&2; exit 1; }
mkdir -p "$out"

gpus=""
costs=""
IFS=, read -r -a groups <<<"$gpus_spec"
for group in "${groups[@]}"; do
  type="${group%x*}"
  count="${group##*x}"
  [[ "$count" =~ ^[0-9]+$ ]] || { echo "slo.sh: SLO_GPUS must be GPUxN,..." >&2; exit 1; }
  for _ in $(seq "$count"); do gpus="${gpus:+$gpus,}$type"; done
  # The type's on-demand price, as the optimizer's benchmark reads it.
  price="$(awk -v t="$type" '$1 == "-" && $2 == "name:" { name = $3 }
                             $1 == "usd_per_hour:" && name == t { print $2; exit }' \
             "$root/data/gpu_prices.yaml")"
  [ -n "$price" ] && costs="${costs:+$costs,}$type:$price"
done
costs="${SLO_GPU_COSTS:-$costs}"

status=0
if [[ " $parts " == *" 1 "* ]]; then
  csv="$out/slo.csv"
  log="$out/slo.txt"
  cmd=("$bin" demo --gpus "$gpus" --rate "$rate" --mix "$mix" --seconds "$seconds"
       --warmup "$warmup" --seed "$seed" --slo-tpot-ms "$tpot" --strategies "$strategies"
       --oracle chat:A10,code:L20 --csv "$csv")
  [ -n "$costs" ] && cmd+=(--gpu-costs "$costs")
  {
    echo "command: ${cmd[*]}"
    echo "machine: nproc=$(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg) at start," \
         "$(date -u +%Y-%m-%dT%H:%MZ)"
  } | tee "$log"
  "${cmd[@]}" | tee -a "$log" || status=$?  # refusals count as failures: keep going
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a "$log"
  if command -v gnuplot >/dev/null && [ -s "$csv" ]; then
    awk -F, 'NR > 1 && $4 == "all" { print $3, $18, $15 }' "$csv" > "$out/slo.dat"
    gnuplot <<GNUPLOT
set terminal pngcairo size 1100,450 noenhanced
set output "$out/slo.png"
set style data histograms
set style fill solid 0.8 border -1
set xtics rotate by -25
set multiplot layout 1,2 title "SLO routing: ${gpus_spec}, ${rate} req/s chat:code 7:4, SLO P99 TPOT <= ${tpot} ms"
set title "goodput (% of requests within the SLO)"
set yrange [0:105]
plot "$out/slo.dat" using 2:xtic(1) notitle
set title "P99 TPOT (ms)"
set yrange [0:*]
plot "$out/slo.dat" using 3:xtic(1) notitle
unset multiplot
GNUPLOT
    echo "plot: $out/slo.png"
  fi
fi

if [[ " $parts " == *" 2 "* ]]; then
  SWITCHYARD="$bin" SURGE_OUT="$out" python3 "$root/bench/e2e/surge.py" || status=$?
  if command -v gnuplot >/dev/null && [ -s "$out/surge.csv" ]; then
    # Completed-in-time answers per second of sending, per mode.
    awk -F, 'NR > 1 && $3 == 200 { n[$1 "," int($2)]++ } END { for (k in n) print k "," n[k] }' \
      "$out/surge.csv" | sort -t, -k1,1 -k2,2n > "$out/surge.dat"
    gnuplot <<GNUPLOT
set terminal pngcairo size 900,450 noenhanced
set output "$out/surge.png"
set datafile separator ","
set title "surge: answered requests per second of sending, by admission mode"
set xlabel "s since start (surge between the dashed lines)"
set ylabel "requests/s answered 200"
set arrow from 30, graph 0 to 30, graph 1 nohead dt 2
set arrow from 60, graph 0 to 60, graph 1 nohead dt 2
plot for [m in "off fifo deadline"] "< grep '^".m.",' $out/surge.dat" using 2:3 with lines title m
GNUPLOT
    echo "plot: $out/surge.png"
  fi
fi
if [[ " $parts " == *" 3 "* ]]; then
  SWITCHYARD="$bin" LONG_OUT="$out" python3 "$root/bench/e2e/long_prompt_ttft.py" || status=$?
fi
exit "$status"
