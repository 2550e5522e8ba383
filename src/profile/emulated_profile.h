// The profile sweep run against the engine model on a virtual clock (`gen-profile --emulated`):
// the same grid, the same CellSweep rates and the same step statistics as `switchyard profile`
// against an emulated engine over HTTP, with Poisson arrivals from a seed — no sockets, seconds
// instead of hours. Pure and deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/perf_profiles.h"
#include "profile/raw_profile.h"
#include "profile/sweep_plan.h"

namespace switchyard::profile {

struct EmulatedSweepOptions {
  std::vector<int> prompts;
  std::vector<int> outputs;
  SweepSettings sweep;
  uint64_t seed = 1;
};

// The default grid: powers of two, prompts 32…8192 and outputs 16…1024 (what fits the GPU's
// KV cache and the emulator's 32k context).
std::vector<int> defaultPromptGrid();
std::vector<int> defaultOutputGrid();

// The unloaded end-to-end time of one request alone on the engine, seconds.
double unloadedE2eSeconds(const engine::PerfConfig& config, int prompt_tokens, int output_tokens);

RawMeasurements sweepEmulated(const engine::PerfConfig& config,
                              const EmulatedSweepOptions& options);

// The options `gen-profile --emulated` starts from: the default grid, and more requests per step
// than an HTTP sweep (virtual time is cheap), stopping each cell's ladder once `slo` breaks.
EmulatedSweepOptions defaultEmulatedSweep(const Slo& slo, uint64_t seed = 1);

// A whole profile of the engine model on `config`'s GPU at `slo` (the default sweep): what SLO
// routing uses for `profiles: { GPU: emulated }`. About a second per GPU type; start-up only.
GpuProfile emulatedGpuProfile(const engine::PerfConfig& config, const Slo& slo,
                              uint64_t seed = 1);

}  // namespace switchyard::profile
