// Prefix-cache routing: the prompt's block chain, the per-worker index, the strategy's scores
// and hot-spot guard, the decision rows, and `routing.prefix_cache:`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "allocation_count.h"
#include "api/request_inspector.h"
#include "engine/openai_emulation.h"
#include "engine/perf_profiles.h"
#include "fleet/fleet_registry.h"
#include "fleet/kv_index/prefix_cache_config.h"
#include "fleet/kv_index/prefix_index.h"
#include "fleet/kv_index/prompt_blocks.h"
#include "fleet/scrape_schedule.h"
#include "gateway/config.h"
#include "gateway/prefix_stage.h"
#include "routing/prefix_probe.h"
#include "routing/router.h"

namespace switchyard {
namespace {

using fleet::kv_index::hashPromptBlocks;
using fleet::kv_index::PrefixIndex;
using fleet::kv_index::PromptBlockHasher;
using fleet::kv_index::ReplicaBlockSet;

std::string text(size_t bytes, char seed) {
  std::string s(bytes, ' ');
  for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

TEST(PromptBlocksTest, OnlyFullBlocksAreHashedAndAChainNamesItsWholePrefix) {
  EXPECT_TRUE(hashPromptBlocks(text(63, 1), 16).empty());  // 16 tokens = 64 bytes
  const std::string shared = text(640, 1);
  const auto a = hashPromptBlocks(shared + text(200, 2), 16);
  const auto b = hashPromptBlocks(shared + text(200, 3), 16);
  ASSERT_EQ(a.size(), 13u);
  ASSERT_EQ(b.size(), 13u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(a[i], b[i]) << i;
  for (size_t i = 10; i < 13; ++i) EXPECT_NE(a[i], b[i]) << i;
  // The same block after a different prefix hashes differently: the chain, not the block.
  const std::string block = text(64, 9);
  EXPECT_NE(hashPromptBlocks(text(64, 1) + block, 16)[1],
            hashPromptBlocks(text(64, 2) + block, 16)[1]);
  // A seed changes every hash.
  EXPECT_NE(hashPromptBlocks(shared, 16, 1)[0], hashPromptBlocks(shared, 16, 0)[0]);
}

TEST(PromptBlocksTest, FeedingInPiecesEqualsFeedingAtOnce) {
  const std::string whole = text(1000, 4);
  const auto expected = hashPromptBlocks(whole, 8);
  PromptBlockHasher hasher(8);
  for (size_t step : {1u, 7u, 31u, 32u, 33u, 100u}) {
    hasher.reset();
    for (size_t at = 0; at < whole.size(); at += step) {
      hasher.text(std::string_view(whole).substr(at, step));
    }
    EXPECT_EQ(std::vector<uint64_t>(hasher.blocks().begin(), hasher.blocks().end()), expected)
        << step;
  }
}

TEST(PromptBlocksTest, TheInspectorFeedsChatContentAndCompletionPrompts) {
  api::RequestInspector inspector;
  PromptBlockHasher hasher(16);
  inspector.setPromptSink(&hasher);
  const std::string system = text(300, 5);
  const std::string user = text(200, 6);
  const std::string body = R"({"model":"m","messages":[{"role":"system","content":")" + system +
                           R"("},{"role":"user","content":[{"type":"text","text":")" + user +
                           R"("}]}]})";
  api::InspectedRequest info;
  ASSERT_EQ(inspector.inspect(body.data(), body.size(), body.size(), info),
            api::InspectError::kNone);
  EXPECT_EQ(std::vector<uint64_t>(hasher.blocks().begin(), hasher.blocks().end()),
            hashPromptBlocks(system + user, 16));
  const std::string completion = R"({"model":"m","prompt":")" + system + R"("})";
  ASSERT_EQ(inspector.inspect(completion.data(), completion.size(), completion.size(), info),
            api::InspectError::kNone);
  EXPECT_EQ(std::vector<uint64_t>(hasher.blocks().begin(), hasher.blocks().end()),
            hashPromptBlocks(system, 16));
  // Embeddings' input is not a prompt to cache.
  const std::string embed = R"({"model":"m","input":")" + system + R"("})";
  ASSERT_EQ(inspector.inspect(embed.data(), embed.size(), embed.size(), info),
            api::InspectError::kNone);
  EXPECT_TRUE(hasher.blocks().empty());
}

