#!/usr/bin/env bash
# make bench-optimizer: the product page's experiment for the GPU-mix optimizer.
#  1. profiles of llama2-7b on an emulated A10 and L20 (gen-profile --emulated, SLO P99 TPOT);
#  2. the load: ShareGPT-like chat at 7 req/s + code generation with prompts over 4k tokens and
#     32-64 output tokens at 4 req/s, bucketed as the gateways count it (optimizer_load.py);
#  3. optimize --once: the heterogeneous answer, and A10-only and L20-only answers (the
#     cheapest homogeneous fleet that meets the SLO is the cheaper of the two);
#  4. runs the recommended mix on emulated engines behind a gateway (switchyard demo) with
#     load-balance routing and with SLO routing on the same profiles, and reports SLO attainment,
#     and the cheapest homogeneous fleet likewise;
#  5. sweeps the long-prompt share from 0 to 100 % at the same total rate: cost of the
#     heterogeneous answer / cost of the best homogeneous one, as a table and a PNG.
# Prices: data/gpu_prices.yaml (with sources). Output: build/bench-optimizer/.
#
# Environment: OPT_SECONDS=60 (measured seconds of each run), OPT_WARMUP=15, OPT_SLO=tpot=50ms,
# OPT_RATE=11, OPT_MIX=chat:0.64:20-300:64-256,code:0.36:2300-2800:32-64 (prompt words, output
# tokens), OPT_HEADROOM=0, OPT_SKIP_RUN=1 (solve only), OPT_OUT=build/bench-optimizer,
# OPT_A10_COST / OPT_L20_COST (default: data/gpu_prices.yaml), OPT_STRATEGIES=load-balance,slo
# (routing strategies of the runs).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${OPT_OUT:-$root/build/bench-optimizer}"
seconds="${OPT_SECONDS:-60}"
warmup="${OPT_WARMUP:-15}"
slo="${OPT_SLO:-tpot=50ms}"
rate="${OPT_RATE:-11}"
mix="${OPT_MIX:-chat:0.64:20-300:64-256,code:0.36:2300-2800:32-64}"
headroom="${OPT_HEADROOM:-0}"
run_strategies="${OPT_STRATEGIES:-load-balance,slo}"
[ -x "$bin" ] || { echo "optimizer.sh: $bin not found; run make build" >&2; exit 1; }
mkdir -p "$out"
log="$out/optimizer.txt"

price() {  # price NAME: usd_per_hour of NAME in data/gpu_prices.yaml
  awk -v name="$1" '$1 == "-" && $2 == "name:" { found = ($3 == name) }
                    found && $1 == "usd_per_hour:" { print $2; exit }' "$root/data/gpu_prices.yaml"
}
a10_cost="${OPT_A10_COST:-$(price A10)}"
l20_cost="${OPT_L20_COST:-$(price L20)}"
slo_ms="$(echo "$slo" | sed -n 's/.*tpot=\([0-9.]*\)ms.*/\1/p')"

{
  echo "machine: nproc=$(nproc), CPU \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\"," \
       "load average $(cut -d' ' -f1-3 /proc/loadavg) at start, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "SLO: P99 $slo; prices: A10 \$$a10_cost/h, L20 \$$l20_cost/h (data/gpu_prices.yaml)"
} | tee "$log"

# 1. Profiles.
for gpu in A10 L20; do
  cost="$a10_cost"; [ "$gpu" = L20 ] && cost="$l20_cost"
  cmd=("$bin" gen-profile --emulated "$gpu" --model llama2-7b --deployment "llama2-7b-$gpu"
       --gpu "$gpu" --cost "$cost" --slo "$slo" --percentile 99
       --prompts 32,64,128,256,512,1024,2048,4096,8192 --outputs 16,32,64,128,256,512
       -o "$out/$gpu.json")
  echo "command: ${cmd[*]}" | tee -a "$log"
  /usr/bin/time -f "  %e s" "${cmd[@]}" 2>&1 | tee -a "$log"
done
python3 - "$out/A10.json" "$out/L20.json" <<'PY' | tee -a "$log"
import json, sys
a, l = (json.load(open(p)) for p in sys.argv[1:3])
print("\nmax req/s per replica meeting the SLO (A10 / L20), and L20's rate per dollar ÷ A10's:")
outs, ins = a["indexes"]
print("output\\prompt " + " ".join(f"{i:>14}" for i in ins))
for r, o in enumerate(outs):
    cells = []
    for c in range(len(ins)):
        ta, tl = a["tputs"][r][c], l["tputs"][r][c]
        ratio = (tl / l["cost"]) / (ta / a["cost"]) if ta > 0 and tl > 0 else float("nan")
        cells.append(f"{ta:5.2f}/{tl:5.2f} {ratio:4.2f}" if ta or tl else f"{'-':>14}")
    print(f"{o:>13} " + " ".join(f"{c:>14}" for c in cells))
