// The simulated gateway's admission queue (off / fifo / deadline, as the live `admission:`) and
// the simulator's autoscaling with the optimizer's interval decisions.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "sim/scenario.h"
#include "sim/simulator.h"

namespace switchyard::sim {
namespace {

// Two A100s at 4 streams each, offered far more than they serve for 20 s; every client gives up
// (and says so) after `deadline_s`.
Scenario surge(const std::string& admission, double deadline_s, double rate = 60) {
  return parseScenario(fmt::format(R"(seed: 3
duration_s: 20
warmup_s: 1
drain_s: 30
fleet:
  - {{gpu: A100, count: 2}}
strategies: [least-request]
gateways:
  limits: {{max_inflight_per_replica: 4}}
  admission: {}
workload:
  arrivals: {{poisson: {{rate: {}}}}}
  mix:
    - {{prompt_tokens: [50, 400], output_tokens: [100, 400], deadline_s: {}}}
)",
                                   admission, rate, deadline_s),
                       "test.yaml");
}

RunResult run(const Scenario& s) {
  RunOptions options;
  options.strategy = s.strategies.front().strategy;
  return runSimulation(s, options);
}

int64_t outcome(const RunResult& r, Outcome o) {
  return r.groups.back().outcomes[static_cast<size_t>(o)];
}

TEST(SimAdmissionTest, WithoutAQueueASaturatedFleetRefusesAtOnce) {
  const RunResult r = run(surge("{queue: off}", 10));
  EXPECT_GT(outcome(r, Outcome::kInflightLimit), 0);
  EXPECT_EQ(r.gateway_queue_max, 0);
  EXPECT_EQ(outcome(r, Outcome::kQueueFull) + outcome(r, Outcome::kQueueTimeout) +
                outcome(r, Outcome::kDeadlineUnattainable),
            0);
}

TEST(SimAdmissionTest, AFifoQueueHoldsWhatTheFleetCannotTakeBoundedByCountAndAge) {
  const RunResult fifo = run(surge("{queue: fifo, max_queued: 100000, max_wait_ms: 3000}", 60));
  EXPECT_EQ(outcome(fifo, Outcome::kInflightLimit), 0);
  EXPECT_GT(fifo.gateway_queue_max, 0);
  EXPECT_GT(outcome(fifo, Outcome::kQueueTimeout), 0);  // waited max_wait
  EXPECT_GT(fifo.groups.back().ok(), 0);
  const RunResult small = run(surge("{queue: fifo, max_queued: 5, max_queued_per_client: 5}", 60));
  EXPECT_LE(small.gateway_queue_max, 5);
  EXPECT_GT(outcome(small, Outcome::kQueueFull), 0);
}

TEST(SimAdmissionTest, ClientsThatGiveUpWhileQueuedCostTheEnginesNothing) {
  // One replica, one request at a time, ten long requests at once whose clients give up after
  // 2 s: the first is cut at the engine, the other nine leave the queue without reaching it.
  const Scenario s = parseScenario(R"(seed: 1
duration_s: 5
drain_s: 10
fleet: [{gpu: A100, count: 1}]
strategies: [least-request]
gateways:
  limits: {max_inflight_per_replica: 1}
  admission: {queue: fifo}
workload:
  bursts: [{at_s: 1, count: 10}]
  mix: [{prompt_tokens: 100, output_tokens: 4000, deadline_s: 2}]
)",
                                   "test.yaml");
  const RunResult r = run(s);
  EXPECT_EQ(outcome(r, Outcome::kDeadline), 10);
  EXPECT_EQ(r.wasted_requests, 1);
  EXPECT_GT(r.wasted_tokens, 0);
}

// One A100 at 4 streams; 20 clients send 2 requests/s between them and, at 2 s, client 7 sends
// 200 at once. `per_client` is the gateway's max_queued_per_client.
Scenario hog(int per_client) {
  return parseScenario(fmt::format(R"(seed: 5
duration_s: 10
warmup_s: 0
drain_s: 120
fleet: [{{gpu: A100, count: 1}}]
strategies: [least-request]
gateways:
  limits: {{max_inflight_per_replica: 4}}
  admission: {{queue: fifo, max_queued: 1000, max_queued_per_client: {}, max_wait_ms: 600000}}
workload:
  arrivals: {{poisson: {{rate: 2}}}}
  clients: 20
  bursts: [{{at_s: 2, count: 200, client: 7}}]
  mix: [{{prompt_tokens: 50, output_tokens: 200}}]
)",
                                   per_client),
                       "test.yaml");
}

