// The optimizer's pieces: one MILP solve at 8 GPU types × 64 cells × 4 slices (goal: <= 100 ms),
// the profile lookups SLO routing calls per request, and the gateway's request-monitoring
// increment (hot path). Run: build/release/micro_bench --benchmark_filter='Optimizer|Profile|Load'
#include <benchmark/benchmark.h>

#include <cmath>
#include <deque>
#include <tuple>

#include "alloc_counter.h"
#include "core/rng.h"
#include "engine/perf_profiles.h"
#include "observe/load_recorder.h"
#include "optimizer/optimizer.h"
#include "profile/emulated_profile.h"
#include "profile/profile.h"

namespace switchyard {
namespace {

// A GPU type whose rate falls with prompt and output length; `speed` scales it, `prefill` makes
// long prompts dearer (so cheap types win short requests and dear ones long prompts).
profile::GpuProfile syntheticProfile(int index, double speed, double prefill, double cost) {
  profile::GpuProfile p;
  p.gpu = "gpu" + std::to_string(index);
  p.deployment = p.gpu;
  p.cost = cost;
  for (int o = 16; o <= 1024; o *= 2) p.outputs.push_back(o);
  for (int i = 32; i <= 8192; i *= 2) p.prompts.push_back(i);
  for (int o : p.outputs) {
    auto& row = p.tputs.emplace_back();
    for (int i : p.prompts) row.push_back(speed * 2000.0 / (o * 3.0 + i * prefill));
  }
  p.index();
  return p;
}

// `types` deployments (synthetic: costs proportional to speed^1.1, so every type costs about
// the same per request — a degenerate, hard case) or (emulated) profiles of the engine model's
// GPUs from gen-profile --emulated with illustrative prices; `cells` random shapes.
void solveBenchmark(benchmark::State& state, bool emulated) {
  const int types = static_cast<int>(state.range(0));
  const int cells = static_cast<int>(state.range(1));
  const int slices = static_cast<int>(state.range(2));
  std::deque<profile::GpuProfile> profiles;
  if (emulated) {
    // (GPU, tensor-parallel GPUs, $/h per replica): illustrative on-demand prices.
    static const std::deque<profile::GpuProfile> catalog = [] {
      const std::tuple<const char*, int, double> gpus[] = {
          {"A10", 1, 1.0},  {"L20", 1, 1.86},  {"V100", 1, 2.5}, {"A100", 1, 3.7},
          {"H100", 1, 6.9}, {"B200", 1, 11.0}, {"A10", 2, 2.0},  {"L20", 2, 3.7}};
      std::deque<profile::GpuProfile> out;
      for (auto [gpu, tp, cost] : gpus) {
        profile::EmulatedSweepOptions options;
        options.prompts = {32, 64, 128, 256, 512, 1024, 2048, 4096};
        options.outputs = {16, 32, 64, 128, 256, 512, 1024, 2048};
        options.sweep.stop_slo = profile::Slo{0, 0.1, 0, 99};
        options.sweep.min_requests = 100;
        options.sweep.max_requests = 300;
        const auto config = engine::makePerfConfig(engine::builtinProfiles(), gpu, "llama2-7b", tp);
        out.push_back(
            profile::buildProfile(profile::sweepEmulated(config, options),
                                  {std::string(gpu) + "x" + std::to_string(tp), gpu, "", cost, 0},
                                  options.sweep.stop_slo));
      }
      return out;
    }();
    profiles.assign(catalog.begin(), catalog.begin() + std::min<size_t>(types, catalog.size()));
  } else {
    for (int t = 0; t < types; ++t) {
      const double speed = 1 + t;
      profiles.push_back(
          syntheticProfile(t, speed, 1.0 / (1 + 0.5 * t), 0.6 * std::pow(speed, 1.1)));
    }
  }
  optimizer::MixProblem problem;
  problem.slice_factor = slices;
  for (const auto& p : profiles) {
    problem.deployments.push_back({p.deployment, p.cost, 0, 40, 0, &p});
  }
  Rng rng(42);
  for (int c = 0; c < cells; ++c) {
    // Shapes on each profile set's grid: prompts 32…8192 / outputs 16…1024 (synthetic),
    // prompts 32…4096 / outputs 16…2048 (emulated).
    const double prompt = 32.0 * std::exp2(rng.below(emulated ? 8 : 9));
    const double output = 16.0 * std::exp2(rng.below(emulated ? 8 : 7));
    problem.cells.push_back({prompt, output, 0.05 + 2 * rng.uniform01()});
  }
  optimizer::SolveOptions options;
  options.time_limit = 5 * kNsPerSec;
  int64_t optimal = 0;
  for (auto _ : state) {
    const optimizer::Recommendation r = optimizer::recommend(problem, options);
    optimal += r.status == optimizer::SolveStatus::kOptimal;
    benchmark::DoNotOptimize(r.cost);
  }
  state.counters["optimal_share"] =
      static_cast<double>(optimal) / static_cast<double>(state.iterations());
}

void BM_OptimizerSolve(benchmark::State& state) { solveBenchmark(state, false); }
BENCHMARK(BM_OptimizerSolve)
    ->Args({2, 16, 4})
    ->Args({8, 64, 4})
    ->Args({8, 64, 8})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_OptimizerSolveEmulatedGpus(benchmark::State& state) { solveBenchmark(state, true); }
BENCHMARK(BM_OptimizerSolveEmulatedGpus)
    ->Args({8, 64, 4})
    ->Args({8, 64, 8})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_ProfileMaxRate(benchmark::State& state) {
  const profile::GpuProfile p = syntheticProfile(0, 2, 1, 1);
  bench::AllocCounter allocs;
  double prompt = 40;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p.maxRate(prompt, 123));
    prompt = prompt > 6000 ? 40 : prompt * 1.37;
  }
  allocs.report(state);
}
BENCHMARK(BM_ProfileMaxRate);

// The gateway's hot-path cost of request monitoring: bucket the shape, one relaxed increment.
void BM_LoadRecord(benchmark::State& state) {
  observe::LoadRecorder recorder;
  observe::LoadBlock* block = recorder.block(0);
  bench::AllocCounter allocs;
  int64_t prompt = 37;
  for (auto _ : state) {
    block->completed(prompt, 211);
    prompt = prompt > 60000 ? 37 : prompt * 3 / 2;
  }
  allocs.report(state);
}
BENCHMARK(BM_LoadRecord);

}  // namespace
}  // namespace switchyard
