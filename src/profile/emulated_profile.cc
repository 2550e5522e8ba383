#include "profile/emulated_profile.h"

#include "engine/virtual_run.h"
#include "profile/step_stats.h"

namespace switchyard::profile {

std::vector<int> defaultPromptGrid() { return {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}; }
std::vector<int> defaultOutputGrid() { return {16, 32, 64, 128, 256, 512, 1024}; }

double unloadedE2eSeconds(const engine::PerfConfig& config, int prompt_tokens, int output_tokens) {
  const engine::VirtualArrival one{0, prompt_tokens, output_tokens};
  const auto outcome = engine::runVirtual(config, std::span(&one, 1));
  return outcome.front().done() ? outcome.front().e2eSeconds() : 0;
}

RawMeasurements sweepEmulated(const engine::PerfConfig& config,
                              const EmulatedSweepOptions& options) {
  RawMeasurements raw;
  raw.endpoint = "emulated:" + config.gpu;
  raw.model = config.model;
  const int64_t capacity = config.kvCapacityTokens();
  for (int output : options.outputs) {
    for (int prompt : options.prompts) {
      RawCell cell;
      cell.prompt_tokens = prompt;
      cell.output_tokens = output;
      cell.done = true;
      if (prompt + output > capacity) {
        raw.cells.push_back(std::move(cell));  // never fits: no steps, rate 0
        continue;
      }
      CellSweep sweep(options.sweep, unloadedE2eSeconds(config, prompt, output));
      while (const auto rate = sweep.nextRate()) {
        const int count = options.sweep.requestsFor(*rate);
        const int step = static_cast<int>(sweep.steps().size());
        const auto arrivals = engine::poissonArrivals(*rate, count, prompt, output,
                                                      stepSeed(options.seed, prompt, output, step));
        const auto outcomes = engine::runVirtual(config, arrivals);
        std::vector<RequestTiming> timings;
        timings.reserve(outcomes.size());
        for (const auto& o : outcomes) {
          timings.push_back({o.arrival, o.first_token, o.finished, o.output_tokens, false});
        }
        sweep.record(summarizeStep(timings, *rate));
      }
      cell.steps = sweep.steps();
      raw.cells.push_back(std::move(cell));
    }
  }
  return raw;
}

EmulatedSweepOptions defaultEmulatedSweep(const Slo& slo, uint64_t seed) {
  EmulatedSweepOptions options;
  options.prompts = defaultPromptGrid();
  options.outputs = defaultOutputGrid();
  options.sweep.min_requests = 200;
  options.sweep.max_requests = 1500;
  options.sweep.stop_slo = slo;
  options.seed = seed;
  return options;
}

GpuProfile emulatedGpuProfile(const engine::PerfConfig& config, const Slo& slo, uint64_t seed) {
  ProfileLabels labels;
  labels.gpu = config.gpu;
  labels.deployment = config.gpu;
  labels.model = config.model;
  GpuProfile built = buildProfile(sweepEmulated(config, defaultEmulatedSweep(slo, seed)), labels,
                                  slo);
  built.index();
  return built;
}

}  // namespace switchyard::profile
