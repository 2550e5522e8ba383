// Rebuilding the fleet snapshot at scale: a reload or a discovery change with N replicas.
// Run: build/release/micro_bench --benchmark_filter='FleetRebuild|ControlPlaneRebuild'
//
// BM_FleetRebuild/N/0: a reload that keeps every replica (ReplicaStates reused, the snapshot
// built anew); /N/1: the first fleet (every ReplicaState created). BM_ControlPlaneRebuild/N is
// what the gateway does on a change: the registry, then the scraper and the health manager
// catching up. Each reports heap bytes per replica held by what it built (mallinfo2).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "fleet/fleet_registry.h"
#include "fleet/telemetry_scraper.h"
#include "health/health_manager.h"

namespace switchyard {
namespace {

std::vector<fleet::ModelSpec> fleetOf(int replicas) {
  static const char* kGpus[] = {"A10", "L20", "A100", "H100"};
  std::vector<fleet::ModelSpec> models(1);
  models[0].name = "llama2-7b";
  models[0].routing_strategy = "load-balance";
  for (int i = 0; i < replicas; ++i) {
    fleet::ReplicaSpec spec;
    spec.address = "10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) +
                   "." + std::to_string(i % 256) + ":8000";
    spec.labels = {{"gpu", kGpus[i % 4]}, {"engine", "vllm"}};
    models[0].replicas.push_back(std::move(spec));
  }
  return models;
}

size_t heapInUse() { return mallinfo2().uordblks; }

void BM_FleetRebuild(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool fresh = state.range(1) != 0;
  const auto models = fleetOf(n);
  fleet::FleetRegistry kept;
  kept.apply(models, 300 * kNsPerMs, "least-request");
  for (auto _ : state) {
    if (fresh) {
      state.PauseTiming();
      auto registry = std::make_unique<fleet::FleetRegistry>();
      state.ResumeTiming();
      registry->apply(models, 300 * kNsPerMs, "least-request");
      state.PauseTiming();
      registry.reset();
      state.ResumeTiming();
    } else {
      kept.apply(models, 300 * kNsPerMs, "least-request", 1.0, 1);
    }
  }
  const size_t before = heapInUse();
  {
    fleet::FleetRegistry registry;
    registry.apply(models, 300 * kNsPerMs, "least-request");
    state.counters["bytes/replica"] =
        static_cast<double>(heapInUse() - before) / static_cast<double>(n);
  }
}
BENCHMARK(BM_FleetRebuild)
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);

void BM_ControlPlaneRebuild(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto models = fleetOf(n);
  auto changed = models;
  changed[0].replicas.pop_back();  // a discovery change: one replica left
  boost::asio::io_context io(1);
  const size_t before = heapInUse();
  fleet::FleetRegistry registry;
  fleet::TelemetryScraper scraper(io, SteadyClock::instance(), 100 * kNsPerMs);
  health::HealthManager health(io, SteadyClock::instance(), health::HealthSettings{});
  registry.apply(models, 300 * kNsPerMs, "least-request");
  scraper.sync(registry.replicas());
  health.sync(registry.latest());
  state.counters["bytes/replica"] =
      static_cast<double>(heapInUse() - before) / static_cast<double>(n);
  bool flip = false;
  for (auto _ : state) {
    flip = !flip;
    registry.apply(flip ? changed : models, 300 * kNsPerMs, "least-request", 1.0, 1);
    scraper.sync(registry.replicas());
    health.sync(registry.latest());
  }
  scraper.stopAll();
  health.stopAll();
}
BENCHMARK(BM_ControlPlaneRebuild)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace switchyard
