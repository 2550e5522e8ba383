// Precise prefix-cache routing end to end over real ZMQ on loopback: emulated engines publish
// their KV events (PUB + ROUTER replay, as vLLM), the gateway subscribes, and a long prompt that
// one engine cached outside the gateway (so the gateway's own routing history knows nothing of
// it) is routed to that engine from its exact index. A subscriber in this process shows lost
// batches being found by sequence number and repaired by replay, or, without a replay endpoint,
// the replica falling back.
#include <gtest/gtest.h>

#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/kv_event_subscriber.h"
#include "fleet/kv_index/prompt_blocks.h"
#include "gateway/kv_events_plane.h"
#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

std::string words(int count, int seed) {
  std::string out;
  for (int i = 0; i < count; ++i) out += "v" + std::to_string(seed * 100000 + i) + " ";
  return out;
}

struct KvEngine {
  uint16_t pub_port = 0;
  uint16_t replay_port = 0;
  std::unique_ptr<Process> process;
  std::string pub() const { return "tcp://127.0.0.1:" + std::to_string(pub_port); }
  std::string replay() const { return "tcp://127.0.0.1:" + std::to_string(replay_port); }
  std::string name() const { return "127.0.0.1:" + std::to_string(process->port()); }
};

// An engine publishing KV events on two OS-chosen free ports (`encoding`: map or array).
KvEngine startKvEngine(const std::string& encoding) {
  KvEngine engine;
  engine.pub_port = deadPort();
  engine.replay_port = deadPort();
  engine.process = std::make_unique<Process>(std::vector<std::string>{
      "engine", "--gpu", "A10", "--model", "llama2-7b", "--listen", "127.0.0.1:0",
      "--kv-events-endpoint", engine.pub(), "--kv-events-replay-endpoint", engine.replay(),
      "--kv-events-encoding", encoding});
  return engine;
}

// An engine started the way vLLM is, with --kv-events-config (no replay endpoint).
KvEngine startVllmConfiguredEngine() {
  KvEngine engine;
  engine.pub_port = deadPort();
  engine.process = std::make_unique<Process>(std::vector<std::string>{
      "engine", "--gpu", "A10", "--model", "llama2-7b", "--listen", "127.0.0.1:0",
      "--kv-events-config",
      "{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"" + engine.pub() +
          "\", \"topic\": \"\"}"});
  return engine;
}

HttpResult complete(uint16_t port, const std::string& prompt, const Headers& extra = {}) {
  Headers headers = kJson;
  headers.insert(headers.end(), extra.begin(), extra.end());
  return httpRequest(port, "POST", "/v1/completions",
                     "{\"model\":\"llama2-7b\",\"max_tokens\":2,\"prompt\":\"" + prompt + "\"}",
                     headers, 30s);
}

