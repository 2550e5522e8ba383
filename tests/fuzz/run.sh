#!/usr/bin/env bash
# Runs every libFuzzer target of the fuzz build for SECONDS each (default 20), from its committed
# corpus (tests/fuzz/corpus/<target>, read only) plus what earlier runs found
# (build/fuzz/corpus/<target>, where new inputs go). A crash, leak, timeout or out-of-memory
# in any target fails the run (the others still run); the input is kept in build/fuzz/artifacts/.
# Prints one line per target: runs, coverage, corpus size.
# FUZZ_TARGETS="a b": only these targets (names without _fuzz), e.g. to split a campaign over
# two cores with two runs side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-20}"
build=build/fuzz
mkdir -p "$build/artifacts"
status=0
for binary in "$build"/*_fuzz; do
  [ -x "$binary" ] || continue
  name=$(basename "$binary" _fuzz)
  if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then continue; fi
  mkdir -p "$build/corpus/$name"
  log="$build/$name.log"
  if "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$name-" "$build/corpus/$name" "tests/fuzz/corpus/$name" \
      >"$log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "fuzz $name: ${seconds}s, ${runs:-?} runs, ${cov:-cov: ?}, corpus $(ls "$build/corpus/$name" | wc -l) new"
  else
    code=$?
    echo "fuzz $name: FAILED (exit $code); see $log and $build/artifacts/"
    tail -40 "$log"
    status=$code
  fi
done
exit $status
