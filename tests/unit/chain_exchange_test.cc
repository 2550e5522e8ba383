// What a gateway's workers share for approximate prefix-cache routing: the rings that carry each
// worker's routed chains to the others (fleet/kv_index/chain_exchange.h), and PrefixStage's use
// of them (a prompt routed on one worker is matched on another).
#include "fleet/kv_index/chain_exchange.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "allocation_count.h"
#include "fleet/fleet_registry.h"
#include "fleet/kv_index/prompt_blocks.h"
#include "gateway/config.h"
#include "gateway/kv_events_plane.h"
#include "gateway/prefix_stage.h"

namespace switchyard {
namespace {

using fleet::kv_index::RoutedChainExchange;

struct Received {
  const void* replica;
  uint64_t version;
  uint32_t bound;
  std::vector<uint64_t> chain;
};

std::vector<Received> drainAll(RoutedChainExchange& exchange, int to) {
  std::vector<Received> out;
  exchange.drain(to, [&](const RoutedChainExchange::Routed& r) {
    out.push_back(
        {r.replica, r.fleet_version, r.capacity_blocks, {r.chain.begin(), r.chain.end()}});
  });
  return out;
}

std::vector<uint64_t> chainOf(uint64_t first, size_t length) {
  std::vector<uint64_t> chain(length);
  std::iota(chain.begin(), chain.end(), first);
  return chain;
}

TEST(ChainExchangeTest, EveryOtherWorkerHearsWhatOneRoutedAndItselfDoesNot) {
  RoutedChainExchange exchange(3, 1024);
  int replica = 0;
  const std::vector<uint64_t> chain = chainOf(100, 5);
  exchange.publish(1, {&replica, 7, 4096, chain});
  EXPECT_TRUE(drainAll(exchange, 1).empty());
  for (int to : {0, 2}) {
    const std::vector<Received> got = drainAll(exchange, to);
    ASSERT_EQ(got.size(), 1u) << to;
    EXPECT_EQ(got[0].replica, &replica);
    EXPECT_EQ(got[0].version, 7u);
    EXPECT_EQ(got[0].bound, 4096u);
    EXPECT_EQ(got[0].chain, chain);
    EXPECT_TRUE(drainAll(exchange, to).empty());  // drained once
  }
  EXPECT_EQ(exchange.published(), 2u);
  EXPECT_EQ(exchange.dropped(), 0u);
  exchange.publish(0, {&replica, 7, 4096, {}});  // nothing to say
  exchange.publish(0, {nullptr, 7, 4096, chain});
  EXPECT_EQ(exchange.published(), 2u);
}

TEST(ChainExchangeTest, MessagesAcrossTheRingsEndArriveWholeAndInOrder) {
  RoutedChainExchange exchange(2, 64);  // 64 words: a 10-block message is 13
  int replica = 0;
  uint64_t next = 1;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 3; ++i) {
      exchange.publish(0, {&replica, static_cast<uint64_t>(round), 8, chainOf(next, 10)});
      next += 10;
    }
    const std::vector<Received> got = drainAll(exchange, 1);
    ASSERT_EQ(got.size(), 3u) << round;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i].chain, chainOf(next - 30 + 10 * i, 10));
  }
  EXPECT_EQ(exchange.dropped(), 0u);
}

TEST(ChainExchangeTest, AFullRingDropsAndCountsAndALongChainKeepsItsHead) {
  RoutedChainExchange exchange(2, 64);
  int replica = 0;
  for (int i = 0; i < 10; ++i) exchange.publish(0, {&replica, 1, 8, chainOf(1, 10)});
  EXPECT_EQ(exchange.published(), 4u);  // 4 × 13 words fit in 64
  EXPECT_EQ(exchange.dropped(), 6u);
  EXPECT_EQ(drainAll(exchange, 1).size(), 4u);
  exchange.publish(0, {&replica, 1, 8, chainOf(1, 10)});
  EXPECT_EQ(exchange.published(), 5u);  // room again once drained
  EXPECT_EQ(drainAll(exchange, 1).size(), 1u);

  exchange.publish(0, {&replica, 1, 8, chainOf(500, 40)});  // more than a quarter of the ring
  EXPECT_EQ(exchange.truncated(), 1u);
  const std::vector<Received> got = drainAll(exchange, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].chain, chainOf(500, 13));  // the prefix the replica holds
}

