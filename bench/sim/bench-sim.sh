#!/usr/bin/env bash
# `make bench-sim`: the fleet simulator's studies 1-6 (docs/simulation.md) at a reduced size, in
# a few minutes: every later routing change can be judged against them. For each study the
# simulator writes its summary, CSV series, JSON and PNG plots under build/bench-sim/<study>/;
# this script prints the figures each study is about.
#   BENCH_SIM_SCALE=0.2   fraction of each study's fleet (and load) to simulate
#   BENCH_SIM_OUT=build/bench-sim   SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${BENCH_SIM_OUT:-$root/build/bench-sim}"
scale="${BENCH_SIM_SCALE:-0.2}"
[ -x "$bin" ] || { echo "bench-sim: $bin not found; run make build" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-sim: python3 not found" >&2; exit 1; }
mkdir -p "$out"
started=$(date +%s)

run() {  # name scenario [extra simulate options...]
  local name="$1" scenario="$2"
  shift 2
  echo "== $name: switchyard simulate --scenario $scenario --scale $scale $*"
  "$bin" simulate --scenario "$root/$scenario" --scale "$scale" -o "$out/$name" "$@" \
    >"$out/$name.txt"
}

run study1-rank bench/sim/study1-rank-1000.yaml --duration 60
run study2-stampede bench/sim/study2-stampede-1000.yaml
run study3-hetero bench/sim/study3-hetero-1000.yaml --duration 120
run study4-day bench/sim/study4-day.yaml
run study5-deadline bench/sim/study5-deadline-1000.yaml
run study6-scaledown bench/sim/study6-scaledown-1000.yaml

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    with open(f"{out}/{name}/summary.json") as f:
        return json.load(f)
def ms(v): return "-" if v is None else f"{v:.0f}"

s1 = load("study1-rank")
print(f"\nStudy 1, don't rank the entire fleet ({s1['replicas']} replicas, {s1['gateways']} gateways):")
print(f"{'strategy':<26} {'E2E p99 ms':>10} {'goodput':>8} {'queue p99':>9} {'queue max':>9} {'routing us':>10}")
for name, r in s1["strategies"].items():
    routing = r["routing_us_per_decision"]
    print(f"{name:<26} {ms(r['e2e_p99_ms']):>10} {100 * r['goodput']:>7.1f}% "
          f"{r['queue_depth_p99']:>9.0f} {r['queue_depth_max']:>9.0f} "
          f"{'-' if routing is None else f'{routing:.2f}':>10}")

s2 = load("study2-stampede")
print(f"\nStudy 2, new-replica stampede ({s2['replicas']} replicas, {s2['gateways']} gateways):")
print(f"{'strategy':<26} {'share 2/5/10 s (fair)':>24} {'new peak':>8} {'median':>7}")
for name, r in s2["strategies"].items():
    a = r.get("added_replicas")
    if not a:
        continue
    shares = (f"{100*a['share_2s']:.1f}/{100*a['share_5s']:.1f}/{100*a['share_10s']:.1f}"
              f" ({100*a['fair_share']:.1f})")
    print(f"{name:<26} {shares:>24} {a['peak_inflight_5s']:>8.0f} "
          f"{a['established_median_inflight_5s']:>7.1f}")

s3 = load("study3-hetero")
print(f"\nStudy 3, heterogeneous fleet ({s3['replicas']} replicas):")
print(f"{'strategy':<26} {'converged s':>11} {'busy gap pp':>11} {'tput gap pp':>11}  share by GPU")
for name, r in s3["strategies"].items():
    conv = r["capacity_convergence_s"]
    gap = r["throughput_util_gap"]
    shares = " ".join(f"{g} {100*v:.0f}%" for g, v in r["share_by_gpu"].items())
    print(f"{name:<26} {'-' if conv is None else f'{conv:.0f}':>11} {100*r['busy_gap']:>11.1f} "
          f"{'-' if gap is None else f'{100*gap:.1f}':>11}  {shares}")

s4 = load("study4-day")
print(f"\nStudy 4, a day of traffic compressed 60x ({s4['replicas']} replicas at the peak):")
print(f"{'run':<26} {'cost $':>8} {'replica-h':>9} {'SLO att.':>8} {'TPOT p99':>8} {'$/h min-max':>12}")
for name, r in s4["strategies"].items():
    a = r.get("autoscale")
    span = f"{a['usd_per_hour_min']:.0f}-{a['usd_per_hour_max']:.0f}" if a else "-"
    print(f"{name:<26} {r['cost_usd']:>8.2f} {r['replica_hours']:>9.2f} {100*r['goodput']:>7.1f}% "
          f"{ms(r['tpot_p99_ms']):>8} {span:>12}")

s5 = load("study5-deadline")
print(f"\nStudy 5, deadline admission ({s5['replicas']} replicas, {s5['gateways']} gateways):")
print(f"{'mode':<10} {'goodput':>8} {'E2E p99 ms':>10} {'wasted slot-s':>13} {'wasted tok':>11}  refused by code")
for name, r in s5["strategies"].items():
    codes = ("inflight_limit", "queue_full", "queue_timeout", "deadline_unattainable")
    refused = " ".join(f"{c}={r['outcomes'][c]}" for c in codes if r["outcomes"][c])
    print(f"{name:<10} {100*r['goodput']:>7.1f}% {ms(r['e2e_p99_ms']):>10} "
          f"{r['wasted_slot_seconds']:>13.0f} {r['wasted_tokens']:>11}  {refused or '-'}")

s6 = load("study6-scaledown")
print(f"\nStudy 6, scale-down ({s6['replicas']} replicas, {s6['gateways']} gateways):")
print(f"{'run':<18} {'victims':>7} {'in flight':>9} {'sessions':>8} {'cut':>6} {'re-routed':>9} "
      f"{'drain p50/max s':>15} {'goodput':>8} {'E2E p99 ms':>10}")
for name, r in s6["strategies"].items():
    d = r.get("removed_replicas")
    if not d:
        continue
    drain = ("-" if d["drain_s_p50"] is None
             else f"{d['drain_s_p50']:.1f}/{d['drain_s_max']:.1f}")
    print(f"{name:<18} {d['victims']:>7} {d['in_flight_at_decision']:>9} "
          f"{d['session_requests']:>8} {d['cut_mid_stream']:>6} {d['cut_before_first_token']:>9} "
          f"{drain:>15} {100*r['goodput']:>7.1f}% {ms(r['e2e_p99_ms']):>10}")
PY
echo
echo "bench-sim: $(( $(date +%s) - started )) s; details in $out/"