// The gateway's blocks are the emulator's blocks: same text, same 64-byte boundaries, so a chain
// the gateway matched is a chain the engine can hit (the hash functions differ).
TEST(PromptBlocksTest, BlocksAlignWithTheEmulatorsPrefixCache) {
  const std::string body = R"({"model":"m","messages":[{"role":"system","content":")" +
                           text(333, 1) + R"("},{"role":"user","content":")" + text(190, 2) +
                           R"("}]})";
  std::string engine_body = body;
  engine::RequestParser parser;
  const auto parsed = parser.generation(engine::Endpoint::kChatCompletions, engine_body);
  ASSERT_TRUE(parsed.value.has_value()) << parsed.error;
  api::RequestInspector inspector;
  PromptBlockHasher hasher(engine::kPrefixBlockTokens);
  inspector.setPromptSink(&hasher);
  api::InspectedRequest info;
  ASSERT_EQ(inspector.inspect(body.data(), body.size(), body.size(), info),
            api::InspectError::kNone);
  EXPECT_EQ(hasher.blockBytes(), engine::kPrefixBlockChars);
  EXPECT_EQ(hasher.blocks().size(), parsed.value->block_hashes.size());
  EXPECT_EQ(hasher.blocks().size(), (333u + 190u) / 64u);
}

TEST(PrefixIndexTest, LongestPrefixStopsAtTheFirstMiss) {
  ReplicaBlockSet set(1024);
  const auto a = hashPromptBlocks(text(64 * 10, 1), 16);
  set.insert(std::span(a).first(6));
  EXPECT_EQ(set.matchPrefix(a), 6u);
  const auto other = hashPromptBlocks(text(64 * 10, 2), 16);
  EXPECT_EQ(set.matchPrefix(other), 0u);
  PrefixIndex index;
  int r1 = 0, r2 = 0;
  index.insert(&r1, a, 1024);
  EXPECT_EQ(index.match(&r1, a), 10u);
  EXPECT_EQ(index.match(&r2, a), 0u);
  // A replica gone from the fleet is forgotten.
  index.insert(&r2, a, 1024);
  const void* live[] = {&r2};
  index.retain(live);
  EXPECT_EQ(index.replicas(), 1u);
  EXPECT_EQ(index.match(&r1, a), 0u);
  EXPECT_EQ(index.match(&r2, a), 10u);
}

TEST(PrefixIndexTest, BoundedByTheKvCacheAndLeastRecentlyUsedGoFirst) {
  constexpr uint32_t kCapacity = 64;
  ReplicaBlockSet set(kCapacity);
  const auto hot = hashPromptBlocks(text(64 * 8, 1), 16);
  set.insert(hot);
  for (int i = 0; i < 40; ++i) {
    set.insert(hashPromptBlocks(text(64 * 4, static_cast<char>(10 + i)), 16));
    set.insert(hot);  // used all along: kept
    EXPECT_LE(set.size(), kCapacity);
  }
  EXPECT_EQ(set.matchPrefix(hot), 8u);
  const auto cold = hashPromptBlocks(text(64 * 8, 2), 16);
  set.insert(cold);
  for (int i = 0; i < 40; ++i)
    set.insert(hashPromptBlocks(text(64 * 4, static_cast<char>(60 + i)), 16));
  EXPECT_EQ(set.matchPrefix(cold), 0u);  // not used since: evicted
}

TEST(PrefixIndexTest, NoAllocationOnceWarm) {
  if (!testing::allocationCounting()) GTEST_SKIP() << "sanitizer build";
  PrefixIndex index;
  int replica = 0;
  const auto chain = hashPromptBlocks(text(64 * 100, 1), 16);
  index.insert(&replica, chain, 4096);
  PromptBlockHasher hasher(16);
  const std::string prompt = text(64 * 100, 1);
  const testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) {
    hasher.reset();
    hasher.text(prompt);
    EXPECT_EQ(index.match(&replica, hasher.blocks()), 100u);
    index.insert(&replica, hasher.blocks(), 4096);
  }
  EXPECT_EQ(scope.count(), 0u);
}

