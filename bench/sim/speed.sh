#!/usr/bin/env bash
# `make bench-sim-speed`: the fleet simulator's speed against its goals (docs/simulation.md,
# "Speed"), with the figures each goal is judged on:
#  - 1,000 replicas behind 5 gateways at 70 % load (bench/sim/speed-1000.yaml), every strategy
#    of the scenario: simulated seconds per wall second (medians of SPEED_RUNS runs), CPU
#    seconds, events per second. Goal: >= 50x real time, judged on the sampled load-balance (the
#    configuration docs/simulation.md recommends at this size; least-request ranks all 1,000
#    replicas on every decision and is shown for comparison).
#  - 10,000 replicas behind 5 gateways (bench/sim/speed-10000.yaml): one simulated hour in
#    <= 30 minutes on one core, estimated at full load from two runs, 60 and 120 s of arrivals
#    (their difference is 60 simulated seconds at full load: warm-up and drain cancel out); peak
#    memory <= 4 GB.
# Each run is one process pinned to one core (the last, with taskset; runs that the scheduler
# moves between cores spread further); nothing else should run on the machine meanwhile.
#   SPEED_RUNS=3      runs of the 1,000-replica scenario (medians)
#   SPEED_10K=1       0: skip the 10,000-replica part (it takes about 3 minutes)
#   SPEED_CPU=N       the core to pin the runs to (default: the last; "none": not pinned)
#   SPEED_BASELINE=path/to/switchyard   another build to compare with: its runs alternate with
#                     this build's (A B, then B A), and the ratios of each pair are printed
#   SPEED_OUT=build/bench-sim-speed   SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${SPEED_OUT:-$root/build/bench-sim-speed}"
runs="${SPEED_RUNS:-3}"
big="${SPEED_10K:-1}"
[ -x "$bin" ] || { echo "bench-sim-speed: $bin not found; run make build" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-sim-speed: python3 not found" >&2; exit 1; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-sim-speed: SPEED_RUNS must be >= 1" >&2; exit 2; }
baseline="${SPEED_BASELINE:-}"
if [ -n "$baseline" ] && [ ! -x "$baseline" ]; then
  echo "bench-sim-speed: SPEED_BASELINE=$baseline is not an executable" >&2
  exit 2
fi
mkdir -p "$out"
pin=()
cpu="${SPEED_CPU:-$(($(nproc) - 1))}"
if [ "$cpu" != none ] && command -v taskset >/dev/null; then
  [[ "$cpu" =~ ^[0-9]+$ ]] || { echo "bench-sim-speed: SPEED_CPU must be a core number or none" >&2; exit 2; }
  pin=(taskset -c "$cpu")
  echo "bench-sim-speed: runs pinned to core $cpu"
fi

simulate() {  # binary json scenario [options...]
  local binary="$1" json="$2" scenario="$3"
  shift 3
  echo "== $binary simulate --scenario $scenario $*"
  "${pin[@]}" "$binary" simulate --scenario "$root/$scenario" --no-progress --summary-json "$json" \
    "$@" >"${json%.json}.txt"
}
# This build's run (json), and the baseline's (baseline-json) when there is one, in the order
# given: "ab" this build first, "ba" the baseline first.
both() {  # order json scenario [options...]
  local order="$1" json="$2"
  shift 2
  if [ -z "$baseline" ]; then
    simulate "$bin" "$out/$json" "$@"
  elif [ "$order" = ab ]; then
    simulate "$bin" "$out/$json" "$@"
    simulate "$baseline" "$out/baseline-$json" "$@"
  else
    simulate "$baseline" "$out/baseline-$json" "$@"
    simulate "$bin" "$out/$json" "$@"
  fi
}

for i in $(seq "$runs"); do
  order=ab
  [ $((i % 2)) = 0 ] && order=ba
  both "$order" "speed-1000-run$i.json" bench/sim/speed-1000.yaml
done
if [ "$big" != 0 ]; then
  both ab speed-10000-60s.json bench/sim/speed-10000.yaml --duration 60
  both ba speed-10000-120s.json bench/sim/speed-10000.yaml --duration 120
fi

python3 - "$out" "$runs" "$big" "$baseline" <<'PY'
import json, statistics, sys
out, runs, big, baseline = sys.argv[1], int(sys.argv[2]), sys.argv[3] != "0", sys.argv[4]
def load(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)

