// Scale-down in the fleet simulator: the gateways' `scale_down:` decides which replicas leave
// (Kubernetes' newest, or the scale-down controller's cheapest) and how they stop (drained, or
// killed with what they serve).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "sim/simulator.h"

namespace switchyard::sim {
namespace {

// 12 A100 replicas at a load that keeps each one busy; at 15 s, 3 of them leave.
Scenario shrinking(const std::string& scale_down, const std::string& workload_extra = "") {
  return parseScenario(fmt::format(R"(seed: 9
duration_s: 30
warmup_s: 5
fleet:
  - {{gpu: A100, count: 12}}
gateways: {{session_affinity: true, scale_down: {}}}
strategies: [least-request]
workload:
  arrivals: {{poisson: {{rate: 60}}}}
{}
  mix:
    - {{prompt_tokens: [30, 200], output_tokens: [128, 512]}}
events:
  - {{at_s: 15, remove_replicas: {{gpu: A100, count: 3}}}}
)",
                                   scale_down, workload_extra),
                       "scale-down.yaml");
}

RunResult run(const Scenario& s) {
  RunOptions options;
  options.strategy = "least-request";
  return runSimulation(s, options);
}

int64_t outcome(const RunResult& r, Outcome o) {
  return r.groups.back().outcomes[static_cast<size_t>(o)];
}

TEST(SimScaleDownTest, KilledVictimsCutWhatTheyServeAndDrainedOnesFinishIt) {
  const RunResult killed = run(shrinking("{victims: newest, stop: kill}"));
  EXPECT_EQ(killed.removed.victims, 3);
  EXPECT_GT(killed.removed.in_flight_at_decision, 0);
  EXPECT_EQ(killed.removed.cut_mid_stream + killed.removed.cut_before_first_token,
            killed.removed.in_flight_at_decision);
  EXPECT_GT(killed.removed.cut_mid_stream, 0);
  EXPECT_EQ(killed.removed.drain_s.count(), 0);
  EXPECT_GE(outcome(killed, Outcome::kUpstreamFailed), killed.removed.cut_mid_stream);

  const RunResult drained = run(shrinking("{victims: newest, stop: drain}"));
  EXPECT_EQ(drained.removed.victims, 3);
  EXPECT_EQ(drained.removed.in_flight_at_decision, killed.removed.in_flight_at_decision)
      << "the same victims at the same moment";
  EXPECT_EQ(drained.removed.cut_mid_stream + drained.removed.cut_before_first_token, 0);
  EXPECT_EQ(drained.removed.drain_s.count(), 3);
  EXPECT_EQ(drained.removed.undrained, 0);
  EXPECT_GT(drained.removed.drain_s.percentile(100), 0.5) << "their streams ran on";
  EXPECT_EQ(outcome(drained, Outcome::kUpstreamFailed), 0);
}

TEST(SimScaleDownTest, TheControllersVictimsAreTheCheapestToLose) {
  // Until the event both runs are the same run, so the victims are chosen from the same fleet.
  const RunResult newest = run(shrinking("{victims: newest}", "  sessions: 200"));
  const RunResult cheapest = run(shrinking("{victims: cheapest}", "  sessions: 200"));
  ASSERT_EQ(cheapest.removed.victims, 3);
  // Cost: one per request in flight, half a unit per session request in the window.
  const auto cost = [](const RemovedReplicas& r) {
    return static_cast<double>(r.in_flight_at_decision) + 0.5 * r.session_requests;
  };
  EXPECT_LT(cost(cheapest.removed), cost(newest.removed));
  EXPECT_GT(newest.removed.session_requests, 0);
}

TEST(SimScaleDownTest, AnUnknownVictimsOrStopIsAScenarioError) {
  for (const char* bad : {"{victims: oldest}", "{stop: later}", "{when: now}"}) {
    EXPECT_THROW(shrinking(bad), ConfigError) << bad;
  }
  try {
    shrinking("{victims: oldest}");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gateways.scale_down.victims: must be newest or "
                                         "cheapest"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace switchyard::sim