// A probe with fixed match lengths per replica index.
class FixedProbe final : public routing::PrefixProbe {
 public:
  FixedProbe(const fleet::ModelEntry& model, std::vector<uint32_t> matched,
             std::vector<double> weights = {})
      : model_(model), matched_(std::move(matched)), weights_(std::move(weights)) {}
  routing::PrefixMatch match(const fleet::ReplicaState& replica) const override {
    for (size_t i = 0; i < model_.replicas.size(); ++i) {
      if (model_.replicas[i].state.get() == &replica) return {matched_[i], exact};
    }
    return {};
  }
  bool exact = false;  // the matches are the replicas' KV events' (precise mode)
  double homeWeight(std::string_view, const fleet::ReplicaEntry& replica) const override {
    for (size_t i = 0; i < weights_.size(); ++i) {
      if (model_.replicas[i].state == replica.state) return weights_[i];
    }
    return 1;
  }

 private:
  const fleet::ModelEntry& model_;
  std::vector<uint32_t> matched_;
  std::vector<double> weights_;
};

class PrefixRoutingTest : public ::testing::Test {
 protected:
  void build(int replicas) {
    fleet::ModelSpec model;
    model.name = "m";
    for (int i = 0; i < replicas; ++i) {
      model.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
    }
    registry_.apply({model}, kNsPerSec, "prefix-cache", 1.0);
    snapshot_ = registry_.latest();
  }
  const fleet::ModelEntry& model() const { return snapshot_->models[0]; }
  // A 10-block prompt whose first 4 blocks name its home by `anchor`.
  FixedProbe homeProbe(std::vector<uint32_t> matched, uint64_t anchor,
                       std::vector<double> weights = {}) const {
    FixedProbe probe(model(), std::move(matched), std::move(weights));
    probe.total_blocks = 10;
    probe.home_blocks = 4;
    probe.home_anchor = anchor;
    return probe;
  }
  void running(int i, int64_t n) { model().replicas[i].state->counters().running.store(n); }
  // Replica i's scraped engine signals: nothing running, `waiting` queued, `kv_usage` of its KV.
  void signals(int i, double kv_usage, double waiting) {
    fleet::EngineSignals s;
    s.running = 0;
    s.waiting = waiting;
    s.kv_usage = kv_usage;
    model().replicas[i].state->storeSignals(s, 5 * kNsPerSec);
  }
  routing::Decision decide(std::string_view strategy, const routing::PrefixProbe* probe) {
    EXPECT_EQ(routing::parseStrategySpec(strategy, spec_), routing::SpecError::kNone);
    routing::RouteRequest request{&spec_, 5 * kNsPerSec, {}, {}};
    request.prefix = probe;
    return routing::route(*snapshot_, model(), request, rng_, scratch_);
  }
  // Two replicas, 0 holding the prompt's prefix: whether prefix-cache takes it or passes it over
  // for its KV cache (replica 1 then).
  void expectHolderTaken(const routing::PrefixProbe& probe, bool taken) {
    const routing::Decision d = decide("prefix-cache", &probe);
    EXPECT_EQ(d.chosen, taken ? 0 : 1);
    EXPECT_EQ(d.rows[0].passed_over,
              taken ? routing::PassOver::kNone : routing::PassOver::kKvCritical);
  }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  Rng rng_{3};
  routing::RoutingScratch scratch_;
  routing::StrategySpec spec_;
};

