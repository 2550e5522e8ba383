// Micro-benchmarks for one routing decision at 8/64/512/4096 replicas, per strategy:
// ns/op and allocs/op (target 0 once the worker's scratch space has grown).
// Run: build/release/micro_bench --benchmark_filter=Route
#include <benchmark/benchmark.h>

#include <string>

#include "alloc_counter.h"
#include "fleet/fleet_registry.h"
#include "routing/router.h"

namespace switchyard {
namespace {

void routeBenchmark(benchmark::State& state, std::string_view strategy_name) {
  const int replicas = static_cast<int>(state.range(0));
  fleet::ModelSpec model{"m", "", {}};
  for (int i = 0; i < replicas; ++i) {
    model.replicas.push_back({"10.0." + std::to_string(i / 250) + "." +
                                  std::to_string(i % 250) + ":8000",
                              {{"gpu", i % 2 ? "A100" : "L20"}}});
  }
  fleet::FleetRegistry registry;
  registry.apply({model}, kNsPerSec, "least-request");
  auto snapshot = registry.latest();
  const fleet::ModelEntry& entry = snapshot->models[0];
  for (int i = 0; i < replicas; ++i) {
    entry.replicas[i].state->counters().running.store((i * 7919) % 13);
  }
  routing::RouteRequest request{routing::findStrategy(strategy_name), 0, -1};
  Rng rng(1);
  routing::RoutingScratch scratch;
  routing::route(*snapshot, entry, request, rng, scratch);  // grow the scratch space once

  bench::AllocCounter allocs;
  for (auto _ : state) {
    routing::Decision d = routing::route(*snapshot, entry, request, rng, scratch);
    benchmark::DoNotOptimize(d.chosen);
  }
  allocs.report(state);
}

void BM_RouteRandom(benchmark::State& state) { routeBenchmark(state, "random"); }
void BM_RouteRoundRobin(benchmark::State& state) { routeBenchmark(state, "round-robin"); }
void BM_RouteLeastRequest(benchmark::State& state) { routeBenchmark(state, "least-request"); }

BENCHMARK(BM_RouteRandom)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteRoundRobin)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLeastRequest)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

}  // namespace
}  // namespace switchyard
