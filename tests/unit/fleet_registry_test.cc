#include "fleet/fleet_registry.h"

#include <gtest/gtest.h>

namespace switchyard::fleet {
namespace {

ModelSpec model(std::string name, std::vector<std::string> addresses) {
  ModelSpec spec;
  spec.name = std::move(name);
  for (auto& a : addresses) spec.replicas.push_back({a, {{"gpu", "L20"}}});
  return spec;
}

TEST(FleetRegistryTest, ReloadKeepsTheStateOfReplicasThatStay) {
  FleetRegistry registry;
  registry.apply({model("m", {"h:1", "h:2"})}, kNsPerSec, "random");
  auto first = registry.latest();
  first->models[0].replicas[0].state->counters().running.store(3);
  auto cursor = first->models[0].runtime;

  registry.apply({model("m", {"h:1", "h:3"})}, kNsPerSec, "random");
  auto second = registry.latest();
  EXPECT_EQ(second->version, first->version + 1);
  ASSERT_EQ(second->models[0].replicas.size(), 2u);
  EXPECT_EQ(second->models[0].replicas[0].state, first->models[0].replicas[0].state);
  EXPECT_EQ(second->models[0].replicas[0].state->counters().running.load(), 3);
  EXPECT_NE(second->models[0].replicas[1].state, first->models[0].replicas[1].state);
  EXPECT_EQ(second->models[0].runtime, cursor);
  EXPECT_EQ(registry.replicas().size(), 2u);
  // The old snapshot is untouched and still usable by requests that hold it.
  EXPECT_EQ(first->models[0].replicas[1].state->name(), "h:2");
}

TEST(FleetRegistryTest, ReplicaSharedByTwoModelsIsOneState) {
  FleetRegistry registry;
  registry.apply({model("a", {"h:1"}), model("b", {"h:1"})}, kNsPerSec, "random");
  auto snapshot = registry.latest();
  EXPECT_EQ(snapshot->models[0].replicas[0].state, snapshot->models[1].replicas[0].state);
  EXPECT_EQ(snapshot->findModel("b"), &snapshot->models[1]);
  EXPECT_EQ(snapshot->findModel("c"), nullptr);
  EXPECT_EQ(snapshot->models[0].replicas[0].gpu, "L20");
}

TEST(FleetRegistryTest, EachModelIndexesItsReplicasStatesInFleetOrder) {
  FleetRegistry registry;
  registry.apply({model("a", {"h:1", "h:2", "h:3"}), model("b", {"h:3", "h:1"})}, kNsPerSec,
                 "random");
  auto snapshot = registry.latest();
  for (const ModelEntry& m : snapshot->models) {
    ASSERT_EQ(m.states.size(), m.replicas.size());
    for (size_t i = 0; i < m.replicas.size(); ++i) {
      EXPECT_EQ(m.states[i], m.replicas[i].state.get());
      EXPECT_EQ(&m.stateAt(i), m.replicas[i].state.get());
    }
  }
  EXPECT_EQ(snapshot->models[1].states[0], snapshot->models[0].states[2]);
}

TEST(FleetRegistryTest, SnapshotCacheFollowsVersions) {
  FleetRegistry registry;
  registry.apply({model("a", {"h:1"})}, kNsPerSec, "random");
  SnapshotCache cache(registry);
  const auto* first = cache.get().get();
  EXPECT_EQ(cache.get().get(), first);
  registry.apply({model("b", {"h:1"})}, kNsPerSec, "random");
  EXPECT_NE(cache.get().get(), first);
  EXPECT_NE(cache.get()->findModel("b"), nullptr);
}

TEST(SplitHostPortTest, AcceptsAndRejects) {
  std::string host;
  uint16_t port = 0;
  EXPECT_TRUE(splitHostPort("127.0.0.1:8080", host, port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  EXPECT_TRUE(splitHostPort("[::1]:9", host, port));
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(splitHostPort("127.0.0.1", host, port));
  EXPECT_FALSE(splitHostPort("h:70000", host, port));
  EXPECT_FALSE(splitHostPort("h:", host, port));
  EXPECT_FALSE(splitHostPort(":80", host, port));
  EXPECT_FALSE(splitHostPort("h:8x", host, port));
}

TEST(SplitHttpUrlTest, TakesHostAndPortOfAnHttpUrl) {
  std::string host, address;
  uint16_t port = 0;
  EXPECT_TRUE(splitHttpUrl("http://opt.example:8080/debug", host, port, &address));
  EXPECT_EQ(host, "opt.example");
  EXPECT_EQ(port, 8080);
  EXPECT_EQ(address, "opt.example:8080");
  EXPECT_TRUE(splitHttpUrl("http://127.0.0.1:9", host, port));
  EXPECT_EQ(port, 9);
  EXPECT_FALSE(splitHttpUrl("https://h:1", host, port));
  EXPECT_FALSE(splitHttpUrl("h:1", host, port));
  EXPECT_FALSE(splitHttpUrl("http://nohostport", host, port));
  EXPECT_FALSE(splitHttpUrl("http://:80/", host, port));
}

TEST(ReplicaStateTest, SignalsGoUnknownWhenStaleOrFailed) {
  ReplicaState replica("h:1", "h", 1);
  TimeNs age = 0;
  bool fresh = true;
  EXPECT_TRUE(std::isnan(replica.signals(0, kNsPerSec, &age, &fresh).running));
  EXPECT_EQ(age, -1);
  EXPECT_FALSE(fresh);

  EngineSignals s;
  s.running = 4;
  s.waiting = 1;
  s.kv_usage = 0.5;
  replica.storeSignals(s, 10 * kNsPerSec);
  EngineSignals read = replica.signals(10 * kNsPerSec + 100, kNsPerSec, &age, &fresh);
  EXPECT_EQ(read.running, 4);
  EXPECT_EQ(read.kv_usage, 0.5);
  EXPECT_TRUE(fresh);

  // Older than the maximum age: unknown, not idle.
  read = replica.signals(12 * kNsPerSec, kNsPerSec, &age, &fresh);
  EXPECT_FALSE(read.hasRunning());
  EXPECT_FALSE(fresh);
  EXPECT_EQ(age, 2 * kNsPerSec);

  replica.storeSignals(s, 20 * kNsPerSec);
  replica.markScrapeFailed(20 * kNsPerSec + 5);
  EXPECT_FALSE(replica.signals(20 * kNsPerSec + 10, kNsPerSec).hasKvUsage());
}

}  // namespace
}  // namespace switchyard::fleet
