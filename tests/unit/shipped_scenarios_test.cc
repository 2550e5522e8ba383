// The scenarios shipped under bench/sim/: every one loads, and bench/sim/demo-fleet.yaml is still
// the `make demo` fleet, mix and load (src/cli/demo_command.h's defaults), so that the simulated
// and the live demo can be compared (docs/simulation.md, "Validation").
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/demo_command.h"
#include "loadgen/load_generator.h"
#include "sim/scenario.h"

namespace switchyard::sim {
namespace {

const std::filesystem::path kSimDir = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "bench/sim";

TEST(ShippedScenariosTest, EveryScenarioUnderBenchSimLoads) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kSimDir)) {
    if (entry.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(loadScenarioFile(entry.path().string())) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 10);
}

TEST(ShippedScenariosTest, TheDemoFleetScenarioIsTheDemosDefaults) {
  const cli::DemoOptions demo;
  const Scenario s = loadScenarioFile((kSimDir / "demo-fleet.yaml").string());
  EXPECT_EQ(s.model, demo.model);
  EXPECT_EQ(s.seed, demo.seed);

  std::vector<std::string> gpus;
  for (const FleetGroup& group : s.fleet) gpus.insert(gpus.end(), group.count, group.gpu);
  EXPECT_EQ(gpus, demo.gpus);
  std::vector<std::string> strategies;
  for (const StrategyRun& run : s.strategies) strategies.push_back(run.strategy);
  EXPECT_EQ(strategies, demo.strategies);

  ASSERT_EQ(demo.loads.size(), 1u);
  EXPECT_EQ(s.workload.arrivals.kind, ArrivalSpec::Kind::kPoisson);
  EXPECT_DOUBLE_EQ(s.workload.arrivals.load, demo.loads[0]);
  EXPECT_EQ(s.warmup, static_cast<TimeNs>(demo.warmup_seconds * kNsPerSec));
  EXPECT_EQ(s.duration, static_cast<TimeNs>((demo.warmup_seconds + demo.seconds) * kNsPerSec));
  EXPECT_EQ(s.capacity_clients, demo.capacity_concurrency);
  EXPECT_DOUBLE_EQ(s.capacity_seconds, demo.capacity_seconds);
  EXPECT_DOUBLE_EQ(s.record.slo.tpot_ms, demo.slo_tpot_ms);
  EXPECT_DOUBLE_EQ(s.record.slo.ttft_ms, demo.slo_ttft_ms);
  // The demo's sped-up capacity learning (src/cli/demo_command.cc, the gateway's config).
  EXPECT_EQ(s.gateways.count, 1);
  EXPECT_EQ(s.gateways.capacity_refresh, 500 * kNsPerMs);
  EXPECT_EQ(s.gateways.capacity_window, 10 * kNsPerSec);
  EXPECT_EQ(s.gateways.capacity_time_constant, 3 * kNsPerSec);

  const std::vector<loadgen::RequestClass> mix = loadgen::defaultMix();
  ASSERT_EQ(s.workload.mix.size(), mix.size());
  for (size_t i = 0; i < mix.size(); ++i) {
    const RequestClass& c = s.workload.mix[i];
    EXPECT_EQ(c.name, mix[i].name);
    EXPECT_DOUBLE_EQ(c.weight, mix[i].weight);
    EXPECT_TRUE(c.prompt.words) << c.name;
    EXPECT_EQ(c.prompt.kind, TokenCount::Kind::kUniform) << c.name;
    EXPECT_EQ(c.prompt.a, mix[i].prompt_words_min) << c.name;
    EXPECT_EQ(c.prompt.b, mix[i].prompt_words_max) << c.name;
    EXPECT_EQ(c.output.kind, TokenCount::Kind::kUniform) << c.name;
    EXPECT_EQ(c.output.a, mix[i].max_tokens_min) << c.name;
    EXPECT_EQ(c.output.b, mix[i].max_tokens_max) << c.name;
  }
}

}  // namespace
}  // namespace switchyard::sim