TEST_F(PrefixRoutingTest, TheLongestMatchWinsAndEveryRowShowsItsMatch) {
  build(4);
  FixedProbe probe(model(), {2, 9, 0, 5});
  probe.total_blocks = 10;
  for (int trial = 0; trial < 20; ++trial) {
    const routing::Decision d = decide("prefix-cache", &probe);
    EXPECT_EQ(d.chosen, 1);
    EXPECT_EQ(d.prefix_total_blocks, 10u);
    EXPECT_EQ(d.prefix_block_tokens, 16u);
    EXPECT_EQ(d.rows[0].prefix_blocks, 2);
    EXPECT_EQ(d.rows[1].prefix_blocks, 9);
    EXPECT_EQ(d.rows[2].prefix_blocks, 0);
    EXPECT_EQ(d.rows[3].prefix_blocks, 5);
  }
}

// Load-balance passes over a replica whose free KV cache is below kv_critical_free (10 %). A
// replica that holds the prompt's prefix by its KV events and queues nothing is not passed over:
// the request needs only the blocks past its match, and nothing is queued ahead of it.
TEST_F(PrefixRoutingTest, AnExactHolderThatQueuesNothingIsNotPassedOverForItsFullCache) {
  build(2);
  signals(0, 0.95, 0);
  signals(1, 0.2, 0);
  FixedProbe probe(model(), {9, 0});
  probe.total_blocks = 10;
  probe.exact = true;
  expectHolderTaken(probe, true);
  // A queue at the holder, longer than 144 matched tokens pay for: full in earnest.
  signals(0, 0.95, 2);
  expectHolderTaken(probe, false);
  // An approximate match is a guess: no exception.
  signals(0, 0.95, 0);
  probe.exact = false;
  expectHolderTaken(probe, false);
  // Load-balance scored before prefix-cache in an explicit blend knows no match yet.
  probe.exact = true;
  const routing::Decision d = decide("load-balance:1,prefix-cache:1", &probe);
  EXPECT_EQ(d.rows[0].passed_over, routing::PassOver::kKvCritical);
  EXPECT_EQ(decide("prefix-cache:1,load-balance:1", &probe).rows[0].passed_over,
            routing::PassOver::kNone);
}

// A queue at a KV-critical exact holder is priced against the match: one queued request per
// hot_spot_tokens matched, the request itself included. Past that the request goes where it
// prefills the whole prompt sooner than it would wait here.
TEST_F(PrefixRoutingTest, AnExactHolderIsWorthAsMuchQueueAsItsMatchPaysFor) {
  build(2);
  signals(1, 0.2, 0);
  FixedProbe probe(model(), {9, 0});
  probe.total_blocks = 10;
  probe.exact = true;
  probe.hot_spot_tokens = 48;  // 3 blocks: the 9 matched pay for this request and two queued
  signals(0, 0.95, 2);
  expectHolderTaken(probe, true);
  signals(0, 0.95, 3);
  expectHolderTaken(probe, false);
  // Without a price for a match only an empty queue is worth it.
  probe.hot_spot_tokens = 0;
  signals(0, 0.95, 1);
  expectHolderTaken(probe, false);
  signals(0, 0.95, 0);
  expectHolderTaken(probe, true);
}

TEST_F(PrefixRoutingTest, WithoutAMatchLoadDecides) {
  build(3);
  running(0, 5);
  running(1, 0);
  running(2, 5);
  FixedProbe probe(model(), {0, 0, 0});
  probe.total_blocks = 10;
  EXPECT_EQ(decide("prefix-cache", &probe).chosen, 1);
  EXPECT_EQ(decide("prefix-cache", nullptr).chosen, 1);
}

TEST_F(PrefixRoutingTest, TheHotSpotGuardSendsAPopularPrefixElsewhere) {
  build(4);
  running(0, 12);  // holds the prefix, and far more than its share
  FixedProbe probe(model(), {10, 0, 0, 0});
  probe.total_blocks = 10;
  const routing::Decision guarded = decide("prefix-cache", &probe);
  EXPECT_NE(guarded.chosen, 0);
  EXPECT_EQ(guarded.rows[0].prefix_blocks, 10);  // the match is still shown
  probe.hot_spot_factor = 0;                     // no guard: the match wins, with 5 : 4
  EXPECT_EQ(decide("prefix-cache:5,load-balance:4", &probe).chosen, 0);
  // Within the guard's bound the match wins.
  running(0, 1);
  running(1, 1);
  running(2, 1);
  running(3, 1);
  probe.hot_spot_factor = 1.5;
  EXPECT_EQ(decide("prefix-cache", &probe).chosen, 0);
}