TEST(ChainExchangeTest, RingsAreSizedForTheWorkerCount) {
  EXPECT_EQ(RoutedChainExchange::defaultRingWords(2), 65536u);
  EXPECT_EQ(RoutedChainExchange::defaultRingWords(8), 16384u);
  EXPECT_EQ(RoutedChainExchange::defaultRingWords(64), 4096u);
  EXPECT_EQ(RoutedChainExchange(2, 100).ringWords(), 128u);
  EXPECT_THROW(RoutedChainExchange(1, 1024), std::invalid_argument);
}

TEST(ChainExchangeTest, PublishingAndDrainingAllocateNothing) {
  if (!testing::allocationCounting()) GTEST_SKIP() << "sanitizer build";
  RoutedChainExchange exchange(4, 4096);
  int replica = 0;
  const std::vector<uint64_t> chain = chainOf(1, 100);
  const testing::AllocationScope scope;
  size_t received = 0;
  for (int i = 0; i < 200; ++i) {
    exchange.publish(i % 4, {&replica, 1, 8, chain});
    for (int to = 0; to < 4; ++to) {
      received += exchange.drain(to, [](const RoutedChainExchange::Routed&) {});
    }
  }
  EXPECT_EQ(scope.count(), 0u);
  EXPECT_EQ(received, 600u);
}

// One sender and one receiver on their own threads (run under TSan too): every message that
// was not dropped arrives whole, in order.
TEST(ChainExchangeTest, ConcurrentSenderAndReceiverLoseNothingTheyDidNotCount) {
  RoutedChainExchange exchange(2, 256);
  int replica = 0;
  constexpr uint64_t kMessages = 20000;
  std::thread sender([&] {
    std::vector<uint64_t> chain(7);
    for (uint64_t n = 1; n <= kMessages; ++n) {
      std::iota(chain.begin(), chain.end(), n * 100);
      exchange.publish(0, {&replica, n, 8, chain});
    }
  });
  uint64_t received = 0;
  uint64_t last = 0;
  bool whole = true;
  auto check = [&](const RoutedChainExchange::Routed& r) {
    ++received;
    whole = whole && r.fleet_version > last && r.chain.size() == 7 &&
            r.chain[0] == r.fleet_version * 100 && r.chain[6] == r.fleet_version * 100 + 6;
    last = r.fleet_version;
  };
  while (last < kMessages && received + exchange.dropped() < kMessages) {
    exchange.drain(1, check);
  }
  sender.join();
  exchange.drain(1, check);
  EXPECT_TRUE(whole);
  EXPECT_EQ(received + exchange.dropped(), kMessages);
  EXPECT_EQ(received, exchange.published());
}

class SharedPrefixStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet::ModelSpec spec;
    spec.name = "m";
    for (int i = 0; i < 3; ++i) {
      spec.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
    }
    registry_.apply({spec}, kNsPerSec, "prefix-cache", 1.0);
    std::string prompt;
    for (int i = 0; prompt.size() < 64 * 20; ++i) prompt += "word" + std::to_string(i) + " ";
    chain_ = fleet::kv_index::hashPromptBlocks(prompt, 16);
  }
  const fleet::FleetSnapshot& snapshot() { return *registry_.latest(); }
  uint32_t matchOn(gateway::PrefixStage& stage, int replica) {
    const auto probe = stage.probe(chain_);
    return probe.match(*snapshot().models[0].replicas[replica].state).blocks;
  }

  fleet::FleetRegistry registry_;
  std::vector<uint64_t> chain_;
  fleet::kv_index::PrefixCacheParams params_;
  RoutedChainExchange exchange_{2, 4096};
};

