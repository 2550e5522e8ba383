// Prefix-cache routing end to end: a gateway with strategy prefix-cache in front of three
// emulated engines (prefix caching on). A conversation's later turns, which resend its history,
// go to the replica that served its first turn, the engine there reports prefix-cache hits, and
// the decision shows each candidate's match.
#include <gtest/gtest.h>

#include <set>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

// Distinct words per conversation and turn (not one repeated word: blocks must differ).
std::string text(int words, int seed) {
  std::string out;
  for (int i = 0; i < words; ++i) out += "w" + std::to_string(seed * 100000 + i) + " ";
  return out;
}

class PrefixCacheGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) engines_.push_back(startEngine(i == 0 ? "L20" : "A10"));
    std::string replicas;
    for (int i = 0; i < 3; ++i)
      replicas += replicaLine(engines_[i]->port(), i == 0 ? "L20" : "A10");
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
        "models:\n  - name: llama2-7b\n    routing_strategy: prefix-cache\n    replicas:\n" +
            replicas,
        ".yaml");
    gateway_ =
        std::make_unique<Process>(std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(1), 0);
  }
  // A second gateway with the same configuration, learning apart from the first.
  void startSecondGateway() {
    second_ =
        std::make_unique<Process>(std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(second_->port(1), 0);
  }
  HttpResult chat(const std::string& messages, const Process* gateway = nullptr) {
    Headers headers = kJson;
    headers.push_back({"x-switchyard-explain", "1"});
    return httpRequest((gateway != nullptr ? gateway : gateway_.get())->port(0), "POST",
                       "/v1/chat/completions",
                       "{\"model\":\"llama2-7b\",\"max_tokens\":4,\"messages\":[" + messages + "]}",
                       headers, 30s);
  }
  double hits(const std::string& pod) {
    for (const auto& engine : engines_) {
      if (pod == "127.0.0.1:" + std::to_string(engine->port())) {
        const std::string page = httpRequest(engine->port(), "GET", "/metrics").body;
        return metricSample(page, "vllm:prefix_cache_hits_total");
      }
    }
    return -1;
  }

  std::vector<std::unique_ptr<Process>> engines_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
  std::unique_ptr<Process> second_;
};

TEST_F(PrefixCacheGatewayTest, AConversationStaysWhereItsHistoryIsCached) {
  for (int conversation = 1; conversation <= 3; ++conversation) {
    std::string history = "{\"role\":\"system\",\"content\":\"" + text(300, conversation) + "\"}";
    std::string pod;
    for (int turn = 0; turn < 4; ++turn) {
      history += ",{\"role\":\"user\",\"content\":\"" + text(40, conversation * 10 + turn) + "\"}";
      const HttpResult r = chat(history);
      ASSERT_EQ(r.status, 200) << r.body;
      const std::string decision = r.header("x-switchyard-decision");
      EXPECT_NE(decision.find("prefix_blocks="), std::string::npos) << decision;
      EXPECT_NE(decision.find("prefix_match="), std::string::npos) << decision;
      if (turn == 0) {
        pod = r.header("target-pod");
      } else {
        EXPECT_EQ(r.header("target-pod"), pod) << "turn " << turn << ": " << decision;
        EXPECT_NE(decision.find(pod + ":"), std::string::npos) << decision;
        EXPECT_EQ(decision.find(pod + ":0"), std::string::npos) << decision;  // matched there
      }
      history += ",{\"role\":\"assistant\",\"content\":\"" +
                 text(20, conversation * 10 + turn + 5) + "\"}";
    }
    EXPECT_GT(hits(pod), 0) << pod;
  }
  const std::string decisions = httpRequest(gateway_->port(1), "GET", "/debug/decisions").body;
  EXPECT_NE(decisions.find("\"prefix_match_blocks\""), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("\"prefix\":{\"block_tokens\":16"), std::string::npos) << decisions;
}

}  // namespace
}  // namespace switchyard::testing

