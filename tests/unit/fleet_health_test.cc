// FleetHealth, the pure health core both drivers share: outcomes in, probes reported by the
// caller, verdicts published into the ReplicaStates and each model's routable count.
#include "health/fleet_health.h"

#include <gtest/gtest.h>

#include <vector>

#include "fleet/fleet_registry.h"

namespace switchyard::health {
namespace {

class FleetHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet::ModelSpec model;
    model.name = "m";
    for (int i = 0; i < 3; ++i)
      model.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
    registry_.apply({model}, kNsPerSec, "least-request");
    snapshot_ = registry_.latest();
    health_.sync(snapshot_, [&](const auto& added) { added_.push_back(added.get()); });
  }
  fleet::ReplicaState& replica(int i) { return *snapshot_->models[0].replicas[i].state; }
  const fleet::ModelRuntime& runtime() { return *snapshot_->models[0].runtime; }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  FleetHealth health_{HealthSettings{}};
  std::vector<const fleet::ReplicaState*> added_;
};

TEST_F(FleetHealthTest, FailuresAskForAProbeWhichExcludesAndBackoffRecovers) {
  EXPECT_EQ(added_.size(), 3u);
  for (int i = 0; i < 5; ++i) replica(1).recordFailure();
  std::vector<const fleet::ReplicaState*> wanted;
  TimeNs now = kNsPerSec;
  health_.tick(now, [&](const fleet::ReplicaState& r) { wanted.push_back(&r); });
  ASSERT_EQ(wanted.size(), 1u);  // suspect: a confirming probe, now
  EXPECT_EQ(wanted[0], &replica(1));
  health_.onProbe(replica(1), false, now);
  EXPECT_EQ(replica(1).health(), fleet::HealthState::kExcluded);
  health_.tick(now, {});
  EXPECT_EQ(runtime().routable_replicas.load(), 2);
  // After the base backoff: half-open, probed at once, and two good probes restore it.
  now += 2 * kNsPerSec;
  wanted.clear();
  health_.tick(now, [&](const fleet::ReplicaState& r) { wanted.push_back(&r); });
  EXPECT_EQ(replica(1).health(), fleet::HealthState::kHalfOpen);
  ASSERT_EQ(wanted.size(), 1u);
  health_.onProbe(replica(1), true, now);
  health_.onProbe(replica(1), true, now);
  EXPECT_EQ(replica(1).health(), fleet::HealthState::kHealthy);
  EXPECT_EQ(replica(1).readySince(), now);  // slow start eases it back in
  EXPECT_EQ(health_.transitions().at("healthy"), 1);
}

TEST_F(FleetHealthTest, ForgetsReplicasThatLeaveTheFleet) {
  fleet::ModelSpec model;
  model.name = "m";
  model.replicas.push_back({"10.0.0.1:9000", {}});
  registry_.apply({model}, kNsPerSec, "least-request");
  health_.sync(registry_.latest());
  EXPECT_EQ(health_.tracked(), 1u);
}

}  // namespace
}  // namespace switchyard::health
