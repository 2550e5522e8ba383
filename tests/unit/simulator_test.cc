// The fleet simulator: deterministic, runs the production routing and health code, and reacts to
// its scenario's events the way the live system would.
#include "sim/simulator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "engine/openai_emulation.h"
#include "fleet/engine_signals.h"
#include "sim/capacity.h"
#include "sim/engine_telemetry.h"
#include "sim/scenario.h"

namespace switchyard::sim {
namespace {

// A 2x L20 + 2x A100 fleet at `rate` requests/s for `seconds`, plus `extra` YAML.
Scenario mixed(double rate, double seconds, const std::string& extra = "") {
  return parseScenario(fmt::format(R"(seed: 5
duration_s: {}
warmup_s: 5
fleet:
  - {{gpu: L20, count: 2}}
  - {{gpu: A100, count: 2}}
strategies: [least-request]
workload:
  arrivals: {{poisson: {{rate: {}}}}}
  mix:
    - {{prompt_tokens: [30, 200], output_tokens: [64, 192]}}
{})",
                                   seconds, rate, extra),
                       "test.yaml");
}

RunResult run(const Scenario& s, const std::string& strategy) {
  RunOptions options;
  options.strategy = strategy;
  return runSimulation(s, options);
}

const GroupStats& group(const RunResult& r, const std::string& label) {
  for (const GroupStats& g : r.groups) {
    if (g.label == label) return g;
  }
  throw std::runtime_error("no group " + label);
}

double share(const RunResult& r, const std::string& label) {
  return static_cast<double>(group(r, label).requests) /
         static_cast<double>(r.groups.back().requests);
}

TEST(SimulatorTest, TheSameScenarioGivesTheSameRun) {
  const Scenario s = mixed(20, 30);
  const RunResult a = run(s, "load-balance");
  const RunResult b = run(s, "load-balance");
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.simulated, b.simulated);
  ASSERT_EQ(a.groups.size(), 3u);
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].requests, b.groups[i].requests);
    EXPECT_EQ(a.groups[i].ttft_ms.percentile(99), b.groups[i].ttft_ms.percentile(99));
    EXPECT_EQ(a.groups[i].e2e_ms.percentile(50), b.groups[i].e2e_ms.percentile(50));
  }
  EXPECT_GT(a.groups.back().requests, 400);
  EXPECT_EQ(a.groups.back().ok(), a.groups.back().requests);  // nothing failed
}

TEST(SimulatorTest, LoadBalanceSendsMoreToTheFasterGpuThanRandom) {
  const Scenario s = mixed(28, 60);
  const RunResult random = run(s, "random");
  const RunResult balanced = run(s, "load-balance");
  EXPECT_NEAR(share(random, "A100"), 0.5, 0.05);
  EXPECT_GT(share(balanced, "A100"), share(random, "A100") + 0.05);
  // The A100s are learned as the faster type.
  EXPECT_GT(group(balanced, "A100").learned_capacity, group(balanced, "L20").learned_capacity);
  // The engine busy fractions are measured over the window.
  EXPECT_GT(group(random, "L20").busy(), 0.2);
  EXPECT_LE(group(random, "L20").busy(), 1.01);  // a step straddling the window's end
}

TEST(SimulatorTest, AFailedReplicaIsRetriedAroundAndExcludedThenComesBack) {
  const Scenario s = mixed(15, 40, R"(events:
  - {at_s: 10, fail_replica: 2}
  - {at_s: 25, recover_replica: 2}
)");
  const RunResult r = run(s, "least-request");
  EXPECT_GT(r.health_exclusions, 0);
  // Said why: the failures of the requests it was sent (or of the probes), nothing else.
  int64_t by_reason = 0;
  for (const auto& [reason, count] : r.health_exclusions_by_reason) {
    EXPECT_TRUE(reason == "request_failures" || reason == "probe_failures" ||
                reason == "half_open_failure")
        << reason;
    by_reason += count;
  }
  EXPECT_GT(by_reason, 0);
  const GroupStats& all = r.groups.back();
  // Requests cut mid-stream fail; the rest fail over or avoid the replica.
  EXPECT_GT(all.ok(), 0.97 * static_cast<double>(all.requests));
  // After it recovers the replica serves again: requests in the last seconds reached it.
  int64_t a100_late = 0;
  for (const SecondRow& row : r.seconds) {
    if (row.group == "A100" && row.second >= 32 && row.second < 40) a100_late += row.completed;
  }
  EXPECT_GT(a100_late, 10);
}

TEST(SimulatorTest, AKilledGatewayCutsItsRequestsAndTheOthersCarryOn) {
  const Scenario s = mixed(15, 30, R"(gateways: {count: 3}
events:
  - {at_s: 12, kill_gateway: 1}
)");
  const RunResult r = run(s, "least-request");
  const GroupStats& all = r.groups.back();
  EXPECT_GT(all.outcomes[static_cast<size_t>(Outcome::kUpstreamFailed)], 0);
  EXPECT_GT(all.ok(), 0.9 * static_cast<double>(all.requests));
}

TEST(SimulatorTest, ARedisOutageDegradesSharedLimitsToLocalDecisions) {
  const Scenario s = mixed(15, 30, R"(gateways:
  count: 2
  limits: {max_inflight_per_replica: 40}
events:
  - {at_s: 10, redis_outage: {duration_s: 5}}
)");
  const RunResult r = run(s, "least-request");
  EXPECT_GT(r.shared_state_degraded, 0);
  EXPECT_EQ(r.groups.back().ok(), r.groups.back().requests);
}

