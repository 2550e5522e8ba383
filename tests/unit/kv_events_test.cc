// Precise prefix-cache routing: the MessagePack reader, vLLM's KV-event batches in both
// encodings, the exact index and its snapshots, one replica's sequence tracking (gaps, replay,
// fallback), the emulator's events, the subscription targets and the worker's probe.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config_error.h"
#include "engine/batching_model.h"
#include "engine/kv_events_config.h"
#include "engine/openai_emulation.h"
#include "engine/perf_profiles.h"
#include "fleet/fleet_registry.h"
#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/kv_event_decoder.h"
#include "fleet/kv_index/kv_event_tracker.h"
#include "fleet/kv_index/msgpack_lite.h"
#include "fleet/kv_index/prefix_cache_config.h"
#include "fleet/kv_index/prompt_blocks.h"
#include "gateway/kv_events_plane.h"
#include "gateway/prefix_stage.h"

namespace switchyard {
namespace {

using namespace fleet::kv_index;  // NOLINT: the test covers this namespace

// Positional (older vLLM) BlockStored / BlockRemoved, written field by field as msgspec does.
std::string arrayBatch(const std::vector<uint64_t>& stored, std::optional<uint64_t> parent,
                       const std::vector<uint64_t>& removed) {
  std::string out;
  msgpack::Writer w(out);
  w.array(3);
  w.float64(1733100000.5);
  w.array(removed.empty() ? 1 : 2);
  w.array(7);  // tag, block_hashes, parent, token_ids, block_size, lora_id, medium
  w.str("BlockStored");
  w.array(static_cast<uint32_t>(stored.size()));
  for (uint64_t h : stored) w.uinteger(h);
  if (parent) {
    w.uinteger(*parent);
  } else {
    w.nil();
  }
  w.array(2);
  w.integer(11);
  w.integer(12);
  w.integer(16);
  w.nil();
  w.str("GPU");
  if (!removed.empty()) {
    w.array(3);
    w.str("BlockRemoved");
    w.array(static_cast<uint32_t>(removed.size()));
    for (uint64_t h : removed) w.uinteger(h);
    w.nil();
  }
  w.integer(0);  // data_parallel_rank
  return out;
}

TEST(MsgpackLiteTest, IntegersOfEveryWidthRoundTrip) {
  const std::vector<int64_t> values = {
      0,    1,    127,    128,   255,    256,       -1,           -32,       -33,
      -128, -129, -32768, 65536, -70000, 1LL << 40, -(1LL << 40), INT64_MAX, INT64_MIN};
  std::string out;
  msgpack::Writer w(out);
  for (int64_t v : values) w.integer(v);
  w.uinteger(UINT64_MAX);
  msgpack::Reader r(out);
  for (int64_t v : values) {
    int64_t got = 0;
    ASSERT_TRUE(r.readInt(got)) << v;
    EXPECT_EQ(got, v);
  }
  int64_t too_big = 0;
  EXPECT_FALSE(r.readInt(too_big));  // UINT64_MAX does not fit, and is left unread
  uint64_t u = 0;
  ASSERT_TRUE(r.readUint(u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_TRUE(r.atEnd());
}

TEST(MsgpackLiteTest, TruncatedValuesAndDeepNestingFailWithoutReadingPastTheEnd) {
  std::string out;
  msgpack::Writer w(out);
  w.str(std::string(300, 'x'));
  for (size_t cut = 0; cut < out.size(); ++cut) {
    msgpack::Reader r(std::string_view(out).substr(0, cut));
    std::string_view s;
    EXPECT_FALSE(r.readStr(s)) << cut;
    EXPECT_FALSE(r.skip()) << cut;
  }
  const std::string deep(100, static_cast<char>(0x91));  // [[[[...
  msgpack::Reader r(deep);
  EXPECT_FALSE(r.skip());
}

TEST(KvEventDecoderTest, DecodesOlderVllmsPositionalArrays) {
  KvEventBatch batch;
  ASSERT_EQ(decodeKvEventBatch(arrayBatch({1, 2, UINT64_MAX}, std::nullopt, {7}), batch),
            KvDecodeError::kNone);
  EXPECT_DOUBLE_EQ(batch.ts, 1733100000.5);
  EXPECT_EQ(batch.data_parallel_rank, 0);
  ASSERT_EQ(batch.events.size(), 2u);
  EXPECT_EQ(batch.events[0].type, KvEventType::kBlockStored);
  EXPECT_EQ(batch.events[0].block_hashes, (std::vector<uint64_t>{1, 2, UINT64_MAX}));
  EXPECT_FALSE(batch.events[0].parent_block_hash.has_value());  // nil parent
  EXPECT_EQ(batch.events[0].token_ids, (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(batch.events[0].block_size, 16u);
  EXPECT_EQ(batch.events[0].medium, "GPU");
  EXPECT_EQ(batch.events[1].type, KvEventType::kBlockRemoved);
  EXPECT_EQ(batch.events[1].block_hashes, (std::vector<uint64_t>{7}));

  ASSERT_EQ(decodeKvEventBatch(arrayBatch({5}, 4, {}), batch), KvDecodeError::kNone);
  EXPECT_EQ(batch.events[0].parent_block_hash, 4u);
}

TEST(KvEventDecoderTest, BothEncodingsRoundTripWithSignedHashes) {
  KvEventBatch in;
  in.ts = 12.25;
  KvEvent stored;
  stored.block_hashes = {0x8000000000000001ull, 3};  // negative as a signed 64-bit int
  stored.parent_block_hash = 0xffffffffffffffffull;
  stored.block_size = 16;
  stored.medium = "GPU";
  in.events.push_back(stored);
  in.events.push_back({KvEventType::kBlockRemoved, {3}, std::nullopt, {}, 0, ""});
  in.events.push_back({KvEventType::kAllBlocksCleared, {}, std::nullopt, {}, 0, ""});
  for (KvEventEncoding encoding : {KvEventEncoding::kMap, KvEventEncoding::kArray}) {
    std::string payload;
    encodeKvEventBatch(in, encoding, payload);
    KvEventBatch out;
    ASSERT_EQ(decodeKvEventBatch(payload, out), KvDecodeError::kNone);
    EXPECT_EQ(out.ts, 12.25);
    EXPECT_EQ(out.data_parallel_rank, -1);
    ASSERT_EQ(out.events.size(), 3u);
    EXPECT_EQ(out.events[0].block_hashes, stored.block_hashes);
    EXPECT_EQ(out.events[0].parent_block_hash, stored.parent_block_hash);
    EXPECT_EQ(out.events[0].block_size, 16u);
    EXPECT_EQ(out.events[1].type, KvEventType::kBlockRemoved);
    EXPECT_EQ(out.events[2].type, KvEventType::kAllBlocksCleared);
  }
}

TEST(KvEventDecoderTest, MapEventsMayOrderKeysFreelyAndCarryNewerFields) {
  std::string out;
  msgpack::Writer w(out);
  w.map(2);
  w.str("events");
  w.array(2);
  w.map(5);
  w.str("block_hashes");
  w.array(1);
  w.bin(std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a", 10));  // bytes: last 8 count
  w.str("group_idx");
  w.integer(0);
  w.str("type");
  w.str("BlockStored");
  w.str("extra_keys");
  w.array(1);
  w.nil();
  w.str("parent_block_hash");
  w.nil();
  w.map(2);  // an event of a type not known here: skipped
  w.str("type");
  w.str("BlockOffloaded");
  w.str("whatever");
  w.array(2);
  w.integer(1);
  w.integer(2);
  w.str("ts");
  w.float64(3.5);
  KvEventBatch batch;
  ASSERT_EQ(decodeKvEventBatch(out, batch), KvDecodeError::kNone);
  ASSERT_EQ(batch.events.size(), 1u);
  EXPECT_EQ(batch.unknown, 1u);
  EXPECT_EQ(batch.events[0].block_hashes, (std::vector<uint64_t>{0x030405060708090aull}));
  EXPECT_EQ(batch.ts, 3.5);
}

TEST(KvEventDecoderTest, MalformedBatchesAreDefinedErrors) {
  KvEventBatch batch;
  EXPECT_EQ(decodeKvEventBatch("", batch), KvDecodeError::kNotABatch);
  EXPECT_EQ(decodeKvEventBatch("\xc1", batch), KvDecodeError::kNotABatch);
  const std::string good = arrayBatch({1, 2}, std::nullopt, {3});
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_NE(decodeKvEventBatch(good.substr(0, cut), batch), KvDecodeError::kNone) << cut;
  }
  EXPECT_EQ(decodeKvEventBatch(good + "x", batch), KvDecodeError::kTrailing);
  // A BlockStored whose hashes are strings of nothing, and one whose hashes are a map.
  std::string bad;
  msgpack::Writer w(bad);
  w.array(2);
  w.float64(0);
  w.array(1);
  w.array(2);
  w.str("BlockStored");
  w.map(0);
  EXPECT_EQ(decodeKvEventBatch(bad, batch), KvDecodeError::kBadEvent);
  // An array claiming 2^32-1 events in a few bytes.
  const std::string huge("\x92\x00\xdd\xff\xff\xff\xff", 7);
  EXPECT_EQ(decodeKvEventBatch(huge, batch), KvDecodeError::kTooLarge);
  EXPECT_EQ(decodeSequence("1234567"), std::nullopt);
  EXPECT_EQ(decodeSequence(encodeSequence(-1)), -1);
  EXPECT_EQ(decodeSequence(encodeSequence(258)), 258);
  EXPECT_EQ(encodeSequence(258), std::string("\0\0\0\0\0\0\x01\x02", 8));
}

TEST(ExactIndexTest, TablesMatchPrefixesAndTheHubPublishesSnapshots) {
  const BlockTable table(std::unordered_set<uint64_t>{0, 1, 2, 3, 99});
  EXPECT_EQ(table.size(), 5u);
  EXPECT_TRUE(table.contains(0));
  EXPECT_FALSE(table.contains(4));
  const std::vector<uint64_t> chain = {1, 2, 3, 4, 99};
  EXPECT_EQ(table.matchPrefix(chain), 3u);

  ExactIndexHub hub;
  ExactIndexCache cache(&hub);
  ASSERT_NE(cache.get(), nullptr);
  int key = 0;
  auto snapshot = std::make_shared<ExactIndexSnapshot>();
  snapshot->replicas.emplace(
      &key, std::make_shared<const BlockTable>(std::unordered_set<uint64_t>{1, 2}));
  hub.publish(snapshot);
  snapshot.reset();
  const ExactIndexSnapshot* seen = cache.get();
  ASSERT_NE(seen->find(&key), nullptr);
  EXPECT_EQ(seen->find(&key)->matchPrefix(chain), 2u);
  hub.publish(std::make_shared<ExactIndexSnapshot>());
  hub.collectRetired();  // the cache still holds the old one: kept
  EXPECT_NE(seen->find(&key), nullptr);
  EXPECT_EQ(cache.get()->find(&key), nullptr);  // the new one
  ExactIndexCache none(nullptr);
  EXPECT_EQ(none.get(), nullptr);
}

std::string storedPayload(std::vector<uint64_t> hashes) {
  KvEventBatch batch;
  KvEvent& e = batch.events.emplace_back();
  e.block_hashes = std::move(hashes);
  e.block_size = 16;
  std::string out;
  encodeKvEventBatch(batch, KvEventEncoding::kMap, out);
  return out;
}

// A replay endpoint from a vector of buffered batches.
struct FakeReplay {
  std::vector<std::pair<int64_t, std::string>> buffer;
  bool reachable = true;
  int calls = 0;
  ReplayFn fn() {
    return [this](int64_t from, std::vector<std::pair<int64_t, std::string>>& out) {
      ++calls;
      out.clear();
      for (const auto& b : buffer) {
        if (b.first >= from) out.push_back(b);
      }
      return reachable;
    };
  }
};

TEST(ReplicaKvTrackerTest, AGapIsRepairedByReplayInOrder) {
  ReplicaKvTracker tracker(16, 10 * kNsPerSec);
  FakeReplay replay;
  for (int64_t s = 0; s < 5; ++s)
    replay.buffer.emplace_back(s, storedPayload({100 + static_cast<uint64_t>(s)}));
  EXPECT_FALSE(tracker.usable(0));
  tracker.receive(0, replay.buffer[0].second, replay.fn(), 0);
  EXPECT_TRUE(tracker.usable(0));
  // 1..3 lost; 4 arrives.
  tracker.receive(4, replay.buffer[4].second, replay.fn(), 0);
  EXPECT_EQ(tracker.stats().gaps.load(), 1);
  EXPECT_EQ(tracker.stats().gaps_repaired.load(), 1);
  EXPECT_EQ(tracker.stats().replay_failures.load(), 0);
  EXPECT_EQ(tracker.blocks().size(), 5u);
  EXPECT_EQ(tracker.stats().batches.load(), 5);
  EXPECT_EQ(tracker.nextSeq(), 5);
  // A duplicate (already replayed) changes nothing.
  tracker.receive(3, replay.buffer[3].second, replay.fn(), 0);
  EXPECT_EQ(tracker.stats().batches.load(), 5);
  EXPECT_TRUE(tracker.usable(0));
}

TEST(ReplicaKvTrackerTest, AnUnfilledGapClearsTheIndexAndFallsBackUntilResynced) {
  ReplicaKvTracker tracker(16, 10 * kNsPerSec);
  FakeReplay replay;
  replay.buffer.emplace_back(0, storedPayload({1}));
  tracker.receive(0, storedPayload({1}), replay.fn(), 0);
  tracker.receive(1, storedPayload({2}), replay.fn(), 0);
  // The replay buffer no longer holds 2..4.
  tracker.receive(5, storedPayload({6}), replay.fn(), kNsPerSec);
  EXPECT_EQ(tracker.stats().gaps.load(), 1);
  EXPECT_EQ(tracker.stats().replay_failures.load(), 1);
  EXPECT_EQ(tracker.blocks(), (std::unordered_set<uint64_t>{6}));
  EXPECT_FALSE(tracker.usable(kNsPerSec));
  EXPECT_TRUE(tracker.usable(11 * kNsPerSec));
  // No replay endpoint at all: the same.
  tracker.receive(9, storedPayload({10}), ReplayFn(), 12 * kNsPerSec);
  EXPECT_EQ(tracker.stats().replay_failures.load(), 2);
  EXPECT_FALSE(tracker.usable(12 * kNsPerSec));
  // An unreachable endpoint too.
  replay.reachable = false;
  tracker.receive(20, storedPayload({21}), replay.fn(), 30 * kNsPerSec);
  EXPECT_EQ(tracker.stats().replay_failures.load(), 3);
}

TEST(ReplicaKvTrackerTest, SequenceZeroAgainMeansTheEngineRestartedEmpty) {
  ReplicaKvTracker tracker(16, 0);
  tracker.receive(0, storedPayload({1, 2}), ReplayFn(), 0);
  tracker.receive(1, storedPayload({3}), ReplayFn(), 0);
  tracker.receive(0, storedPayload({7}), ReplayFn(), 0);
  EXPECT_EQ(tracker.blocks(), (std::unordered_set<uint64_t>{7}));
  EXPECT_EQ(tracker.stats().gaps.load(), 0);
}

TEST(ReplicaKvTrackerTest, RemovalsClearsAndBadPayloadsAreCounted) {
  ReplicaKvTracker tracker(16, 0);
  tracker.receive(0, arrayBatch({1, 2, 3}, std::nullopt, {2}), ReplayFn(), 0);
  EXPECT_EQ(tracker.blocks(), (std::unordered_set<uint64_t>{1, 3}));
  EXPECT_EQ(tracker.stats().events.load(), 2);
  EXPECT_EQ(tracker.stats().blocks.load(), 2);
  tracker.receive(1, "garbage", ReplayFn(), 0);
  EXPECT_EQ(tracker.stats().decode_errors.load(), 1);
  KvEventBatch cleared;
  cleared.events.push_back({KvEventType::kAllBlocksCleared, {}, std::nullopt, {}, 0, ""});
  std::string payload;
  encodeKvEventBatch(cleared, KvEventEncoding::kArray, payload);
  tracker.receive(2, payload, ReplayFn(), 0);
  EXPECT_TRUE(tracker.blocks().empty());
  EXPECT_TRUE(tracker.compatible());
  // Another block size: its hashes cannot be the gateway's.
  KvEventBatch other;
  other.events.push_back({KvEventType::kBlockStored, {5}, std::nullopt, {}, 32, ""});
  payload.clear();
  encodeKvEventBatch(other, KvEventEncoding::kMap, payload);
  tracker.receive(3, payload, ReplayFn(), 0);
  EXPECT_FALSE(tracker.compatible());
  EXPECT_FALSE(tracker.usable(0));
}

TEST(EmulatorKvEventsTest, StoredBlocksAreTheGatewaysHashesAndEvictionsAreRemovals) {
  // The emulator's prompt blocks are the gateway's chain.
  const std::string prompt(64 * 20 + 10, 'q');
  std::string body = R"({"model":"m","prompt":")" + prompt + R"(","max_tokens":2})";
  engine::RequestParser parser;
  const auto parsed = parser.generation(engine::Endpoint::kCompletions, body);
  ASSERT_TRUE(parsed.value.has_value()) << parsed.error;
  const std::vector<uint64_t> gateway = hashPromptBlocks(prompt, 16);
  ASSERT_EQ(gateway.size(), 20u);
  EXPECT_EQ(parsed.value->block_hashes, gateway);

  engine::PerfConfig perf =
      engine::makePerfConfig(engine::builtinProfiles(), "A100", "llama2-7b", 1);
  perf.kv_blocks = 24;  // room for one prompt and a bit
  engine::BatchingModel model(perf);
  model.enableKvEvents();
  std::vector<engine::TokenEvent> events;
  std::vector<KvEvent> kv;
  TimeNs t = 0;
  auto run = [&](engine::RequestId id, const std::vector<uint64_t>& hashes) {
    model.submit({id, static_cast<int>(hashes.size() * 16 + 2), 2, hashes}, t);
    for (int guard = 0; guard < 100000 && model.nextEventTime() >= 0; ++guard) {
      t = std::max(t, model.nextEventTime());
      model.advance(t, events);
    }
    model.takeKvEvents(kv);
  };
  run(1, gateway);
  ASSERT_FALSE(kv.empty());
  std::vector<uint64_t> stored;
  for (const KvEvent& e : kv) {
    ASSERT_EQ(e.type, KvEventType::kBlockStored);
    EXPECT_EQ(e.block_size, 16u);
    stored.insert(stored.end(), e.block_hashes.begin(), e.block_hashes.end());
  }
  EXPECT_EQ(stored, gateway);
  EXPECT_FALSE(kv.front().parent_block_hash.has_value());
  // Another prompt needs the space: the first one's blocks are evicted, reported as removed.
  kv.clear();
  run(2, hashPromptBlocks(std::string(64 * 20, 'z'), 16));
  size_t removed = 0;
  for (const KvEvent& e : kv) {
    if (e.type == KvEventType::kBlockRemoved) removed += e.block_hashes.size();
  }
  EXPECT_GT(removed, 0u);
}

TEST(KvEventTargetsTest, ReplicasWithAnEndpointAreSubscribedAndCompatibilityIsRead) {
  fleet::FleetRegistry registry;
  fleet::ModelSpec model;
  model.name = "m";
  model.replicas.push_back(
      {"10.0.0.1:1",
       {{"kv_events", "tcp://10.0.0.1:5557"}, {"kv_events_replay", "tcp://10.0.0.1:5558"}}});
  model.replicas.push_back({"10.0.0.1:2", {}});
  model.replicas.push_back(
      {"10.0.0.1:3", {{"kv_events", "tcp://10.0.0.1:5559"}, {"kv_events_hash", "sha256_cbor"}}});
  model.replicas.push_back(
      {"10.0.0.1:4", {{"kv_events", "tcp://10.0.0.1:5560"}, {"block_size", "32"}}});
  registry.apply({model}, kNsPerSec, "prefix-cache", 1.0);
  PrefixCacheParams params;
  const auto targets = gateway::kvEventTargets(*registry.latest(), params);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0].replica, "10.0.0.1:1");
  EXPECT_EQ(targets[0].replay_endpoint, "tcp://10.0.0.1:5558");
  EXPECT_TRUE(targets[0].compatible);
  EXPECT_EQ(targets[0].key.get(), registry.latest()->models[0].replicas[0].state.get());
  EXPECT_FALSE(targets[1].compatible);
  EXPECT_FALSE(targets[2].compatible);
}

TEST(PrefixStageExactTest, TheExactIndexWinsWhereUsableAndModesChooseTheSource) {
  fleet::FleetRegistry registry;
  fleet::ModelSpec spec;
  spec.name = "m";
  spec.replicas.push_back({"10.0.0.1:1", {}});
  spec.replicas.push_back({"10.0.0.1:2", {}});
  registry.apply({spec}, kNsPerSec, "prefix-cache", 1.0);
  const auto snapshot = registry.latest();
  const fleet::ModelEntry& model = snapshot->models[0];
  const fleet::ReplicaState& a = *model.replicas[0].state;
  const fleet::ReplicaState& b = *model.replicas[1].state;
  const std::vector<uint64_t> chain = hashPromptBlocks(std::string(64 * 8, 'p'), 16);

  ExactIndexHub hub;
  auto exact = std::make_shared<ExactIndexSnapshot>();
  exact->replicas.emplace(&a, std::make_shared<const BlockTable>(
                                  std::unordered_set<uint64_t>(chain.begin(), chain.begin() + 5)));
  hub.publish(exact);
  for (PrefixCacheMode mode :
       {PrefixCacheMode::kAuto, PrefixCacheMode::kApproximate, PrefixCacheMode::kPrecise}) {
    PrefixCacheParams params;
    params.mode = mode;
    gateway::PrefixStage stage(params, &hub);
    stage.onRouted(*snapshot, model, 1, chain);  // approximate: b holds the whole chain
    stage.onRouted(*snapshot, model, 0, std::span(chain).first(2));
    const auto probe = stage.probe(chain);
    const routing::PrefixMatch on_a = probe.match(a);
    const routing::PrefixMatch on_b = probe.match(b);
    switch (mode) {
      case PrefixCacheMode::kAuto:
        EXPECT_EQ(on_a.blocks, 5u);
        EXPECT_TRUE(on_a.exact);
        EXPECT_EQ(on_b.blocks, 8u);
        EXPECT_FALSE(on_b.exact);
        break;
      case PrefixCacheMode::kApproximate:
        EXPECT_EQ(on_a.blocks, 2u);
        EXPECT_FALSE(on_a.exact);
        EXPECT_EQ(on_b.blocks, 8u);
        break;
      case PrefixCacheMode::kPrecise:
        EXPECT_EQ(on_a.blocks, 5u);
        EXPECT_TRUE(on_a.exact);
        EXPECT_EQ(on_b.blocks, 0u);
        break;
    }
  }
}

TEST(PrefixCacheConfigTest, TheModeAndResyncKeys) {
  PrefixCacheParams params;
  parsePrefixCache(YAML::Load("{mode: precise, resync_seconds: 3}"), "routing.prefix_cache",
                   params);
  EXPECT_EQ(params.mode, PrefixCacheMode::kPrecise);
  EXPECT_EQ(params.resync_seconds, 3);
  EXPECT_THROW(parsePrefixCache(YAML::Load("{mode: exact}"), "routing.prefix_cache", params),
               switchyard::ConfigError);
}

}  // namespace
}  // namespace switchyard

TEST(KvEventsConfigTest, ReadsVllmsJsonAndRefusesWhatItCannotUse) {
  using switchyard::engine::KvEventsEndpoints;
  using switchyard::engine::parseKvEventsConfig;
  KvEventsEndpoints out;
  EXPECT_EQ(parseKvEventsConfig(R"({"enable_kv_cache_events": true, "publisher": "zmq",
      "endpoint": "tcp://127.0.0.1:5557", "replay_endpoint": "tcp://127.0.0.1:5558",
      "topic": "", "buffer_steps": 10000, "hwm": 100000, "max_queue_size": 100000})",
                                out),
            "");
  EXPECT_EQ(out.endpoint, "tcp://127.0.0.1:5557");
  EXPECT_EQ(out.replay_endpoint, "tcp://127.0.0.1:5558");
  // vLLM's default endpoint; no replay unless asked.
  EXPECT_EQ(parseKvEventsConfig(R"({"enable_kv_cache_events": true, "publisher": "zmq"})", out),
            "");
  EXPECT_EQ(out.endpoint, "tcp://*:5557");
  EXPECT_EQ(out.replay_endpoint, "");
  // Disabled or the null publisher: no events.
  EXPECT_EQ(parseKvEventsConfig(R"({"enable_kv_cache_events": false, "publisher": "zmq"})", out),
            "");
  EXPECT_EQ(out.endpoint, "");
  EXPECT_EQ(parseKvEventsConfig(R"({"enable_kv_cache_events": true, "publisher": "null"})", out),
            "");
  EXPECT_EQ(out.endpoint, "");
  EXPECT_NE(parseKvEventsConfig("not json", out), "");
  EXPECT_NE(parseKvEventsConfig("[1]", out), "");
  EXPECT_NE(parseKvEventsConfig(R"({"publisher": "kafka"})", out).find("publisher"),
            std::string::npos);
  EXPECT_NE(parseKvEventsConfig(R"({"enable_kv_cache_events": "yes"})", out).find("wrong type"),
            std::string::npos);
  EXPECT_NE(parseKvEventsConfig(R"({"colour": 1})", out).find("unknown key 'colour'"),
            std::string::npos);
}