TEST_F(PrefixRoutingTest, ALongMatchIsWorthMoreQueueBeforeTheGuardActs) {
  build(4);
  running(0, 12);  // fair share (12 + 1) / 4 = 3.25: guarded above max(1.5 × 3.25, 2) = 4.875
  FixedProbe probe(model(), {10, 0, 0, 0});
  probe.total_blocks = 10;  // 160 matched tokens
  probe.hot_spot_tokens = 32;  // 160 / 32 − 1 = 4 more in flight allowed: 13 > 8.875, guarded
  EXPECT_NE(decide("prefix-cache", &probe).chosen, 0);
  probe.hot_spot_tokens = 16;  // 9 more: 13 <= 13.875, the match wins
  EXPECT_EQ(decide("prefix-cache", &probe).chosen, 0);
  // A match no longer than hot_spot_tokens earns nothing: guarded as before.
  FixedProbe short_match(model(), {1, 0, 0, 0});
  short_match.total_blocks = 10;
  short_match.hot_spot_tokens = 16;
  EXPECT_NE(decide("prefix-cache:5,load-balance:4", &short_match).chosen, 0);
}

// The replicas in the order every gateway ranks them for `anchor`: highest
// mixHash(anchor ^ name hash) first.
std::vector<int> rendezvousOrder(const fleet::ModelEntry& model, uint64_t anchor) {
  std::vector<int> order(model.replicas.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  const auto rank = [&](int i) {
    return fleet::mixHash(anchor ^ model.replicas[static_cast<size_t>(i)].state->nameHash());
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return rank(a) > rank(b); });
  return order;
}

TEST_F(PrefixRoutingTest, AnUnknownPrefixGoesToItsHomeAlikeInEveryRouter) {
  build(8);
  FixedProbe probe = homeProbe(std::vector<uint32_t>(8, 0), 0);
  std::set<int> homes;
  for (uint64_t anchor = 1; anchor <= 64; ++anchor) {
    probe.home_anchor = anchor * 0x9e3779b97f4a7c15ull;
    const int home = rendezvousOrder(model(), probe.home_anchor)[0];
    const routing::Decision d = decide("prefix-cache", &probe);
    ASSERT_EQ(d.chosen, home) << anchor;
    for (const routing::CandidateRow& row : d.rows) {
      EXPECT_EQ(row.prefix_home, static_cast<int>(row.replica_index) == home);
    }
    // Another router (its own random source and scratch: another worker or gateway) agrees.
    Rng other_rng(static_cast<uint64_t>(anchor) + 1000);
    routing::RoutingScratch other_scratch;
    routing::RouteRequest request{&spec_, 5 * kNsPerSec, {}, {}};
    request.prefix = &probe;
    EXPECT_EQ(routing::route(*snapshot_, model(), request, other_rng, other_scratch).chosen, home);
    homes.insert(home);
  }
  EXPECT_GE(homes.size(), 6u);  // prefixes spread over the fleet
  probe.home_blocks = 0;        // off: load decides, and no row is a home
  for (const routing::CandidateRow& row : decide("prefix-cache", &probe).rows) {
    EXPECT_FALSE(row.prefix_home);
  }
}

TEST_F(PrefixRoutingTest, AReplicaIsHomeToPrefixesInProportionToItsKvCache) {
  build(4);
  FixedProbe probe = homeProbe(std::vector<uint32_t>(4, 0), 0, {4, 1, 1, 1});
  std::vector<int> homes(4, 0);
  constexpr int kPrefixes = 4000;
  for (uint64_t anchor = 1; anchor <= kPrefixes; ++anchor) {
    probe.home_anchor = anchor * 0x9e3779b97f4a7c15ull;
    ++homes[static_cast<size_t>(decide("prefix-cache", &probe).chosen)];
  }
  // Shares 4/7 and 1/7 each.
  EXPECT_NEAR(homes[0] / double(kPrefixes), 4.0 / 7, 0.04) << homes[0];
  for (int i = 1; i < 4; ++i) EXPECT_NEAR(homes[i] / double(kPrefixes), 1.0 / 7, 0.03) << i;
}

