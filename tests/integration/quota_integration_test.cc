// A key's budgets across three gateway processes sharing a real Redis: requests per minute and
// tokens per minute hold globally, whether the budgets ride along a shared in-flight admission or
// go to Redis on their own, and when Redis goes away each gateway keeps to its share.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "gateway_harness.h"
#include "support/redis_server.h"

namespace switchyard::testing {
namespace {

std::string chat(int max_tokens) {
  return "{\"model\":\"llama2-7b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
         "\"max_tokens\":" + std::to_string(max_tokens) + "}";
}

class QuotaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engines_.push_back(startEngine("A100"));
    engines_.push_back(startEngine("A100"));
    char pattern[] = "/tmp/switchyard-quota-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    keys_ = dir_ + "/keys.yaml";
  }
  void TearDown() override {
    gateways_.clear();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string addKey(const std::string& name, int rpm, int tpm) {
    auto child = spawnSwitchyard({"keys", "add", "--file", keys_, "--name", name, "--models", "*",
                                  "--rpm", std::to_string(rpm), "--tpm", std::to_string(tpm)});
    EXPECT_EQ(child->waitExit(deadlineIn(20s)), std::optional<int>(0));
    const auto lines = child->allStdoutLines(deadlineIn(5s));
    return lines.empty() ? std::string() : lines[0];
  }
  // `inflight_limit` > 0: the model's admission is shared, and the key's budgets ride along it.
  void startGateways(int inflight_limit) {
    std::string replicas;
    for (auto& e : engines_) replicas += replicaLine(e->port(), "A100");
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
        "auth: { keys_file: " + keys_ + " }\n"
        "shared_state: { backend: redis, address: " + redis_.address() +
            ", sync_interval_ms: 100, liveness_ttl_ms: 600, call_timeout_ms: 200,\n"
            "                reconnect_min_ms: 50, reconnect_max_ms: 200 }\n"
            "models:\n  - name: llama2-7b\n" +
            (inflight_limit > 0
                 ? "    limits: { max_inflight_per_replica: " + std::to_string(inflight_limit) +
                       " }\n"
                 : std::string()) +
            "    replicas:\n" + replicas,
        ".yaml");
    for (int i = 0; i < 3; ++i) {
      gateways_.push_back(std::make_unique<Process>(
          std::vector<std::string>{"gateway", "--config", config_->path()}));
      ASSERT_NE(gateways_.back()->port(1), 0);
    }
  }
  // Sends `n` requests round robin over the gateways; the statuses in order.
  std::vector<int> send(const std::string& key, int n, int max_tokens = 4) {
    std::vector<int> statuses;
    for (int i = 0; i < n; ++i) {
      const HttpResult r =
          httpRequest(gateways_[static_cast<size_t>(i) % gateways_.size()]->port(0), "POST",
                      "/v1/chat/completions", chat(max_tokens),
                      {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + key}});
      statuses.push_back(r.status);
    }
    return statuses;
  }
  static int count(const std::vector<int>& statuses, int status) {
    return static_cast<int>(std::count(statuses.begin(), statuses.end(), status));
  }

  RedisServer redis_;
  std::vector<std::unique_ptr<Process>> engines_;
  std::string dir_;
  std::string keys_;
  std::unique_ptr<TempFile> config_;
  std::vector<std::unique_ptr<Process>> gateways_;
};

TEST_F(QuotaTest, AKeysRequestsPerMinuteHoldAcrossThreeGateways) {
  const std::string key = addKey("shared", /*rpm=*/6, 0);
  startGateways(/*inflight_limit=*/0);  // the budget goes to Redis on its own
  const std::vector<int> statuses = send(key, 12);
  EXPECT_EQ(count(statuses, 200), 6);
  EXPECT_EQ(count(statuses, 429), 6);
}

TEST_F(QuotaTest, BudgetsRideAlongASharedAdmissionInOneRoundTrip) {
  const std::string key = addKey("merged", /*rpm=*/5, 0);
  startGateways(/*inflight_limit=*/8);
  const std::vector<int> statuses = send(key, 12);
  EXPECT_EQ(count(statuses, 200), 5);
  EXPECT_EQ(count(statuses, 429), 7);
  // One admission call to Redis per request (and a release per admitted one): the budgets
  // added none.
  double calls = 0;
  for (auto& g : gateways_) {
    calls += metricSample(httpRequest(g->port(1), "GET", "/metrics").body,
                          "switchyard_shared_state_calls_total{role=\"request\"}");
  }
  EXPECT_LE(calls, 12 + 5);
}

TEST_F(QuotaTest, ATokenBudgetHoldsAcrossGatewaysFromUsage) {
  // About 70 tokens per request (the emulator produces max_tokens): 200 per minute fit two.
  const std::string key = addKey("tokens", 0, /*tpm=*/200);
  startGateways(0);
  const std::vector<int> statuses = send(key, 6, 64);
  EXPECT_GE(count(statuses, 200), 2);
  EXPECT_LE(count(statuses, 200), 3);
  EXPECT_EQ(count(statuses, 200) + count(statuses, 429), 6);
}

TEST_F(QuotaTest, WithRedisAwayEachGatewayKeepsToItsShare) {
  const std::string key = addKey("alone", /*rpm=*/30, 0);
  startGateways(0);
  // Every gateway has seen the others before Redis goes.
  for (auto& g : gateways_) {
    ASSERT_TRUE(waitUntil(
        [&] {
          return metricSample(httpRequest(g->port(1), "GET", "/metrics").body,
                              "switchyard_shared_state_live_gateways{model=\"llama2-7b\"}") == 3;
        },
        10s));
  }
  redis_.stop(/*kill=*/true);
  // 30 per minute over 3 gateways: each lets about 10 through on its own.
  const std::vector<int> statuses = send(key, 45);
  EXPECT_GE(count(statuses, 200), 27);
  EXPECT_LE(count(statuses, 200), 33);
}

}  // namespace
}  // namespace switchyard::testing
