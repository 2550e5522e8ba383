#include "gateway/readiness.h"

#include <gtest/gtest.h>

namespace switchyard::gateway {
namespace {

fleet::FleetSnapshot fleetOf(const std::vector<std::shared_ptr<fleet::ReplicaState>>& replicas) {
  fleet::FleetSnapshot snapshot;
  fleet::ModelEntry model;
  model.name = "m";
  for (const auto& r : replicas) model.replicas.push_back({r, {}, "unknown"});
  model.indexStates();
  snapshot.models.push_back(std::move(model));
  return snapshot;
}

TEST(ReadinessTest, WaitsForTheFirstSyncAndTheFirstScrapes) {
  auto replica = std::make_shared<fleet::ReplicaState>("r", "127.0.0.1", 1);
  const fleet::FleetSnapshot snapshot = fleetOf({replica});
  Readiness readiness({5 * kNsPerSec, 3 * kNsPerSec}, 0);
  auto verdict = readiness.evaluate({false, true, false, &snapshot, kNsPerSec});
  EXPECT_FALSE(verdict.ready);
  ASSERT_EQ(verdict.waiting_for.size(), 2u);
  EXPECT_NE(Readiness::toJson(verdict, false).find(R"("status":"not_ready")"), std::string::npos);

  replica->markScrapeFailed(kNsPerSec);  // a failed scrape completes the round too
  verdict = readiness.evaluate({false, true, false, &snapshot, kNsPerSec});
  ASSERT_EQ(verdict.waiting_for.size(), 1u);
  EXPECT_NE(verdict.waiting_for[0].find("shared state"), std::string::npos);

  verdict = readiness.evaluate({false, true, true, &snapshot, 2 * kNsPerSec});
  EXPECT_TRUE(verdict.ready);
  EXPECT_TRUE(verdict.degraded.empty());
  EXPECT_EQ(Readiness::toJson(verdict, false), R"({"status":"ready"})");
}

TEST(ReadinessTest, TimeoutsMakeItReadyButDegradedAndSaySo) {
  auto replica = std::make_shared<fleet::ReplicaState>("r", "127.0.0.1", 1);
  const fleet::FleetSnapshot snapshot = fleetOf({replica});
  Readiness readiness({5 * kNsPerSec, 3 * kNsPerSec}, 0);
  const auto verdict = readiness.evaluate({false, true, false, &snapshot, 6 * kNsPerSec});
  EXPECT_TRUE(verdict.ready);
  ASSERT_EQ(verdict.degraded.size(), 2u);
  EXPECT_NE(Readiness::toJson(verdict, false).find(R"("degraded":[)"), std::string::npos);
}

TEST(ReadinessTest, OnceReadyItStaysReadyUntilShutdown) {
  const fleet::FleetSnapshot snapshot = fleetOf({});
  Readiness readiness({5 * kNsPerSec, 3 * kNsPerSec}, 0);
  EXPECT_TRUE(readiness.evaluate({false, false, false, &snapshot, 0}).ready);
  // Shared state lost later: still ready (a degradation, not a reason to drop out).
  EXPECT_TRUE(readiness.evaluate({false, true, false, &snapshot, kNsPerSec}).ready);
  const auto closing = readiness.evaluate({true, true, true, &snapshot, 2 * kNsPerSec});
  EXPECT_FALSE(closing.ready);
  EXPECT_EQ(Readiness::toJson(closing, true).substr(0, 21), R"({"status":"draining",)");
}

}  // namespace
}  // namespace switchyard::gateway

namespace switchyard::gateway {
namespace {

TEST(ReadinessDiscovery, WaitsForTheFirstListThenDegradesAfterItsTimeout) {
  Readiness readiness({5 * kNsPerSec, 3 * kNsPerSec, 10 * kNsPerSec}, 0);
  ReadinessInputs in;
  in.now = kNsPerSec;
  in.discovery_configured = true;
  auto verdict = readiness.evaluate(in);
  EXPECT_FALSE(verdict.ready);
  ASSERT_EQ(verdict.waiting_for.size(), 1u);
  EXPECT_NE(verdict.waiting_for[0].find("discovery"), std::string::npos);
  in.discovery_synced = true;
  EXPECT_TRUE(readiness.evaluate(in).ready);

  Readiness late({5 * kNsPerSec, 3 * kNsPerSec, 10 * kNsPerSec}, 0);
  in.discovery_synced = false;
  in.now = 11 * kNsPerSec;
  verdict = late.evaluate(in);
  EXPECT_TRUE(verdict.ready);
  ASSERT_EQ(verdict.degraded.size(), 1u);
  EXPECT_NE(verdict.degraded[0].find("static fleet"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::gateway
