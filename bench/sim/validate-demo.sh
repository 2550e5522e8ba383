#!/usr/bin/env bash
# The simulator against the live system (docs/simulation.md, "Validation"): `switchyard demo`
# (2x L20 + 2x A100 emulated replicas behind a real gateway, 70 % load, its mix) for
# least-request and load-balance, then bench/sim/demo-fleet.yaml simulated at the rate the live
# run offered, for several seeds; prints per-type share and p50/p99 TTFT, TPOT and E2E side by
# side (goal: share within 2 points, latencies within 10 %).
#   VALIDATE_SECONDS=60 (measured per strategy)  VALIDATE_SEEDS="7 8 9 10 11"
#   VALIDATE_OUT=build/sim-validate  SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${VALIDATE_OUT:-$root/build/sim-validate}"
seconds="${VALIDATE_SECONDS:-60}"
seeds="${VALIDATE_SEEDS:-7 8 9 10 11}"
[ -x "$bin" ] || { echo "validate-demo: $bin not found; run make build" >&2; exit 1; }
mkdir -p "$out"

echo "live: switchyard demo --strategies least-request,load-balance --seconds $seconds"
"$bin" demo --strategies least-request,load-balance --seconds "$seconds" --csv "$out/live.csv" \
  >"$out/live.txt"
rate=$(awk -F, 'NR == 2 { print $2 }' "$out/live.csv")
for seed in $seeds; do
  echo "simulated: --rate $rate --seed $seed"
  "$bin" simulate --scenario "$root/bench/sim/demo-fleet.yaml" \
    --strategies least-request,load-balance --rate "$rate" --duration "$((seconds + 3))" \
    --seed "$seed" --no-progress --summary-json "$out/sim-$seed.json" >"$out/sim-$seed.txt"
done
python3 - "$out" $seeds <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
live = {}
with open(f"{out}/live.csv") as f:
    header = f.readline().strip().split(",")
    for line in f:
        row = dict(zip(header, line.strip().split(",")))
        live[(row["strategy"], row["gpu"])] = row
sims = [json.load(open(f"{out}/sim-{s}.json"))["strategies"] for s in seeds]
fields = [("TTFT p50", "ttft_p50_ms"), ("TTFT p99", "ttft_p99_ms"), ("TPOT p50", "tpot_p50_ms"),
          ("TPOT p99", "tpot_p99_ms"), ("E2E p50", "e2e_p50_ms"), ("E2E p99", "e2e_p99_ms")]
print(f"| strategy | GPU | figure | live | simulated (median of {len(seeds)} seeds) | difference |")
print("|---|---|---|---|---|---|")
for strategy in ("least-request", "load-balance"):
    for gpu in ("L20", "A100", "all"):
        if gpu != "all":
            l = float(live[(strategy, gpu)]["share_pct"])
            s = statistics.median(100 * r[strategy]["share_by_gpu"][gpu] for r in sims)
            print(f"| {strategy} | {gpu} | share | {l:.1f} % | {s:.1f} % | {s - l:+.1f} pt |")
        for name, key in fields:
            l = float(live[(strategy, gpu)][key])
            vals = [r[strategy][key] if gpu == "all" else r[strategy]["by_gpu"][gpu][key]
                    for r in sims]
            s = statistics.median(vals)
            print(f"| {strategy} | {gpu} | {name} | {l:.1f} | {s:.1f} "
                  f"({min(vals):.1f}-{max(vals):.1f}) | {100 * (s / l - 1):+.1f} % |")
PY