small = [load(f"speed-1000-run{i}") for i in range(1, runs + 1)]
first = small[0]
print(f"\n{first['replicas']:,} replicas, {first['gateways']} gateways, 70 % load "
      f"(bench/sim/speed-1000.yaml), {runs} run(s), medians:")
print(f"{'strategy':<26} {'sim s':>6} {'wall s':>7} {'CPU s':>6} {'x real time':>11} "
      f"{'M events/s':>10}")
judged = None
for name in first["strategies"]:
    rows = [run["strategies"][name] for run in small]
    sim_s = statistics.median(r["simulated_seconds"] for r in rows)
    wall = statistics.median(r["wall_seconds"] for r in rows)
    cpu = statistics.median(r["cpu_seconds"] for r in rows)
    speed = statistics.median(r["simulated_seconds"] / r["wall_seconds"] for r in rows)
    rate = statistics.median(r["events"] / r["wall_seconds"] / 1e6 for r in rows)
    print(f"{name:<26} {sim_s:>6.0f} {wall:>7.1f} {cpu:>6.1f} {speed:>10.1f}x {rate:>10.2f}")
    if name.startswith("load-balance sample"):
        judged = (name, speed)
if judged:
    verdict = "PASS" if judged[1] >= 50 else "MISS"
    print(f"speed goal (>= 50x real time at 1,000 replicas, {judged[0]}): {verdict} "
          f"({judged[1]:.1f}x)")
    if baseline:
        def speed(run):
            r = run["strategies"][judged[0]]
            return r["simulated_seconds"] / r["wall_seconds"]
        base = [load(f"baseline-speed-1000-run{i}") for i in range(1, runs + 1)]
        ratios = [speed(a) / speed(b) for a, b in zip(small, base)]
        print(f"against the baseline ({baseline}): {statistics.median(map(speed, base)):.1f}x, "
              f"pair ratios (this build / baseline) "
              + " ".join(f"{r:.3f}" for r in ratios)
              + f", median {statistics.median(ratios):.3f}, faster in "
              f"{sum(r > 1 for r in ratios)} of {len(ratios)}")

if big:
    short, long = load("speed-10000-60s"), load("speed-10000-120s")
    print(f"\n{long['replicas']:,} replicas, {long['gateways']} gateways, 70 % load "
          f"(bench/sim/speed-10000.yaml):")
    for label, run in (("60 s of arrivals", short), ("120 s of arrivals", long)):
        print(f"  {label:<18} {run['simulated_seconds']:6.0f} simulated s in "
              f"{run['wall_seconds']:6.1f} wall s, {run['events'] / 1e6:5.1f} M events, "
              f"peak memory {run['peak_memory_mb']:.0f} MB")
    def hour_minutes(short, long):
        sim_delta = long["simulated_seconds"] - short["simulated_seconds"]
        wall_delta = long["wall_seconds"] - short["wall_seconds"]
        if sim_delta <= 0 or wall_delta <= 0:
            return None
        return wall_delta / sim_delta * 60, (long["events"] - short["events"]) / wall_delta / 1e6
    hour = hour_minutes(short, long)
    if hour:
        minutes, rate = hour
        print(f"  at full load: {minutes / 60:.2f} wall s per simulated s ({rate:.2f} M events/s)")
        print(f"hour goal (one simulated hour of 10,000 replicas in <= 30 min): "
              f"{'PASS' if minutes <= 30 else 'MISS'} ({minutes:.0f} min)")
    else:
        print("hour goal: not measured (the longer run was not slower: rerun on a quiet machine)")
    if baseline:
        base_hour = hour_minutes(load("baseline-speed-10000-60s"), load("baseline-speed-10000-120s"))
        if hour and base_hour:
            print(f"against the baseline: {base_hour[0]:.0f} min per simulated hour, ratio "
                  f"(baseline / this build) {base_hour[0] / hour[0]:.3f}")
        else:
            print("against the baseline: not measured (a longer run was not slower)")
    peak = max(short["peak_memory_mb"], long["peak_memory_mb"])
    print(f"memory goal (<= 4 GB at 10,000 replicas): {'PASS' if peak <= 4096 else 'MISS'} "
          f"({peak:.0f} MB peak)")
PY
