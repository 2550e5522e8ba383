// Shared in-flight limits in the simulator, leased in slots as the live gateways lease them
// (admission/inflight_slots.h) or admitted request by request.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "sim/scenario.h"
#include "sim/simulator.h"

namespace switchyard::sim {
namespace {

// 2x A100 behind 3 gateways, each replica limited to 48 requests in flight across them, at
// `rate` requests/s; `ahead` is gateways.inflight_slots_ahead.
Scenario limited(double rate, int ahead) {
  return parseScenario(fmt::format(R"(seed: 11
duration_s: 20
warmup_s: 4
fleet:
  - {{gpu: A100, count: 2}}
gateways:
  count: 3
  inflight_slots_ahead: {}
  limits: {{max_inflight_per_replica: 48}}
strategies: [least-request]
workload:
  arrivals: {{poisson: {{rate: {}}}}}
  mix:
    - {{prompt_tokens: [30, 200], output_tokens: [64, 192]}}
)",
                                   ahead, rate),
                       "leases.yaml");
}

RunResult run(const Scenario& s) {
  RunOptions options;
  options.strategy = "least-request";
  return runSimulation(s, options);
}

// The engines' requests at the end of each second never pass 48 per replica.
void expectWithinTheLimit(const RunResult& r) {
  for (const SecondRow& row : r.seconds) {
    if (row.group == "A100") {
      EXPECT_LE(row.running + row.waiting, 48.0 * 2) << row.second;
    }
  }
}

TEST(SimSlotLeasesTest, LeasedSlotsHoldTheLimitAcrossGateways) {
  // Far past what 96 slots serve: both ways refuse the excess and hold the limit.
  const RunResult leased = run(limited(120, 16));
  const RunResult by_request = run(limited(120, 0));
  for (const RunResult* r : {&leased, &by_request}) {
    const GroupStats& all = r->groups.back();
    EXPECT_GT(all.outcomes[static_cast<size_t>(Outcome::kInflightLimit)], 0);
    expectWithinTheLimit(*r);
  }
  // Slots leased ahead by one gateway are not free for the others: a little of the limit can
  // go unused at the peak, no more than the leads (2 per gateway here) explain.
  EXPECT_GT(leased.groups.back().ok(), 0.9 * by_request.groups.back().ok());
}

TEST(SimSlotLeasesTest, SteadyTrafficUnderTheLimitNeedsFewCalls) {
  // Well under the limit: a request's slot goes back to its gateway's lease and is reused, where
  // request by request every admission is a call.
  const RunResult leased = run(limited(20, 16));
  const RunResult by_request = run(limited(20, 0));
  const GroupStats& all = leased.groups.back();
  EXPECT_EQ(all.ok(), all.requests);
  EXPECT_GE(by_request.shared_admission_calls, by_request.groups.back().requests);
  EXPECT_LT(leased.shared_admission_calls, by_request.shared_admission_calls / 4);
}

TEST(SimSlotLeasesTest, TheLeadIsCheckedWhenTheScenarioIsRead) {
  try {
    limited(20, -1);
    FAIL() << "a negative lead was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("gateways.inflight_slots_ahead: must be between 0"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace switchyard::sim
