// Micro-benchmarks for one routing decision at 8/64/512/4096 replicas, per strategy:
// ns/op and allocs/op (target 0 once the worker's scratch space has grown).
// Run: build/release/micro_bench --benchmark_filter=Route
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "engine/perf_profiles.h"
#include "fleet/fleet_registry.h"
#include "profile/emulated_profile.h"
#include "profile/slo_profiles.h"
#include "routing/router.h"

namespace switchyard {
namespace {

// Emulated llama2-7b profiles of the two GPU types the fleet has, P99 TPOT <= 50 ms, priced:
// built once (seconds), shared by every SLO benchmark.
std::shared_ptr<const profile::SloProfiles> sloProfiles() {
  static const std::shared_ptr<const profile::SloProfiles> profiles = [] {
    auto out = std::make_shared<profile::SloProfiles>();
    out->objective.tpot = 0.05;
    out->objective.percentile = 99;
    for (const char* gpu : {"L20", "A100"}) {
      out->gpus.push_back(gpu);
      out->profiles.push_back(profile::emulatedGpuProfile(
          engine::makePerfConfig(engine::builtinProfiles(), gpu, "llama2-7b"), out->objective));
      out->profiles.back().cost = out->gpus.size() == 1 ? 1.861 : 3.7;
    }
    return out;
  }();
  return profiles;
}

// warming_every > 0: every n-th replica joined 1 s ago and is inside its slow-start ramp.
// sample > 0: candidate sampling draws this many replicas per decision.
// draining_every > 0: every n-th replica is draining (excluded by the lifecycle filter).
// How a live decision is timed: steady_clock read before and after, as the worker does. With
// `evict`, every decision first walks a buffer larger than the core's L2 (2.5 MiB here), as a
// worker's parsing, syscalls and relaying between two requests do, so the decision starts with
// the fleet's state, the strategy's code data and the scratch space out of L1/L2.
enum class Timing { kLoop, kClockPerDecision, kClockAfterEviction };

// slo: the model has SLO profiles and the request a shape (512 prompt, 128 output tokens).
void routeBenchmark(benchmark::State& state, std::string_view strategy_name,
                    int warming_every = 0, uint32_t sample = 0, int draining_every = 0,
                    bool slo = false, Timing timing = Timing::kLoop) {
  const int replicas = static_cast<int>(state.range(0));
  fleet::ModelSpec model;
  model.name = "m";
  if (slo) model.slo = sloProfiles();
  model.candidate_sample = sample;
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
    auto& state = *entry.replicas[i].state;
    state.counters().running.store((i * 7919) % 13);
    state.counters().requests_total.store(100);
    state.counters().output_tokens_total.store(20000);
    state.counters().input_tokens_total.store(50000);
    fleet::EngineSignals signals;
    signals.running = 3;
    signals.waiting = 1;
    signals.kv_usage = 0.1 * (i % 9);
    state.storeSignals(signals, 0);
    if (i % 5) {
      state.storeCapacity(
          {1000.0 + 37 * (i % 11), 8000.0 + 11 * (i % 7), false, 0.01 + 0.002 * (i % 13)});
    }
    if (warming_every > 0 && i % warming_every == 0) state.markReady(-kNsPerSec);
    if (draining_every > 0 && i % draining_every == 1) {
      state.storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
    }
  }
  fleet::refreshLearnedMeans(entry);  // as the control plane does after a capacity refresh
  routing::StrategySpec spec;
  routing::parseStrategySpec(strategy_name, spec);
  routing::RouteRequest request{&spec, 0, {}, {}};
  if (slo) {
    request.shape.prompt_tokens = 512;
    request.shape.max_tokens = 128;
  }
  Rng rng(1);
  routing::RoutingScratch scratch;
  routing::route(*snapshot, entry, request, rng, scratch);  // grow the scratch space once

  bench::AllocCounter allocs;
  if (timing == Timing::kLoop) {
    for (auto _ : state) {
      routing::Decision d = routing::route(*snapshot, entry, request, rng, scratch);
      benchmark::DoNotOptimize(d.chosen);
    }
    allocs.report(state);
    return;
  }
  std::vector<uint64_t> evictor(timing == Timing::kClockAfterEviction ? (8u << 20) / 8 : 0);
  uint64_t sink = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < evictor.size(); i += 8) sink += ++evictor[i];  // one write per line
    const auto started = std::chrono::steady_clock::now();
    routing::Decision d = routing::route(*snapshot, entry, request, rng, scratch);
    benchmark::DoNotOptimize(d.chosen);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  benchmark::DoNotOptimize(sink);
}

