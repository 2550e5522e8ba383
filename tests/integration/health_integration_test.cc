// Health, retries and protection end to end: emulated engines with injected faults behind a real
// gateway. Every test is bounded; health timings are shortened in the gateway's config.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

constexpr char kFastHealth[] =
    "health: { failure_threshold: 2, hard_failure_threshold: 4, probe_interval_ms: 150,\n"
    "          probe_timeout_ms: 300, base_backoff_ms: 400, max_backoff_ms: 2000,\n"
    "          half_open_successes: 2 }\n"
    "retry: { max_attempts: 3, budget_min_per_second: 1000 }\n";

std::string address(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

void setFaults(uint16_t engine_port, const std::string& json) {
  const HttpResult r = httpRequest(engine_port, "POST", "/admin/faults", json, kJson);
  ASSERT_EQ(r.status, 200) << r.body;
}

class HealthTest : public ::testing::Test {
 protected:
  void startFleet(int engines) {
    for (int i = 0; i < engines; ++i) engines_.push_back(startEngine(i % 2 ? "L20" : "A100"));
  }
  void startGateway(const std::string& model_extra = "", const std::string& top = kFastHealth) {
    std::string replicas;
    for (auto& e : engines_) replicas += replicaLine(e->port(), "A100");
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
        "reload_poll_interval_ms: 100\n" + top +
            "models:\n  - name: llama2-7b\n    routing_strategy: round-robin\n" + model_extra +
            "    replicas:\n" + replicas,
        ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(1), 0);
  }
  HttpResult chat(int max_tokens = 2) {
    return httpRequest(gateway_->port(0), "POST", "/v1/chat/completions",
                       chatBody("llama2-7b", max_tokens), kJson, 20s);
  }
  std::string health(int engine) {
    return fleetField(gateway_->port(1), address(engines_[engine]->port()), "health");
  }

  std::vector<std::unique_ptr<Process>> engines_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

TEST_F(HealthTest, FailingReplicaIsRetriedAroundExcludedAndRestoredAfterItHeals) {
  startFleet(2);
  startGateway();
  setFaults(engines_[0]->port(), R"({"error_rate": 1, "error_status": 500})");
  // No client sees the 500s: every failed attempt is retried on the other replica.
  for (int i = 0; i < 20; ++i) {
    const HttpResult r = chat();
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), address(engines_[1]->port()));
  }
  EXPECT_TRUE(waitUntil([&] { return health(0) == "excluded" || health(0) == "half_open"; }, 5s))
      << health(0);
  EXPECT_NE(fleetField(gateway_->port(1), address(engines_[0]->port()), "health_reason"),
            "none");
  // The exclusion is counted for operators.
  const std::string metrics = httpRequest(gateway_->port(1), "GET", "/metrics").body;
  const std::string series = "switchyard_replica_health_exclusions_total{model=\"llama2-7b\","
                             "replica=\"" + address(engines_[0]->port()) + "\"";
  const size_t at = metrics.find(series);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GE(std::stod(metrics.substr(metrics.find("} ", at) + 2)), 1.0);

  setFaults(engines_[0]->port(), "{}");
  // Once healed, trial requests in half-open bring it back.
  EXPECT_TRUE(waitUntil(
      [&] {
        EXPECT_EQ(chat().status, 200);
        return health(0) == "healthy";
      },
      8s))
      << httpRequest(gateway_->port(1), "GET", "/debug/fleet").body;
}

TEST_F(HealthTest, CrashedReplicaIsExcludedByProbesAndReturnsWhenRestarted) {
  startFleet(2);
  startGateway();
  const uint16_t port = engines_[0]->port();
  engines_[0]->child().sendSignal(SIGKILL);
  engines_[0]->child().waitExit(deadlineIn(5s));
  engines_[0]->markStopped();
  for (int i = 0; i < 10; ++i) ASSERT_EQ(chat().status, 200);  // failover on connect errors
  EXPECT_TRUE(waitUntil([&] { return health(0) == "excluded"; }, 5s)) << health(0);

  engines_[0] = startEngine("A100", address(port));
  ASSERT_EQ(engines_[0]->port(), port);
  EXPECT_TRUE(waitUntil([&] { return health(0) == "healthy"; }, 8s)) << health(0);
  std::map<std::string, int> pods;
  for (int i = 0; i < 6; ++i) ++pods[chat().header("target-pod")];
  EXPECT_EQ(pods.size(), 2u);  // back in rotation
}

TEST_F(HealthTest, HangingReplicaTimesOutAndTheRequestIsServedElsewhere) {
  startFleet(2);
  startGateway("    timeouts: { upstream_first_byte_ms: 300 }\n");
  setFaults(engines_[0]->port(), R"({"hang": 1})");
  for (int i = 0; i < 6; ++i) {
    const HttpResult r = chat();
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), address(engines_[1]->port()));
  }
  EXPECT_TRUE(waitUntil([&] { return health(0) != "healthy"; }, 5s));
}

TEST_F(HealthTest, TruncatedStreamCountsAgainstTheReplica) {
  startFleet(1);
  startGateway();
  setFaults(engines_[0]->port(), R"({"truncate_stream": 1, "truncate_after_tokens": 2})");
  const StreamResult s = streamRequest(gateway_->port(0), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 8, true), kJson, 20s);
  EXPECT_EQ(s.body.find("[DONE]"), std::string::npos);
  EXPECT_TRUE(waitUntil(
      [&] {
        return fleetField(gateway_->port(1), address(engines_[0]->port()),
                          "consecutive_failures") == "1";
      },
      3s));
}

