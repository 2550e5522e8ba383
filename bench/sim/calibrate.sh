#!/usr/bin/env bash
# The engine model against published measurements (docs/engine-emulator.md, "Calibration"):
# runs every scenario of bench/sim/calibration/ through `switchyard simulate` and prints each
# published figure next to the emulated one, with the error. Exit status 1 when a figure is off
# by more than CALIBRATE_TOLERANCE (15 %).
#   CALIBRATE_OUT=build/bench-sim-calibration  SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${CALIBRATE_OUT:-$root/build/bench-sim-calibration}"
tolerance="${CALIBRATE_TOLERANCE:-0.15}"
[ -x "$bin" ] || { echo "calibrate: $bin not found; run make build" >&2; exit 1; }
mkdir -p "$out"
for scenario in "$root"/bench/sim/calibration/*.yaml; do
  name="$(basename "$scenario" .yaml)"
  "$bin" simulate --scenario "$scenario" --summary-json "$out/$name.json" --no-progress \
    --no-routing-timer >"$out/$name.txt"
done
python3 - "$out" "$tolerance" <<'PY'
import json, sys
out, tolerance = sys.argv[1], float(sys.argv[2])
def run(name):
    with open(f"{out}/{name}.json") as f:
        data = json.load(f)
    return next(iter(data["strategies"].values()))
def rps(r): return r["ok"] / r["simulated_seconds"]
def tps(r): return r["output_tokens"] / r["simulated_seconds"]
# (scenario, figure, published, how to read it, source)
figures = [
    ("sglang-vllm060-a100-4rps", "A100 4 req/s: median TTFT (ms)", 100.48, lambda r: r["ttft_p50_ms"]),
    ("sglang-vllm060-a100-4rps", "A100 4 req/s: median TPOT (ms)", 14.14, lambda r: r["tpot_p50_ms"]),
    ("sglang-vllm060-a100-8rps", "A100 8 req/s: median TTFT (ms)", 120.39, lambda r: r["ttft_p50_ms"]),
    ("sglang-vllm060-a100-8rps", "A100 8 req/s: median TPOT (ms)", 17.09, lambda r: r["tpot_p50_ms"]),
    ("sglang-vllm060-a100-offline", "A100 5000 at once: requests/s", 21.27, rps),
    ("sglang-vllm060-a100-offline", "A100 5000 at once: output tokens/s", 4132.37, tps),
    ("lambda-h100-320", "H100 320 at once: requests/s", 29.5, rps),
    ("lambda-h100-320", "H100 320 at once: output tokens/s", 6027, tps),
    ("lambda-h100-320", "H100 320 at once: median TPOT (ms)", 20.0, lambda r: r["tpot_p50_ms"]),
    ("lambda-a100-320", "A100 320 at once: requests/s", 15.21, rps),
    ("lambda-a100-320", "A100 320 at once: output tokens/s", 3107, tps),
    ("lambda-a100-320", "A100 320 at once: median TPOT (ms)", 40.86, lambda r: r["tpot_p50_ms"]),
    ("lambda-a100-10", "A100 10 at once: median TTFT (ms)", 126.7, lambda r: r["ttft_p50_ms"]),
    ("lambda-a100-10", "A100 10 at once: median TPOT (ms)", 12.0, lambda r: r["tpot_p50_ms"]),
]
print(f"| figure | published | emulated | error |\n|---|---|---|---|")
worst = 0
for name, figure, published, read in figures:
    value = read(run(name))
    error = value / published - 1
    worst = max(worst, abs(error))
    print(f"| {figure} | {published:g} | {value:.1f} | {100 * error:+.1f} % |")
print(f"\nworst error {100 * worst:.1f} % (tolerance {100 * tolerance:.0f} %)")
sys.exit(1 if worst > tolerance else 0)
PY