TEST_F(PrefixRoutingTest, APrefixKnownSomewhereIsNotPlacedByItsHome) {
  build(4);
  const std::vector<int> order = rendezvousOrder(model(), 77);
  const int other = order[2];
  std::vector<uint32_t> matched(4, 0);
  matched[static_cast<size_t>(other)] = 4;  // holds the home's blocks: the match decides
  const FixedProbe known = homeProbe(matched, 77);
  const routing::Decision d = decide("prefix-cache", &known);
  EXPECT_EQ(d.chosen, other);
  for (const routing::CandidateRow& row : d.rows) EXPECT_FALSE(row.prefix_home);
  // Fewer blocks than the home's anywhere: nothing is known of this prefix, the home decides.
  matched[static_cast<size_t>(other)] = 3;
  const FixedProbe partial = homeProbe(matched, 77);
  EXPECT_EQ(decide("prefix-cache", &partial).chosen, order[0]);
}

TEST_F(PrefixRoutingTest, AHotHomeOverflowsToTheNextInTheSameOrder) {
  build(4);
  const FixedProbe probe = homeProbe({0, 0, 0, 0}, 12345);
  const std::vector<int> order = rendezvousOrder(model(), probe.home_anchor);
  running(order[0], 12);  // far above its share: the guard refuses it the prefix
  for (int trial = 0; trial < 10; ++trial) {
    const routing::Decision d = decide("prefix-cache", &probe);
    EXPECT_EQ(d.chosen, order[1]);
    EXPECT_TRUE(d.rowOf(order[1])->prefix_home);
    EXPECT_FALSE(d.rowOf(order[0])->prefix_home);
  }
}

TEST_F(PrefixRoutingTest, AHomeTakesNoMoreThanItsFairShare) {
  build(8);
  const FixedProbe probe = homeProbe(std::vector<uint32_t>(8, 0), 4242);
  const std::vector<int> order = rendezvousOrder(model(), probe.home_anchor);
  // 30 in flight: a fair share is 31 / 8 = 3.875. The first in order would be the 5th on its
  // replica: within the guard's 1.5 × for a match, above a home's 1 ×.
  for (int i = 0; i < 8; ++i) running(i, 4);
  running(order[1], 2);
  const routing::Decision d = decide("prefix-cache", &probe);
  EXPECT_EQ(d.chosen, order[1]);
  EXPECT_TRUE(d.rowOf(order[1])->prefix_home);
  EXPECT_FALSE(d.rowOf(order[0])->prefix_home);
}

TEST(PrefixStageHomeTest, ALongEnoughPromptIsNamedByItsFirstBlocksAndWeighedByKvCache) {
  fleet::FleetRegistry registry;
  fleet::ModelSpec spec;
  spec.name = "m";
  spec.replicas.push_back({"10.0.0.1:1", {{"kv_cache_blocks", "3000"}}});
  registry.apply({spec}, kNsPerSec, "prefix-cache", 1.0);
  const auto snapshot = registry.latest();
  const std::vector<uint64_t> chat =
      fleet::kv_index::hashPromptBlocks(std::string(64 * 8, 'c'), 16);
  std::string context;
  for (int i = 0; context.size() < 64 * 100; ++i) context += "word" + std::to_string(i) + " ";
  const std::vector<uint64_t> longer = fleet::kv_index::hashPromptBlocks(context, 16);
  fleet::kv_index::PrefixCacheParams params;  // homes for prompts of 1,536 tokens and more
  gateway::PrefixStage stage(params);
  EXPECT_EQ(stage.probe(chat).home_blocks, 0u);  // 128 tokens: load places it
  const auto probe = stage.probe(longer);
  EXPECT_EQ(probe.home_blocks, 4u);
  EXPECT_EQ(probe.home_anchor, longer[3]);
  EXPECT_EQ(probe.homeWeight("m", snapshot->models[0].replicas[0]), 3000.0);
  params.home_min_tokens = 0;
  gateway::PrefixStage every(params);
  EXPECT_EQ(every.probe(chat).home_blocks, 4u);
  params.home_tokens = 0;
  gateway::PrefixStage off(params);
  EXPECT_EQ(off.probe(longer).home_blocks, 0u);
}