void BM_RouteRandom(benchmark::State& state) { routeBenchmark(state, "random"); }
void BM_RouteRoundRobin(benchmark::State& state) { routeBenchmark(state, "round-robin"); }
void BM_RouteLeastRequest(benchmark::State& state) { routeBenchmark(state, "least-request"); }
void BM_RouteLeastKvCache(benchmark::State& state) { routeBenchmark(state, "least-kv-cache"); }
void BM_RouteLoadBalance(benchmark::State& state) { routeBenchmark(state, "load-balance"); }
void BM_RouteShapeAware(benchmark::State& state) {
  routeBenchmark(state, "load-balance-shape-aware");
}
void BM_RouteBlend(benchmark::State& state) {
  routeBenchmark(state, "least-request:1,least-kv-cache:1");
}

BENCHMARK(BM_RouteRandom)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteRoundRobin)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLeastRequest)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLeastKvCache)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLoadBalance)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteShapeAware)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteBlend)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

// least-request-top-k (top-K picker), and slow start with a tenth of the fleet warming.
void BM_RouteLeastRequestTopK(benchmark::State& state) {
  routeBenchmark(state, "least-request-top-k");
}
void BM_RouteLeastRequestTopKWarming(benchmark::State& state) {
  routeBenchmark(state, "least-request-top-k", 10);
}
void BM_RouteLoadBalanceWarming(benchmark::State& state) {
  routeBenchmark(state, "load-balance", 10);
}
BENCHMARK(BM_RouteLeastRequestTopK)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

// Candidate sampling: 32 replicas drawn per decision, whatever the fleet's size.
void BM_RouteLoadBalanceSample32(benchmark::State& state) {
  routeBenchmark(state, "load-balance", 0, 32);
}
void BM_RouteLeastRequestSample32(benchmark::State& state) {
  routeBenchmark(state, "least-request", 0, 32);
}
BENCHMARK(BM_RouteLoadBalanceSample32)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLeastRequestSample32)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLeastRequestTopKWarming)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

// A tenth of the fleet draining (scale-down in progress): the filter pass records them as
// excluded; the decision stays allocation-free.
void BM_RouteLeastRequestDraining(benchmark::State& state) {
  routeBenchmark(state, "least-request", 0, 0, 10);
}
void BM_RouteLoadBalanceDraining(benchmark::State& state) {
  routeBenchmark(state, "load-balance", 0, 0, 10);
}
BENCHMARK(BM_RouteLeastRequestDraining)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLoadBalanceDraining)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);
BENCHMARK(BM_RouteLoadBalanceWarming)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

// SLO routing: per candidate a profile prediction at its load, the learned correction and the
// GPU type's cost per request for the shape.
void BM_RouteSloLeastLoad(benchmark::State& state) {
  routeBenchmark(state, "slo-least-load", 0, 0, 0, true);
}
void BM_RouteSloPackLoad(benchmark::State& state) {
  routeBenchmark(state, "slo-pack-load", 0, 0, 0, true);
}
BENCHMARK(BM_RouteSloLeastLoad)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

// The live figure (switchyard_routing_decision_seconds) against the loop above: the same
// decision timed by two clock reads, with warm caches and after evicting L1/L2.
void BM_RouteLoadBalanceClocked(benchmark::State& state) {
  routeBenchmark(state, "load-balance", 0, 0, 0, false, Timing::kClockPerDecision);
}
void BM_RouteLoadBalanceClockedCold(benchmark::State& state) {
  routeBenchmark(state, "load-balance", 0, 0, 0, false, Timing::kClockAfterEviction);
}
void BM_RouteLeastRequestClockedCold(benchmark::State& state) {
  routeBenchmark(state, "least-request", 0, 0, 0, false, Timing::kClockAfterEviction);
}
BENCHMARK(BM_RouteLoadBalanceClocked)->Arg(2)->Arg(8)->Arg(64)->UseManualTime();
// Each cold decision walks 8 MiB first (about a millisecond): a fixed count keeps it short.
BENCHMARK(BM_RouteLoadBalanceClockedCold)
    ->Arg(2)->Arg(8)->Arg(64)->UseManualTime()->Iterations(4000);
BENCHMARK(BM_RouteLeastRequestClockedCold)
    ->Arg(2)->Arg(8)->Arg(64)->UseManualTime()->Iterations(4000);
BENCHMARK(BM_RouteSloPackLoad)->Arg(8)->Arg(64)->Arg(512)->Arg(4096);

// Candidate sampling from caches the traffic between decisions has emptied: each of the 32
// drawn replicas' states is a miss, fetched together or one after another.
void BM_RouteLoadBalanceSample32ClockedCold(benchmark::State& state) {
  routeBenchmark(state, "load-balance", 0, 32, 0, false, Timing::kClockAfterEviction);
}
BENCHMARK(BM_RouteLoadBalanceSample32ClockedCold)
    ->Arg(512)->Arg(4096)->Arg(16384)->UseManualTime()->Iterations(4000);

}  // namespace
}  // namespace switchyard