TEST(SimAdmissionTest, NoClientFillsTheQueueAtTheExpenseOfTheOthers) {
  const RunResult shared = run(hog(1000));
  EXPECT_EQ(shared.queue_full_client, 0);
  EXPECT_GT(shared.gateway_queue_max, 150);  // the burst waits, ahead of everyone else
  EXPECT_EQ(outcome(shared, Outcome::kQueueFull), 0);

  const RunResult capped = run(hog(10));
  // The hog keeps 10 waiting (and 4 in flight); the rest of its burst is refused with the same
  // 429 queue_full the gateway answers, and the other clients still queue and are served.
  EXPECT_GE(capped.queue_full_client, 180);
  EXPECT_EQ(outcome(capped, Outcome::kQueueFull), capped.queue_full_client);
  EXPECT_LE(capped.gateway_queue_max, 10 + 20);
  EXPECT_GT(capped.groups.back().ok(), capped.groups.back().requests - 200);
}

TEST(SimAdmissionTest, ClientsAreCheckedWhenTheScenarioIsRead) {
  const std::string base =
      "fleet: [{gpu: A100}]\nstrategies: [least-request]\nworkload:\n"
      "  arrivals: {poisson: {rate: 1}}\n  mix: [{prompt_tokens: 10, output_tokens: 10}]\n";
  const auto error = [&](const std::string& extra) {
    try {
      parseScenario(base + extra, "t.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("  clients: -1\n").find("workload.clients"), std::string::npos);
  EXPECT_NE(error("  bursts: [{at_s: 1, count: 2, client: x}]\n").find("client"),
            std::string::npos);
  EXPECT_EQ(parseScenario(base + "  clients: 3\n", "t.yaml").workload.clients, 3);
  EXPECT_EQ(
      parseScenario(base + "  bursts: [{at_s: 1, count: 2, client: 4}]\n", "t.yaml")
          .workload.bursts[0]
          .client,
      4);
}

TEST(SimAdmissionTest, DeadlineAdmissionRefusesWhatCannotFinishAndWastesLessThanFifo) {
  const RunResult fifo = run(surge("{queue: fifo, max_queued: 100000}", 8));
  const RunResult deadline = run(surge("{queue: deadline, max_queued: 100000}", 8));
  EXPECT_GT(outcome(deadline, Outcome::kDeadlineUnattainable), 0);
  EXPECT_EQ(outcome(fifo, Outcome::kDeadlineUnattainable), 0);
  // FIFO lets clients give up at the engine; deadline admission refuses them before.
  EXPECT_GT(fifo.wasted_tokens, 0);
  EXPECT_LT(deadline.wasted_tokens, fifo.wasted_tokens / 2);
  EXPECT_LT(outcome(deadline, Outcome::kDeadline), outcome(fifo, Outcome::kDeadline));
  EXPECT_GE(deadline.groups.back().ok(), fifo.groups.back().ok());
}

TEST(SimAdmissionTest, AutoscalingFollowsTheLoadAndCostsLessThanTheFixedFleet) {
  // A 60 s "day": low, a peak in the middle, low again; twenty A100s are enough for the peak.
  const Scenario s = parseScenario(R"(seed: 2
duration_s: 120
warmup_s: 10
fleet: [{gpu: A100, count: 20}]
strategies:
  - {strategy: least-request, label: fixed}
  - {strategy: least-request, label: optimizer, autoscale: true}
workload:
  arrivals:
    diurnal: {rate: 60, period_s: 60, curve: [[0, 0.2], [30, 1.8], [60, 0.2]]}
  mix: [{prompt_tokens: [50, 300], output_tokens: [50, 200]}]
record: {slo: {tpot_ms: 50}}
prices: {A100: 2}
autoscale:
  interval_s: 5
  window_s: 10
  headroom: 0.2
  scale_down_cooldown_s: 0
  deployments: [{gpu: A100, min_replicas: 1}]
)",
                                   "test.yaml");
  RunOptions options;
  options.strategy = "least-request";
  const RunResult fixed = runSimulation(scenarioFor(s, s.strategies[0]), options);
  const RunResult scaled = runSimulation(scenarioFor(s, s.strategies[1]), options);
  EXPECT_TRUE(fixed.autoscale.empty());
  ASSERT_GE(scaled.autoscale.size(), 20u);
  const auto [low, high] = std::minmax_element(
      scaled.autoscale.begin(), scaled.autoscale.end(),
      [](const AutoscaleStep& a, const AutoscaleStep& b) { return a.replicas[0] < b.replicas[0]; });
  EXPECT_LT(low->replicas[0], high->replicas[0]);
  EXPECT_LT(high->replicas[0], 20);
  EXPECT_GT(high->replicas[0], 2 * low->replicas[0]);
  EXPECT_NEAR(fixed.cost_usd, 20 * 2.0 * 110 / 3600, 1e-6);
  EXPECT_LT(scaled.cost_usd, 0.8 * fixed.cost_usd);
  EXPECT_GT(scaled.groups.back().goodput(), 0.9);
}

}  // namespace
}  // namespace switchyard::sim