PY

# 2-3. The product page's load, solved three ways.
solve() {  # solve LOADFILE PROFILES... → JSON answer on stdout
  local load="$1"; shift
  local args=()
  for p in "$@"; do args+=(--profile "$p"); done
  "$bin" optimize --once "${args[@]}" --load "$load" --headroom "$headroom" --slice-factor 4
}
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
python3 "$root/bench/e2e/optimizer_load.py" --mix "$mix" --rate "$rate" > "$out/load.json"
solve "$out/load.json" "$out/A10.json" "$out/L20.json" > "$out/hetero.json"
solve "$out/load.json" "$out/A10.json" > "$out/a10-only.json"
solve "$out/load.json" "$out/L20.json" > "$out/l20-only.json"
{
  echo
  echo "product page mix ($mix at $rate req/s), headroom $headroom:"
  for f in hetero a10-only l20-only; do
    printf '  %-10s %s\n' "$f:" "$(field 'd["replicas"], "cost", round(d["cost"],3), "feasible", d["feasible"], "solve_ms", d["solve_ms"]' < "$out/$f.json")"
  done
  python3 - "$out/hetero.json" "$out/a10-only.json" "$out/l20-only.json" <<'PY'
import json, sys
h, a, l = (json.load(open(p)) for p in sys.argv[1:4])
if h["note"]:
    print("  heterogeneous answer: " + h["note"])
homo = [(x["cost"], n) for x, n in ((a, "A10"), (l, "L20")) if x["feasible"]]
if homo and h["feasible"]:
    cost, name = min(homo)
    print(f"  ratio heterogeneous / cheapest homogeneous ({name}): {h['cost'] / cost:.3f}")
else:
    print("  no fleet meets the SLO for this load: see the 0 cells in the table above")
PY
} | tee -a "$log"

# 4. Run the answers on emulated engines (load-balance and SLO routing): the product page's mix,
#    and its chat alone (the long prompts' share at 0 %), heterogeneous and cheapest homogeneous.
gpus_of() {  # JSON answer on stdin → "A10,A10,L20"
  python3 -c "import json,sys; d=json.load(sys.stdin); print(','.join(n.split('-')[-1] for n,k in d['replicas'].items() for _ in range(k)))"
}
chat_mix="$(echo "$mix" | cut -d, -f1)"
chat_rate="$(python3 -c "
parts = [p.split(':') for p in '$mix'.split(',')]
total = sum(float(p[1]) for p in parts)
print(round($rate * float(parts[0][1]) / total, 3))")"
python3 "$root/bench/e2e/optimizer_load.py" --mix "$chat_mix" --rate "$chat_rate" > "$out/load-chat.json"
solve "$out/load-chat.json" "$out/A10.json" "$out/L20.json" > "$out/chat-hetero.json"
solve "$out/load-chat.json" "$out/A10.json" > "$out/chat-a10.json"
solve "$out/load-chat.json" "$out/L20.json" > "$out/chat-l20.json"
cheaper="$(python3 -c "
import json
a = json.load(open('$out/chat-a10.json')); l = json.load(open('$out/chat-l20.json'))
print('$out/chat-a10.json' if a['cost'] <= l['cost'] else '$out/chat-l20.json')")"
cp "$cheaper" "$out/chat-homogeneous.json"
{
  echo
  echo "chat alone ($chat_mix at $chat_rate req/s):"
  for f in chat-hetero chat-a10 chat-l20; do
    printf '  %-14s %s\n' "$f:" "$(field 'd["replicas"], "cost", round(d["cost"],3), "feasible", d["feasible"]' < "$out/$f.json")"
  done
  python3 -c "
import json
h = json.load(open('$out/chat-hetero.json')); b = json.load(open('$out/chat-homogeneous.json'))
print(f'  ratio heterogeneous / cheapest homogeneous: {h[\"cost\"] / b[\"cost\"]:.3f}')"
} | tee -a "$log"
run() {  # run NAME ANSWER_FILE MIX RATE
  local gpus; gpus="$(gpus_of < "$2")"
  [ -n "$gpus" ] || return 0
  # SLO routing reads the very profiles the answer was computed from (those of its GPU types).
  local profiles=""
  for gpu in A10 L20; do
    case ",$gpus," in *",$gpu,"*) profiles="${profiles:+$profiles,}$gpu:$out/$gpu.json" ;; esac
  done
  local cmd=("$bin" demo --gpus "$gpus" --rate "$4" --mix "$3" --strategies "$run_strategies"
             --slo-profiles "$profiles" --seconds "$seconds" --warmup "$warmup"
             --capacity-seconds 5 --slo-tpot-ms "$slo_ms" --csv "$out/run-$1.csv")
  { echo; echo "run ($1): ${cmd[*]}"; } | tee -a "$log"
  "${cmd[@]}" 2>&1 | tee -a "$log" || true
}
if [ "${OPT_SKIP_RUN:-0}" != 1 ]; then
  run product-page "$out/hetero.json" "$mix" "$rate"
  run chat-hetero "$out/chat-hetero.json" "$chat_mix" "$chat_rate"
  run chat-homogeneous "$out/chat-homogeneous.json" "$chat_mix" "$chat_rate"
