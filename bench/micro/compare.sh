#!/usr/bin/env bash
# Before/after for micro-benchmarks on a noisy machine: runs two micro_bench binaries
# alternately, ROUNDS times each, and prints each benchmark's median CPU time per binary and
# the ratio after/before. Alternating spreads the machine's slow and fast phases over both.
#
#   bench/micro/compare.sh BEFORE_BINARY AFTER_BINARY [FILTER] [ROUNDS]
#   e.g. bench/micro/compare.sh /tmp/micro_bench.before build/release/micro_bench 'Route.*/64$' 7
#
# Build BEFORE_BINARY from the older commit in a separate worktree and copy it aside.
set -euo pipefail
before=${1:?before binary}
after=${2:?after binary}
filter=${3:-Route}
rounds=${4:-5}
min_time=${COMPARE_MIN_TIME:-0.2}

for ((r = 1; r <= rounds; r++)); do
  for side in before after; do
    binary=$before
    [[ $side == after ]] && binary=$after
    "$binary" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
      --benchmark_format=csv 2>/dev/null |
      awk -F, -v side="$side" '$1 ~ /^"BM_/ { gsub(/"/, "", $1); print side, $1, $4 }'
  done
done | python3 -c '
import collections, statistics, sys
times = collections.defaultdict(list)
for line in sys.stdin:
    side, name, cpu = line.split()
    times[name, side].append(float(cpu))
print("%-44s %11s %11s %13s" % ("benchmark", "before ns", "after ns", "after/before"))
for name in sorted({n for n, _ in times}):
    b = statistics.median(times[name, "before"])
    a = statistics.median(times[name, "after"])
    print(f"{name:44} {b:11.0f} {a:11.0f} {a / b:13.3f}")
'