TEST_F(SharedPrefixStageTest, APromptRoutedOnOneWorkerIsMatchedOnTheOther) {
  gateway::PrefixStage first(params_, nullptr, &exchange_, 0);
  gateway::PrefixStage second(params_, nullptr, &exchange_, 1);
  const auto snapshot = registry_.latest();
  first.onRouted(*snapshot, snapshot->models[0], 2, chain_);
  EXPECT_EQ(matchOn(second, 2), chain_.size());
  EXPECT_EQ(matchOn(second, 0), 0u);
  EXPECT_EQ(matchOn(first, 2), chain_.size());

  // Alone, a worker learns only from itself.
  gateway::PrefixStage alone_first(params_);
  gateway::PrefixStage alone_second(params_);
  alone_first.onRouted(*snapshot, snapshot->models[0], 2, chain_);
  EXPECT_EQ(matchOn(alone_second, 2), 0u);
}

TEST_F(SharedPrefixStageTest, WhatWasRoutedOnAnOlderFleetIsNotLearned) {
  gateway::PrefixStage first(params_, nullptr, &exchange_, 0);
  gateway::PrefixStage second(params_, nullptr, &exchange_, 1);
  const auto old_snapshot = registry_.latest();
  fleet::ModelSpec spec;
  spec.name = "m";
  for (int i = 0; i < 3; ++i) spec.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
  registry_.apply({spec}, kNsPerSec, "prefix-cache", 0.5);  // a newer fleet
  const auto snapshot = registry_.latest();
  ASSERT_GT(snapshot->version, old_snapshot->version);
  second.onRouted(*snapshot, snapshot->models[0], -1, {});  // the second worker saw it
  first.onRouted(*old_snapshot, old_snapshot->models[0], 1, chain_);
  EXPECT_EQ(matchOn(second, 1), 0u);
  first.onRouted(*snapshot, snapshot->models[0], 1, chain_);
  EXPECT_EQ(matchOn(second, 1), chain_.size());
}

// A bound another worker derived at another moment (the engine's reported KV size changed in
// between) does not resize, and so forget, this worker's set for the replica.
TEST_F(SharedPrefixStageTest, WhatAnotherWorkerSaysKeepsThisWorkersBound) {
  fleet::kv_index::PrefixIndex index;
  int replica = 0;
  index.insert(&replica, chain_, 1000);
  index.insertKeepingBound(&replica, chainOf(1, 3), 5000);
  EXPECT_EQ(index.capacityOf(&replica), 1000u);
  EXPECT_EQ(index.match(&replica, chain_), chain_.size());  // not forgotten
  int other = 0;
  index.insertKeepingBound(&other, chain_, 5000);  // a replica not known yet takes the bound
  EXPECT_EQ(index.capacityOf(&other), 5000u);
  EXPECT_EQ(index.capacityOf(nullptr), 0u);
}

TEST_F(SharedPrefixStageTest, ItsCountersAreMetrics) {
  int replica = 0;
  exchange_.publish(0, {&replica, 1, 8, chain_});
  std::string text;
  gateway::appendChainExchangeMetrics(text, exchange_);
  EXPECT_NE(text.find("switchyard_prefix_index_shared_total 1"), std::string::npos) << text;
  EXPECT_NE(text.find("switchyard_prefix_index_share_dropped_total 0"), std::string::npos) << text;
}

TEST(ChainExchangeConfigTest, SharingBetweenWorkersIsOnByDefaultAndCanBeTurnedOff) {
  EXPECT_TRUE(gateway::GatewayConfig{}.prefix_cache.share_between_workers);
  const auto off = gateway::parseConfig(
      "routing:\n  prefix_cache:\n    share_between_workers: false\nmodels: []\n");
  EXPECT_FALSE(off.prefix_cache.share_between_workers);
  EXPECT_THROW(gateway::parseConfig(
                   "routing:\n  prefix_cache:\n    share_between_workers: maybe\nmodels: []\n"),
               ConfigError);
  fleet::kv_index::PrefixCacheParams params;
  EXPECT_NE(gateway::KvEventsPlane(params, 2).chainExchange(), nullptr);
  EXPECT_EQ(gateway::KvEventsPlane(params, 1).chainExchange(), nullptr);
  params.share_between_workers = false;
  EXPECT_EQ(gateway::KvEventsPlane(params, 4).chainExchange(), nullptr);
}

}  // namespace
}  // namespace switchyard
