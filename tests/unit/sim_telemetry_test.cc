// The simulator's telemetry is the gateway's: adaptive periods (fleet/scrape_schedule.h) and,
// with shared state, each replica scraped by one gateway and shared with the others
// (gateway/telemetry_share.h), which moves a dead gateway's replicas once its heartbeat expires
// and stops while Redis is away.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "sim/scenario.h"
#include "sim/simulator.h"

namespace switchyard::sim {
namespace {

constexpr int kReplicas = 4;
constexpr double kIntervalsPerSecond = 10;  // scrape_interval_ms: 100

// 2x L20 + 2x A100 behind `gateways` gateways at `rate` requests/s for 20 s, plus `extra` YAML
// under `gateways:` and after it.
RunResult run(int gateways, double rate, const std::string& gateway_keys,
              const std::string& extra = "") {
  const Scenario s = parseScenario(fmt::format(R"(seed: 5
duration_s: 20
warmup_s: 2
fleet: [{{gpu: L20, count: 2}}, {{gpu: A100, count: 2}}]
strategies: [load-balance]
gateways:
  count: {}
{}
workload:
  arrivals: {{poisson: {{rate: {}}}}}
  mix:
    - {{prompt_tokens: [30, 200], output_tokens: [64, 192]}}
{})",
                                               gateways, gateway_keys, rate, extra),
                                   "test.yaml");
  RunOptions options;
  options.strategy = "load-balance";
  return runSimulation(s, options);
}

// Scrapes per replica per scrape interval of the run.
double scrapesPerReplicaInterval(const RunResult& r) {
  return static_cast<double>(r.scrapes) /
         (kReplicas * kIntervalsPerSecond * static_cast<double>(r.simulated) / 1e9);
}

const std::string kFixedPeriods = "  telemetry: {adaptive: false}\n";

TEST(SimTelemetryTest, GatewaysSharingStateScrapeEachReplicaOnceBetweenThem) {
  const RunResult shared = run(3, 10, kFixedPeriods);
  EXPECT_NEAR(scrapesPerReplicaInterval(shared), 1.0, 0.05);
  EXPECT_GT(shared.telemetry_fresh_ratio, 0.99);  // the other two read what the owner shares

  const RunResult apart = run(3, 10, kFixedPeriods + "  telemetry_sharing: false\n");
  EXPECT_NEAR(scrapesPerReplicaInterval(apart), 3.0, 0.15);
  EXPECT_GT(apart.telemetry_fresh_ratio, 0.99);

  const RunResult alone = run(3, 10, kFixedPeriods + "  shared_state: false\n");
  EXPECT_NEAR(scrapesPerReplicaInterval(alone), 3.0, 0.15);
}

TEST(SimTelemetryTest, AnIdleFleetIsScrapedAtTheStableStretch) {
  // Nearly no traffic: after three unchanged reads each replica goes to every second interval.
  const RunResult adaptive = run(1, 0.05, "");
  EXPECT_NEAR(scrapesPerReplicaInterval(adaptive), 0.5, 0.05);
  EXPECT_GT(adaptive.telemetry_fresh_ratio, 0.99);  // two intervals old at most: still fresh
  const RunResult fixed = run(1, 0.05, kFixedPeriods);
  EXPECT_NEAR(scrapesPerReplicaInterval(fixed), 1.0, 0.05);
}

TEST(SimTelemetryTest, ADeadGatewaysReplicasMoveToTheOthersWhenItsHeartbeatExpires) {
  // Gateway 1 dies at 5 s; its replicas go unscraped for the heartbeat (1 s: ten intervals,
  // at least a second), then the others take them.
  const RunResult r = run(3, 10, kFixedPeriods, "events:\n  - {at_s: 5, kill_gateway: 1}\n");
  const double simulated_s = static_cast<double>(r.simulated) / 1e9;
  const double expected = kReplicas * kIntervalsPerSecond * simulated_s;
  EXPECT_GT(static_cast<double>(r.scrapes), expected - kReplicas * kIntervalsPerSecond * 1.2);
  EXPECT_LT(static_cast<double>(r.scrapes), expected * 1.02);
  // While the heartbeat lasts, what gateway 1 scraped ages on the other two.
  EXPECT_LT(r.telemetry_fresh_ratio, 1.0);
  EXPECT_GT(r.telemetry_fresh_ratio, 0.9);
}

TEST(SimTelemetryTest, ARedisOutageMakesEveryGatewayScrapeEverythingUntilItEnds) {
  // Redis away for 5 s: after two intervals without rounds each gateway scrapes every replica.
  const RunResult r =
      run(3, 10, kFixedPeriods, "events:\n  - {at_s: 8, redis_outage: {duration_s: 5}}\n");
  const double simulated_s = static_cast<double>(r.simulated) / 1e9;
  const double outage_extra = 2 * kReplicas * kIntervalsPerSecond * (5 - 0.2);
  const double expected = kReplicas * kIntervalsPerSecond * simulated_s + outage_extra;
  EXPECT_NEAR(static_cast<double>(r.scrapes), expected, 0.05 * expected);
  EXPECT_GT(r.telemetry_fresh_ratio, 0.97);
}

TEST(SimTelemetryTest, TheTelemetryKeysAreTheGatewaysWithTheSameRules) {
  const auto error = [](const std::string& telemetry) -> std::string {
    try {
      parseScenario("duration_s: 5\nfleet: [{gpu: A100, count: 1}]\nstrategies: [random]\n"
                    "workload: {arrivals: {poisson: {rate: 1}}, mix: [{prompt_tokens: 10, "
                    "output_tokens: 10}]}\ngateways: {telemetry: " + telemetry + "}\n",
                    "t.yaml");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error("{stable_stretch: 3}").find("gateways.telemetry.stable_stretch"),
            std::string::npos);
  EXPECT_NE(error("{adaptiv: true}").find("gateways.telemetry.adaptiv"), std::string::npos);
  EXPECT_NE(error("fast").find("gateways.telemetry"), std::string::npos);
  EXPECT_EQ(error("{adaptive: false, hot_kv_usage: 0.8, scrape_interval_ms: 50}"), "");
}

}  // namespace
}  // namespace switchyard::sim