TEST(SimulatorTest, InflightLimitsRefuseWhatTheFleetCannotTake) {
  const Scenario s = mixed(80, 20, R"(gateways:
  limits: {max_inflight_per_replica: 8}
)");
  const RunResult r = run(s, "least-request");
  const GroupStats& all = r.groups.back();
  EXPECT_GT(all.outcomes[static_cast<size_t>(Outcome::kInflightLimit)], 0);
  // No engine ever holds more than its limit.
  for (const SecondRow& row : r.seconds) {
    if (row.group != "all") {
      EXPECT_LE(row.running + row.waiting, 8.0 * 2) << row.second;
    }
  }
}

TEST(SimulatorTest, AddedReplicasAreEasedInBySlowStart) {
  // Least-request sends a new, empty replica everything until it catches up; top-K with slow
  // start ramps it up: its queue stays shorter.
  const std::string extra = R"(gateways: {count: 3, sync_interval_ms: 200}
events:
  - {at_s: 15, add_replicas: {gpu: A100, count: 1}}
)";
  const Scenario s = mixed(26, 25, extra);
  auto newReplicaPeak = [&](const std::string& strategy) {
    const RunResult r = run(s, strategy);
    int peak = 0;
    for (const SecondRow& row : r.seconds) {
      if (row.group == "A100" && row.second >= 15 && row.second <= 18) {
        peak = std::max(peak, row.max_waiting);
      }
    }
    return peak;
  };
  EXPECT_GE(newReplicaPeak("least-request"), newReplicaPeak("least-request-top-k"));
}

// The mixed fleet plus an H100 group that starts empty and gets two replicas at 10 s, which
// take `startup_s` to start.
Scenario withStartingH100s(int startup_s) {
  return parseScenario(fmt::format(R"(seed: 5
duration_s: 30
warmup_s: 5
fleet:
  - {{gpu: L20, count: 2}}
  - {{gpu: A100, count: 2}}
  - {{gpu: H100, count: 0, startup_s: {}}}
strategies: [least-request]
workload:
  arrivals: {{poisson: {{rate: 14}}}}
  mix:
    - {{prompt_tokens: [30, 200], output_tokens: [64, 192]}}
events:
  - {{at_s: 10, add_replicas: {{gpu: H100, count: 2}}}}
)",
                                   startup_s),
                       "test.yaml");
}

TEST(SimulatorTest, AddedReplicasServeOnlyAfterTheirStartUpButArePaidFromTheStart) {
  // Tokens the H100s produced in seconds [from, to), and whether they were counted in the fleet
  // throughout.
  auto h100 = [](const RunResult& r, int64_t from, int64_t to, bool& counted) {
    int64_t tokens = 0;
    counted = true;
    for (const SecondRow& row : r.seconds) {
      if (row.group != "H100" || row.second < from || row.second >= to) continue;
      tokens += row.output_tokens;
      counted = counted && row.replicas == 2;
    }
    return tokens;
  };
  bool counted = false;
  const RunResult at_once = run(withStartingH100s(0), "least-request");
  EXPECT_DOUBLE_EQ(at_once.added.at_s, 10.0);
  EXPECT_GT(h100(at_once, 11, 16, counted), 0);

  const RunResult starting = run(withStartingH100s(6), "least-request");
  EXPECT_DOUBLE_EQ(starting.added.at_s, 16.0);  // the cohort is followed from when it joins
  EXPECT_EQ(h100(starting, 10, 16, counted), 0);
  EXPECT_TRUE(counted);  // in the fleet (paid for) while starting
  EXPECT_GT(h100(starting, 17, 25, counted), 0);
  EXPECT_GT(group(starting, "H100").requests, 0);
  EXPECT_LT(group(starting, "H100").requests, group(at_once, "H100").requests);
}

TEST(SimulatorTest, CapacityIsMeasuredPerGpuTypeAndLoadBecomesARate) {
  Scenario s = mixed(1, 20);
  s.capacity_seconds = 4;
  const std::vector<TypeCapacity> capacities = measureCapacities(s);
  ASSERT_EQ(capacities.size(), 2u);
  EXPECT_EQ(capacities[0].gpu, "L20");
  EXPECT_GT(capacities[1].tokens_per_s, 1.5 * capacities[0].tokens_per_s);  // A100 vs L20
  EXPECT_GT(capacities[0].busy, 0.95);                                      // saturated
  const double rate = rateForLoad(s, capacities, 0.5);
  const double tokens = 0.5 * 2 * (capacities[0].tokens_per_s + capacities[1].tokens_per_s);
  EXPECT_NEAR(rate * 128, tokens, 1e-6 * tokens);  // mean output tokens 128
}

TEST(SimulatorTest, EngineTelemetryIsTheMappingTheEmulatorsMetricsExport) {
  engine::EngineLoad load;
  load.running = 12;
  load.waiting = 3;
  load.kv_usage = 0.625;
  for (engine::Flavor flavor : {engine::Flavor::kVllm, engine::Flavor::kSglang}) {
    const fleet::EngineSignals scraped = fleet::parseEngineSignals(
        engine::renderMetrics(flavor, "m", load, engine::EngineCounters{}));
    const fleet::EngineSignals simulated = engineSignalsOf(load);
    EXPECT_EQ(scraped.running, simulated.running);
    EXPECT_EQ(scraped.waiting, simulated.waiting);
    EXPECT_EQ(scraped.kv_usage, simulated.kv_usage);
    EXPECT_EQ(scraped.hasCpuKvUsage(), simulated.hasCpuKvUsage());
  }
}

}  // namespace
}  // namespace switchyard::sim