namespace switchyard::testing {
namespace {

// Two gateways that share nothing: a conversation's first turn through one and its second
// through the other. The second gateway has never seen the prefix, yet sends it where the first
// did: both place an unknown prefix of at least home_min_tokens (about 1,900 tokens here) on its
// home replica (routing.prefix_cache.home_tokens).
TEST_F(PrefixCacheGatewayTest, GatewaysThatLearnApartPlaceAnUnknownPrefixAlike) {
  startSecondGateway();
  // A home's weight is its replica's KV cache as its engine reports it: both gateways must have
  // read every engine once, or they could rank by different weights.
  for (const Process* gateway : {gateway_.get(), second_.get()}) {
    for (const auto& engine : engines_) {
      const std::string name = "127.0.0.1:" + std::to_string(engine->port());
      EXPECT_TRUE(waitUntil(
          [&] {
            return fleetField(gateway->port(1), name, "signals").find("\"kv_capacity_tokens\":") !=
                   std::string::npos;
          },
          10s))
          << name;
    }
  }
  std::set<std::string> pods;  // homes chosen among all three replicas
  std::string decisions;
  // A replica a gateway has excluded (a probe timing out on a loaded machine) is no one's home
  // meanwhile: only decisions among all three say where homes fall.
  auto noteHome = [&](const HttpResult& first) {
    const std::string decision = first.header("x-switchyard-decision");
    decisions += decision + "\n";
    if (decision.find("ready=3;") != std::string::npos &&
        decision.find("excluded=") == std::string::npos) {
      pods.insert(first.header("target-pod"));
    }
  };
  auto firstTurn = [](int conversation) {
    return "{\"role\":\"system\",\"content\":\"" + text(800, 50 + conversation) +
           "\"},{\"role\":\"user\",\"content\":\"" + text(30, 70 + conversation) + "\"}";
  };
  for (int conversation = 1; conversation <= 10; ++conversation) {
    std::string history = firstTurn(conversation);
    const HttpResult first = chat(history);
    ASSERT_EQ(first.status, 200) << first.body;
    const std::string pod = first.header("target-pod");
    EXPECT_NE(first.header("x-switchyard-decision").find(pod + ":0(home)"), std::string::npos)
        << first.header("x-switchyard-decision");
    history += ",{\"role\":\"assistant\",\"content\":\"" + text(20, 80 + conversation) +
               "\"},{\"role\":\"user\",\"content\":\"" + text(30, 90 + conversation) + "\"}";
    const HttpResult second = chat(history, second_.get());
    ASSERT_EQ(second.status, 200) << second.body;
    EXPECT_EQ(second.header("target-pod"), pod) << second.header("x-switchyard-decision");
    noteHome(first);
  }
  // Homes differ from one prefix to the next. A home falls on a replica in proportion to its KV
  // cache, and the L20 holds more than three times an A10's: ten prefixes all land on it about once
  // in a hundred runs, so more first turns (through either gateway) are drawn until the chance is
  // below one in a million.
  for (int conversation = 11; conversation <= 40 && pods.size() < 2; ++conversation) {
    const HttpResult first =
        chat(firstTurn(conversation), conversation % 2 == 0 ? second_.get() : nullptr);
    ASSERT_EQ(first.status, 200) << first.body;
    noteHome(first);
  }
  EXPECT_GE(pods.size(), 2u) << decisions;
}

}  // namespace
}  // namespace switchyard::testing

namespace switchyard::testing {
namespace {

// One gateway with two workers; every request opens a new connection, so the kernel spreads a
// conversation's turns over both. Each turn after the first still goes where the history is
// cached and matches there: the worker that routed a turn told the other
// (routing.prefix_cache.share_between_workers). The prompts are shorter than home_min_tokens, so
// homes do not place them.
TEST_F(PrefixCacheGatewayTest, TwoWorkersLearnFromEachOthersRouting) {
  const TempFile config(
      "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
      "models:\n  - name: llama2-7b\n    routing_strategy: prefix-cache\n    replicas:\n" +
          replicaLine(engines_[0]->port(), "L20") + replicaLine(engines_[1]->port(), "A10") +
          replicaLine(engines_[2]->port(), "A10"),
      ".yaml");
  const Process gateway({"gateway", "--config", config.path()});
  ASSERT_NE(gateway.port(1), 0);
  for (int conversation = 1; conversation <= 4; ++conversation) {
    std::string history =
        "{\"role\":\"system\",\"content\":\"" + text(150, 200 + conversation) + "\"}";
    std::string pod;
    for (int turn = 0; turn < 5; ++turn) {
      history += ",{\"role\":\"user\",\"content\":\"" +
                 text(20, 300 + conversation * 10 + turn) + "\"}";
      const HttpResult r = chat(history, &gateway);
      ASSERT_EQ(r.status, 200) << r.body;
      const std::string decision = r.header("x-switchyard-decision");
      EXPECT_EQ(decision.find("(home)"), std::string::npos) << decision;
      if (turn == 0) {
        pod = r.header("target-pod");
      } else {
        EXPECT_EQ(r.header("target-pod"), pod) << "turn " << turn << ": " << decision;
        EXPECT_EQ(decision.find(pod + ":0"), std::string::npos) << decision;  // matched there
      }
      history += ",{\"role\":\"assistant\",\"content\":\"" +
                 text(10, 400 + conversation * 10 + turn) + "\"}";
    }
  }
  const std::string metrics = httpRequest(gateway.port(1), "GET", "/metrics").body;
  EXPECT_GE(metricSample(metrics, "switchyard_prefix_index_shared_total"), 16) << metrics;
  EXPECT_EQ(metricSample(metrics, "switchyard_prefix_index_share_dropped_total"), 0);
}

}  // namespace
}  // namespace switchyard::testing