TEST(KvEventsIntegrationTest, ALongPromptGoesToTheEngineThatReallyHoldsItsBlocks) {
  std::vector<KvEngine> engines;
  engines.push_back(startKvEngine("map"));
  engines.push_back(startKvEngine("array"));
  engines.push_back(startKvEngine("map"));
  std::string replicas;
  for (const KvEngine& e : engines) {
    replicas += "      - address: " + e.name() + "\n        labels: { gpu: A10, engine: vllm, " +
                "kv_events: \"" + e.pub() + "\", kv_events_replay: \"" + e.replay() + "\" }\n";
  }
  TempFile config(
      "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
      "routing:\n  prefix_cache: { mode: auto }\n"
      "models:\n  - name: llama2-7b\n    routing_strategy: prefix-cache\n    replicas:\n" +
          replicas,
      ".yaml");
  Process gateway({"gateway", "--config", config.path()});
  ASSERT_NE(gateway.port(1), 0);

  // The long prompt goes to engine 1 directly: only its KV events can tell the gateway.
  const std::string prompt = words(400, 7);
  const size_t prompt_blocks = fleet::kv_index::hashPromptBlocks(prompt, 16).size();
  ASSERT_EQ(complete(engines[1].process->port(), prompt).status, 200);
  const std::string series = "switchyard_kv_index_blocks{replica=\"" + engines[1].name() + "\"}";
  // Small distinct prompts until the subscription has caught up (its first batch replays
  // whatever it missed while connecting).
  int warm = 0;
  ASSERT_TRUE(waitUntil(
      [&] {
        complete(engines[1].process->port(), words(40, 1000 + warm++));
        const std::string page = httpRequest(gateway.port(1), "GET", "/metrics").body;
        return metricSample(page, series) >= static_cast<double>(prompt_blocks);
      },
      20s))
      << httpRequest(gateway.port(1), "GET", "/metrics").body;

  for (int i = 0; i < 3; ++i) {
    const HttpResult r = complete(gateway.port(0), prompt, {{"x-switchyard-explain", "1"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), engines[1].name()) << r.header("x-switchyard-decision");
  }
  const std::string decisions = httpRequest(gateway.port(1), "GET", "/debug/decisions").body;
  EXPECT_NE(decisions.find("\"prefix_match_source\":\"exact\""), std::string::npos) << decisions;
  const std::string page = httpRequest(gateway.port(1), "GET", "/metrics").body;
  EXPECT_GT(metricSample(
                page, "switchyard_kv_events_received_total{replica=\"" + engines[1].name() + "\"}"),
            0)
      << page;
  EXPECT_GT(metricSample(
                page, "switchyard_kv_event_batches_total{replica=\"" + engines[1].name() + "\"}"),
            0);
  EXPECT_EQ(metricSample(page, "switchyard_kv_index_exact{replica=\"" + engines[1].name() + "\"}"),
            1);
  EXPECT_EQ(metricSample(page, "switchyard_kv_event_decode_errors_total{replica=\"" +
                                   engines[1].name() + "\"}"),
            0);
}

// A subscriber in this process against a real engine: `drop` batches are dropped on arrival
// (as if lost), so the next one reveals a gap.
class KvSubscriberGapTest : public ::testing::Test {
 protected:
  void subscribe(const KvEngine& engine, bool with_replay) {
    fleet::kv_index::KvSubscriberOptions options;
    options.resync = 60 * kNsPerSec;
    subscriber_ = std::make_unique<fleet::kv_index::KvEventSubscriber>(hub_, options);
    subscriber_->start();
    key_ = std::make_shared<int>(0);
    subscriber_->setTargets(
        {{engine.name(), key_, engine.pub(), with_replay ? engine.replay() : std::string(), true}});
    // Until a batch arrives: the subscription is up.
    int warm = 0;
    ASSERT_TRUE(waitUntil(
        [&] {
          complete(engine.process->port(), words(20, 500 + warm++));
          return metric("switchyard_kv_event_batches_total", engine) > 0;
        },
        20s));
  }
  double metric(const std::string& name, const KvEngine& engine) {
    std::string page;
    gateway::appendKvEventMetrics(page, *subscriber_);
    return metricSample("\n" + page, name + "{replica=\"" + engine.name() + "\"}");
  }
  bool exactHas(const std::string& prompt) {
    fleet::kv_index::ExactIndexCache cache(&hub_);
    const fleet::kv_index::ExactIndexSnapshot* snapshot = cache.get();
    const fleet::kv_index::BlockTable* table = snapshot->find(key_.get());
    const auto chain = fleet::kv_index::hashPromptBlocks(prompt, 16);
    return table != nullptr && table->matchPrefix(chain) == chain.size();
  }

  fleet::kv_index::ExactIndexHub hub_;
  std::shared_ptr<int> key_;
  std::unique_ptr<fleet::kv_index::KvEventSubscriber> subscriber_;
};

TEST_F(KvSubscriberGapTest, LostBatchesAreFoundBySequenceAndRepairedByReplay) {
  const KvEngine engine = startKvEngine("array");
  subscribe(engine, true);
  subscriber_->dropNext(engine.name(), 2);
  const std::string lost_a = words(100, 1), lost_b = words(100, 2), after = words(100, 3);
  ASSERT_EQ(complete(engine.process->port(), lost_a).status, 200);
  ASSERT_EQ(complete(engine.process->port(), lost_b).status, 200);
  ASSERT_EQ(complete(engine.process->port(), after).status, 200);
  ASSERT_TRUE(waitUntil(
      [&] { return metric("switchyard_kv_event_gaps_repaired_total", engine) >= 1; }, 10s));
  EXPECT_GE(metric("switchyard_kv_event_gaps_total", engine), 1);
  EXPECT_EQ(metric("switchyard_kv_event_replay_failures_total", engine), 0);
  // The lost prompts' blocks are in the exact index all the same, and it is in use.
  EXPECT_TRUE(
      waitUntil([&] { return exactHas(lost_a) && exactHas(lost_b) && exactHas(after); }, 5s));
  EXPECT_EQ(metric("switchyard_kv_index_exact", engine), 1);
  subscriber_->stop();
}

TEST_F(KvSubscriberGapTest, WithoutReplayALossClearsTheIndexAndTheReplicaFallsBack) {
  const KvEngine engine = startKvEngine("map");
  subscribe(engine, false);
  subscriber_->dropNext(engine.name(), 1);
  ASSERT_EQ(complete(engine.process->port(), words(100, 4)).status, 200);
  ASSERT_EQ(complete(engine.process->port(), words(100, 5)).status, 200);
  ASSERT_TRUE(waitUntil(
      [&] { return metric("switchyard_kv_event_replay_failures_total", engine) >= 1; }, 10s));
  EXPECT_EQ(metric("switchyard_kv_event_gaps_repaired_total", engine), 0);
  EXPECT_TRUE(waitUntil([&] { return metric("switchyard_kv_index_exact", engine) == 0; }, 5s));
  // Not in the published snapshot: workers route it approximately.
  EXPECT_TRUE(waitUntil(
      [&] {
        fleet::kv_index::ExactIndexCache cache(&hub_);
        return cache.get()->find(key_.get()) == nullptr;
      },
      5s));
  subscriber_->stop();
}

TEST(KvEventsIntegrationTest, AnEngineStartedWithVllmsKvEventsConfigPublishes) {
  const KvEngine engine = startVllmConfiguredEngine();
  TempFile config(
      "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
      "routing:\n  prefix_cache: { mode: precise }\n"
      "models:\n  - name: llama2-7b\n    routing_strategy: prefix-cache\n"
      "    replicas:\n      - address: " +
          engine.name() + "\n        labels: { gpu: A10, kv_events: \"" + engine.pub() + "\" }\n",
      ".yaml");
  Process gateway({"gateway", "--config", config.path()});
  ASSERT_NE(gateway.port(1), 0);
  const std::string series = "switchyard_kv_index_blocks{replica=\"" + engine.name() + "\"}";
  int sent = 0;
  ASSERT_TRUE(waitUntil(
      [&] {
        complete(engine.process->port(), words(200, 2000 + sent++));
        const std::string page = httpRequest(gateway.port(1), "GET", "/metrics").body;
        return metricSample(page, series) > 0;
      },
      20s))
      << httpRequest(gateway.port(1), "GET", "/metrics").body;
}

}  // namespace
}  // namespace switchyard::testing
