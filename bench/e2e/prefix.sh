#!/usr/bin/env bash
# Prefix-cache routing (`make bench-prefix`): eight emulated replicas of two GPU types with
# prefix caching on, four workloads (multi-turn chats with a growing history, long shared
# system prompts, RAG prompts repeating a few documents, llm-d's shared-context shape behind
# eight gateways at a fixed rate), strategies least-request, load-balance, session affinity,
# prefix-cache (approximate) and prefix-cache-precise (from the engines' KV events). TTFT
# p50/p99, E2E p99, the engines' prefix-cache hit rate and max ÷ mean in-flight per workload and
# strategy, ratios against load-balance, PASS/MISS against the chat goal and llm-d's (TTFT p90,
# throughput). Table in build/bench-prefix/prefix.txt, CSV, and a PNG when gnuplot is present.
# About 31 min with the defaults (3 workloads × 5 strategies × 40 s, llm-d's shape 5 × 150 s,
# plus starts and the requests still in flight at the end of each run).
#
# Environment (bench/e2e/prefix.py): PREFIX_GPUS=A10,A10,A10,A10,L20,L20,L20,L20
#   PREFIX_SECONDS=40 PREFIX_WARMUP=5 PREFIX_SEED=7 PREFIX_CHAT_USERS=40 PREFIX_SYSTEM_USERS=40
#   PREFIX_RAG_USERS=40 PREFIX_WORKLOADS=chat,system,rag,llmd (llmd: llm-d's shape, groups sharing
#   a 6,000-token context with 1,200-token questions; PREFIX_LLMD_GROUPS=0 (3/4 of the fleet's KV)
#   PREFIX_LLMD_USERS=1 per group; PREFIX_LLMD_RATE=5 requests/s open loop, 0: closed loop;
#   PREFIX_LLMD_GATEWAYS=8 PREFIX_LLMD_SECONDS=150 PREFIX_LLMD_WARMUP=20, each falling back to
#   PREFIX_GATEWAYS / PREFIX_SECONDS / PREFIX_WARMUP when those are set)
#   PREFIX_CACHE_KEYS="hot_spot_tokens: 2048" (extra routing.prefix_cache keys for every run)
#   PREFIX_STRATEGIES=least-request,load-balance,session,prefix-cache,prefix-cache-precise
#   (prefix-cache-precise: the engines publish KV events and the gateway routes on them)
#   PREFIX_WORKERS=1 (gateway workers: each learns its own index)
#   PREFIX_GATEWAYS=1 (gateway processes without shared state, each request to one at random)
#   PREFIX_OUT=build/bench-prefix SWITCHYARD=build/release/switchyard
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${SWITCHYARD:-$root/build/release/switchyard}"
out="${PREFIX_OUT:-$root/build/bench-prefix}"
[ -x "$bin" ] || { echo "prefix.sh: $bin not found; run make build" >&2; exit 1; }
mkdir -p "$out"

status=0
SWITCHYARD="$bin" PREFIX_OUT="$out" python3 "$root/bench/e2e/prefix.py" || status=$?

csv="$out/prefix.csv"
if ! command -v gnuplot >/dev/null; then
  echo "gnuplot not found (scripts/install-deps.sh installs gnuplot-nox): no plot"
  exit "$status"
fi
[ -s "$csv" ] || exit "$status"
data="$out/prefix-plot.dat"
# One row per workload, one column per strategy: TTFT p50 in ms.
awk -F, 'NR > 1 {
    if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 }
    if (!($2 in sseen)) { sseen[$2] = 1; sorder[m++] = $2 }
    v[$1, $2] = $5 * 1000
  }
  END {
    printf "workload"; for (j = 0; j < m; j++) printf " %s", sorder[j]; printf "\n"
    for (i = 0; i < n; i++) {
      printf "%s", order[i]; for (j = 0; j < m; j++) printf " %.1f", v[order[i], sorder[j]]
      printf "\n"
    }
  }' "$csv" > "$data"
columns=$(head -1 "$data" | wc -w)
png="$out/prefix.png"
gnuplot <<GNUPLOT
set terminal pngcairo size 1000,500 noenhanced
set output "$png"
set datafile separator " "
set key autotitle columnhead below
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set title "Switchyard prefix-cache benchmark: TTFT p50 (ms) per workload and strategy, 4x A10 + 4x L20, llama2-7b"
set yrange [0:*]
plot for [c=2:${columns}] "$data" using c:xtic(1)
GNUPLOT
echo "plot: $png"
exit "$status"