TEST(PrefixCacheConfigTest, ParsesTheKeysAndRejectsBadValues) {
  const gateway::GatewayConfig config = gateway::parseConfig(R"(
routing:
  prefix_cache:
    block_tokens: 32
    kv_cache_blocks: 2000
    hot_spot_factor: 2
    hot_spot_tokens: 4096
models: []
)");
  EXPECT_EQ(config.prefix_cache.block_tokens, 32u);
  EXPECT_EQ(config.prefix_cache.kv_cache_blocks, 2000u);
  EXPECT_EQ(config.prefix_cache.hot_spot_factor, 2.0);
  EXPECT_EQ(config.prefix_cache.hot_spot_tokens, 4096.0);
  EXPECT_EQ(gateway::GatewayConfig{}.prefix_cache.hot_spot_tokens, 1536.0);
  EXPECT_EQ(gateway::GatewayConfig{}.prefix_cache.home_tokens, 64u);
  EXPECT_EQ(gateway::GatewayConfig{}.prefix_cache.home_min_tokens, 1536u);
  EXPECT_EQ(
      gateway::parseConfig("routing:\n  prefix_cache:\n    home_min_tokens: 0\nmodels: []\n")
          .prefix_cache.home_min_tokens,
      0u);
  EXPECT_EQ(
      gateway::parseConfig("routing:\n  prefix_cache:\n    home_tokens: 0\nmodels: []\n")
          .prefix_cache.home_tokens,
      0u);
  EXPECT_THROW(
      gateway::parseConfig("routing:\n  prefix_cache:\n    home_tokens: -1\nmodels: []\n"),
      ConfigError);
  EXPECT_THROW(
      gateway::parseConfig("routing:\n  prefix_cache:\n    hot_spot_tokens: -1\nmodels: []\n"),
      ConfigError);
  EXPECT_THROW(gateway::parseConfig("routing:\n  prefix_cache:\n    block_tokens: 0\nmodels: []\n"),
               ConfigError);
  EXPECT_THROW(gateway::parseConfig("routing:\n  prefix_cache:\n    colour: red\nmodels: []\n"),
               ConfigError);
}

TEST(PrefixCacheConfigTest, AReplicasIndexIsBoundedByItsKvCache) {
  fleet::kv_index::PrefixCacheParams params;
  // A label in the engine's blocks (of 32 tokens here) wins.
  EXPECT_EQ(fleet::kv_index::replicaKvBlocks({{"kv_cache_blocks", "1000"}, {"block_size", "32"}},
                                             "llama2-7b", NAN, params),
            2000u);
  // Else the GPU's profile: what the emulator itself runs with.
  const engine::PerfConfig a10 =
      engine::makePerfConfig(engine::builtinProfiles(), "A10", "llama2-7b");
  EXPECT_EQ(fleet::kv_index::replicaKvBlocks({{"gpu", "A10"}}, "llama2-7b", NAN, params),
            static_cast<uint32_t>(a10.kvCapacityTokens() / 16));
  // ...but what the engine reports in its metrics comes before the profile.
  EXPECT_EQ(fleet::kv_index::replicaKvBlocks({{"gpu", "A10"}}, "llama2-7b", 8000, params), 500u);
  EXPECT_EQ(fleet::kv_index::replicaKvBlocks({{"kv_cache_blocks", "1000"}}, "m", 8000, params),
            1000u);
  // Else the configured default.
  EXPECT_EQ(fleet::kv_index::replicaKvBlocks({{"gpu", "Z9"}}, "llama2-7b", NAN, params), 4096u);
  EXPECT_EQ(fleet::kv_index::replicaKvBlocks({{"kv_cache_blocks", "x"}}, "m", NAN, params), 4096u);
}

}  // namespace
}  // namespace switchyard