TEST_F(HealthTest, EveryReplicaFailingStillRoutesInsteadOfRefusing) {
  startFleet(2);
  startGateway();
  setFaults(engines_[0]->port(), R"({"error_rate": 1, "error_status": 503})");
  setFaults(engines_[1]->port(), R"({"error_rate": 1, "error_status": 503})");
  for (int i = 0; i < 12; ++i) {
    const HttpResult r = chat();
    EXPECT_EQ(r.status, 503) << r.body;  // the engines' own answer, relayed: never a gateway 503
    EXPECT_FALSE(r.header("target-pod").empty());
  }
}

TEST_F(HealthTest, InflightLimitIsNeverExceeded) {
  startFleet(2);
  startGateway("    limits: { max_inflight_per_replica: 2 }\n");
  constexpr int kClients = 10;
  std::atomic<int> ok{0}, limited{0};
  std::vector<std::thread> clients;
  std::atomic<bool> bad_retry_after{false};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      const StreamResult r = streamRequest(gateway_->port(0), "POST", "/v1/chat/completions",
                                           chatBody("llama2-7b", 60, true), kJson, 30s);
      if (r.status == 200) ++ok;
      if (r.status == 429) {
        ++limited;
        if (r.header("retry-after").empty() ||
            r.body.find("replica_inflight_limit") == std::string::npos) {
          bad_retry_after = true;
        }
      }
    });
  }
  // While the streams run, neither engine ever holds more than the limit.
  int max_seen = 0;
  for (int sample = 0; sample < 20; ++sample) {
    for (auto& e : engines_) {
      const std::string metrics = httpRequest(e->port(), "GET", "/metrics").body;
      const size_t at = metrics.find("\nvllm:num_requests_running{");
      if (at == std::string::npos) continue;
      const size_t space = metrics.find(' ', metrics.find('}', at));
      max_seen = std::max(max_seen, std::stoi(metrics.substr(space + 1)));
    }
    std::this_thread::sleep_for(25ms);  // sampling interval while the streams run
  }
  for (auto& c : clients) c.join();
  EXPECT_LE(max_seen, 2);
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(limited.load(), kClients - 4);
  EXPECT_FALSE(bad_retry_after.load());
}

TEST_F(HealthTest, RateLimitScalesWithRoutableReplicas) {
  startFleet(2);
  startGateway("    limits: { requests_per_second_per_replica: 4 }\n");
  auto admittedIn = [&](std::chrono::milliseconds window) {
    int admitted = 0;
    const SteadyTime end = deadlineIn(window);
    while (std::chrono::steady_clock::now() < end) {
      const HttpResult r = chat(1);
      if (r.status == 200) ++admitted;
      if (r.status == 429) {
        EXPECT_NE(r.body.find("model_rate_limit_exceeded"), std::string::npos);
        EXPECT_FALSE(r.header("retry-after").empty());
      }
    }
    return admitted;
  };
  // 2 routable replicas x 4/s = 8/s with a one-second burst: ~8 + 8 x 1.5 in 1.5 s.
  const int two = admittedIn(1500ms);
  EXPECT_GE(two, 14);
  EXPECT_LE(two, 24);
  // One replica dies: the model-wide rate follows the routable count down to 4/s.
  engines_[1]->child().sendSignal(SIGKILL);
  engines_[1]->child().waitExit(deadlineIn(5s));
  engines_[1]->markStopped();
  ASSERT_TRUE(waitUntil([&] { return health(1) == "excluded"; }, 5s));
  std::this_thread::sleep_for(2s);  // let the burst allowance refill at the new rate
  const int one = admittedIn(1500ms);
  EXPECT_GE(one, 6);
  EXPECT_LE(one, 13);
}

TEST_F(HealthTest, DegradedGpuIsExcludedAmongItsPeersAndReturnsWhenHealed) {
  for (int i = 0; i < 3; ++i) engines_.push_back(startEngine("A100"));  // peers of one GPU type
  std::string settings = kFastHealth;
  settings.replace(settings.find("half_open_successes: 2"), 22,
                   "half_open_successes: 2, slow_min_tokens: 8");
  startGateway("", settings);
  setFaults(engines_[0]->port(), R"({"slowdown": 5})");
  EXPECT_TRUE(waitUntil(
      [&] {
        EXPECT_EQ(chat(8).status, 200);
        return health(0) == "excluded" &&
               fleetField(gateway_->port(1), address(engines_[0]->port()), "health_reason") ==
                   "slow_outlier";
      },
      15s))
      << httpRequest(gateway_->port(1), "GET", "/debug/fleet").body;
  setFaults(engines_[0]->port(), "{}");
  EXPECT_TRUE(waitUntil(
      [&] {
        EXPECT_EQ(chat(8).status, 200);
        return health(0) == "healthy";
      },
      15s))
      << httpRequest(gateway_->port(1), "GET", "/debug/fleet").body;
}

TEST_F(HealthTest, FlappingReplicaNeverFailsAClient) {
  startFleet(2);
  startGateway();
  for (int i = 0; i < 30; ++i) {
    if (i % 3 == 0) {
      setFaults(engines_[0]->port(),
                i % 6 == 0 ? R"({"error_rate": 1, "error_status": 500})" : "{}");
    }
    const HttpResult r = chat();
    ASSERT_EQ(r.status, 200) << i << " " << r.body;
  }
}

TEST_F(HealthTest, MissingMetricsAreUnknownNotIdleAndRequestsGoOn) {
  startFleet(2);
  startGateway();
  setFaults(engines_[0]->port(), R"({"metrics_missing": true})");
  EXPECT_TRUE(waitUntil(
      [&] {
        return fleetField(gateway_->port(1), address(engines_[0]->port()), "signals")
                   .find("\"fresh\":false") != std::string::npos;
      },
      5s));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(chat().status, 200);
  EXPECT_EQ(health(0), "healthy");  // telemetry loss alone is not ill health
}

}  // namespace
}  // namespace switchyard::testing