fi

# 5. Sweeps: the share of the mix's last class from 0 to 100 % at the same total rate. The
#    product page's mix (long prompts), then short vs long outputs, where the two GPU types'
#    strengths differ most in this engine model.
sweep() {  # sweep NAME MIX
  local name="$1" sweep_mix="$2" table="$out/sweep-$1.csv"
  echo "share_pct,feasible,hetero_cost,a10_cost,l20_cost,best_homogeneous_cost,ratio,hetero_mix" > "$table"
  for share in 0 10 20 30 40 50 60 70 80 90 100; do
    local load="$out/load-$name-$share.json"
    python3 "$root/bench/e2e/optimizer_load.py" --mix "$sweep_mix" --rate "$rate" \
        --long-share "$(python3 -c "print($share / 100)")" > "$load"
    solve "$load" "$out/A10.json" "$out/L20.json" > "$out/h.json"
    solve "$load" "$out/A10.json" > "$out/a.json"
    solve "$load" "$out/L20.json" > "$out/l.json"
    python3 - "$share" "$out/h.json" "$out/a.json" "$out/l.json" >> "$table" <<'PY'
import json, sys
h, a, l = (json.load(open(p)) for p in sys.argv[2:5])
# Costs of infeasible answers (the maximum, or what the servable part needs) are not costs of a
# fleet that meets the SLO: they are left out (nan).
cost = lambda x: x["cost"] if x["feasible"] else float("nan")
homo = [x["cost"] for x in (a, l) if x["feasible"]]
ok = h["feasible"] and bool(homo)
best = min(homo) if homo else float("nan")
ratio = h["cost"] / best if ok and best > 0 else float("nan")
mix = " ".join(f"{k.split('-')[-1]}={v}" for k, v in h["replicas"].items())
print(f"{sys.argv[1]},{'yes' if ok else 'no'},{cost(h):.3f},{cost(a):.3f},{cost(l):.3f},"
      f"{best:.3f},{ratio:.3f},{mix}")
PY
  done
  rm -f "$out/h.json" "$out/a.json" "$out/l.json"
  { echo; echo "sweep '$name' ($sweep_mix) at $rate req/s, by the share of its last class ($table):"
    column -t -s, "$table"; } | tee -a "$log"
  python3 - "$table" <<'PY' | tee -a "$log"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["feasible"] == "yes"]
if not rows:
    print("no point of the sweep is feasible")
else:
    best = min(rows, key=lambda r: float(r["ratio"]))
    print(f"best feasible point: {best['share_pct']} %, heterogeneous / best homogeneous = "
          f"{float(best['ratio']):.3f} (saving {100 * (1 - float(best['ratio'])):.1f} %); "
          f"feasible points: {len(rows)} of 11")
PY
  if command -v gnuplot >/dev/null; then
    gnuplot <<GP
set terminal pngcairo size 900,500
set output "$out/sweep-$name.png"
set datafile separator ","
set datafile missing "nan"
set title "GPU mix, llama2-7b on emulated A10 + L20, P99 $slo, $rate req/s: $name"
set xlabel "share of the mix's last class (%)"
set ylabel "cost, \$/h (fleets that meet the SLO)"
set y2label "heterogeneous / best homogeneous"
set y2tics
set y2range [0:1.2]
set key top left
plot "$table" every ::1 using 1:3 with linespoints pointsize 2 title "heterogeneous", \
     "$table" every ::1 using 1:4 with linespoints title "A10 only", \
     "$table" every ::1 using 1:5 with linespoints title "L20 only", \
     "$table" every ::1 using 1:7 axes x1y2 with linespoints dashtype 2 title "ratio (right axis)"
GP
    echo "plot: $out/sweep-$name.png" | tee -a "$log"
  fi
}
sweep long-prompts "$mix"
sweep long-outputs "${OPT_MIX2:-short:0.5:20-120:16-32,long:0.5:20-120:256-512}"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a "$log"
