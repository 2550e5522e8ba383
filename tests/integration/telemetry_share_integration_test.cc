// Telemetry at scale, end to end: three gateways sharing a real redis-server in front of one
// engine process hosting many emulated replicas. Between them the gateways scrape each replica
// about once per interval (not once per gateway), every gateway still sees every replica's
// signals fresh, a killed gateway's replicas move to the others, and with Redis gone each
// gateway scrapes everything itself. Bounded in time; no request traffic needed.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <string>

#include "gateway_harness.h"
#include "support/redis_server.h"

namespace switchyard::testing {
namespace {

constexpr int kReplicas = 24;
constexpr int kAdded = 6;  // hosted by the engine from the start, configured later

class TelemetryShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string file = "replicas:\n";
    for (int i = 0; i < kReplicas + kAdded; ++i) {
      file += std::string("  - { listen: 127.0.0.1:0, gpu: ") + (i % 2 ? "A100" : "H100") +
              ", model: llama2-7b }\n";
    }
    replicas_file_ = std::make_unique<TempFile>(file, ".yaml");
    engine_ = std::make_unique<Process>(
        std::vector<std::string>{"engine", "--replicas", replicas_file_->path()});
    config_ = std::make_unique<TempFile>(configText(kReplicas), ".yaml");
    for (int i = 0; i < 3; ++i) {
      gateways_.push_back(std::make_unique<Process>(
          std::vector<std::string>{"gateway", "--config", config_->path()}));
      ASSERT_NE(gateways_.back()->port(1), 0);
    }
  }

  std::string configText(int replicas) {
    std::string lines;
    for (int i = 0; i < replicas; ++i) lines += replicaLine(engine_->port(i), "A100");
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
           "telemetry: { scrape_interval_ms: 100 }\n"
           "shared_state: { backend: redis, address: " + redis_.address() +
           ", sync_interval_ms: 100, liveness_ttl_ms: 600, sync_timeout_ms: 100,\n"
           "                reconnect_min_ms: 50, reconnect_max_ms: 200 }\n"
           "models:\n  - name: llama2-7b\n    replicas:\n" + lines;
  }

  double metric(size_t g, const std::string& series) {
    return metricSample(httpRequest(gateways_[g]->port(1), "GET", "/metrics").body, series);
  }
  double ownedSum() {
    double sum = 0;
    for (size_t g = 0; g < gateways_.size(); ++g) {
      if (alive_[g]) sum += metric(g, "switchyard_telemetry_owned_replicas");
    }
    return sum;
  }
  bool allFresh() {
    for (size_t g = 0; g < gateways_.size(); ++g) {
      if (alive_[g] && metric(g, "switchyard_telemetry_fresh_ratio") != 1.0) return false;
    }
    return true;
  }
  // Scrapes the engine served, over all replicas (each read here counts one too).
  double engineScrapes() {
    double sum = 0;
    for (int i = 0; i < kReplicas; ++i) {
      sum += metricSample(httpRequest(engine_->port(i), "GET", "/metrics").body,
                          "switchyard_engine_metrics_scrapes_total{");
    }
    return sum;
  }
  double gatewayScrapes() {
    double sum = 0;
    for (size_t g = 0; g < gateways_.size(); ++g) {
      if (alive_[g]) sum += metric(g, "switchyard_telemetry_scrapes_total");
    }
    return sum;
  }

  RedisServer redis_;
  std::unique_ptr<TempFile> replicas_file_;
  std::unique_ptr<Process> engine_;
  std::unique_ptr<TempFile> config_;
  std::vector<std::unique_ptr<Process>> gateways_;
  bool alive_[3] = {true, true, true};
};

TEST_F(TelemetryShareTest, GatewaysSplitTheScrapingAndEverySignalStaysFresh) {
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_TRUE(waitUntil([&] { return metric(g, "switchyard_telemetry_live_gateways") == 3; },
                          10s))
        << g;
  }
  // Each replica has exactly one owner, and every gateway sees every signal fresh.
  EXPECT_TRUE(waitUntil([&] { return ownedSum() == kReplicas; }, 5s)) << ownedSum();
  EXPECT_TRUE(waitUntil([&] { return allFresh(); }, 5s));
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_GT(metric(g, "switchyard_telemetry_shared_records_received_total"), 0) << g;
    EXPECT_LT(metric(g, "switchyard_telemetry_owned_replicas"), kReplicas) << g;
  }

  // What the engines see is what the gateways count: together about one scrape per replica
  // per interval at most (idle replicas: less), not one per gateway.
  const double engine_before = engineScrapes();
  const double gateways_before = gatewayScrapes();
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(2s);
  const double gateways_after = gatewayScrapes();
  const double engine_after = engineScrapes();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double engine_rate = (engine_after - engine_before - kReplicas) / seconds;
  const double gateway_rate = (gateways_after - gateways_before) / seconds;
  EXPECT_LE(engine_rate, kReplicas * 10 * 1.15) << "more than once per interval in total";
  EXPECT_GT(engine_rate, kReplicas * 10 / 3.0) << "signals cannot stay fresh at this rate";
  EXPECT_NEAR(gateway_rate, engine_rate, 0.2 * engine_rate + 5);
}

// The KV cache size each engine reports reaches the gateways that do not scrape it (it bounds
// their prefix-cache index). Replicas added once the scraping is shared are scraped by their
// owner only, yet every gateway shows every replica's size.
TEST_F(TelemetryShareTest, EveryGatewayLearnsEveryReplicasKvCacheSize) {
  for (size_t g = 0; g < 3; ++g) {
    ASSERT_TRUE(waitUntil([&] { return metric(g, "switchyard_telemetry_live_gateways") == 3; },
                          10s));
  }
  {
    std::ofstream rewritten(config_->path(), std::ios::trunc);
    rewritten << configText(kReplicas + kAdded);
  }
  for (auto& gateway : gateways_) gateway->child().sendSignal(SIGHUP);
  auto sized = [&](size_t g) {
    const std::string fleet = httpRequest(gateways_[g]->port(1), "GET", "/debug/fleet").body;
    int count = 0;
    const std::string key = "\"kv_capacity_tokens\":";
    for (size_t at = fleet.find(key); at != std::string::npos; at = fleet.find(key, at + 1)) {
      if (fleet.compare(at + key.size(), 4, "null") != 0) ++count;
    }
    return count;
  };
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_TRUE(waitUntil([&] { return sized(g) == kReplicas + kAdded; }, 5s))
        << g << ": " << sized(g) << " of " << kReplicas + kAdded;
    EXPECT_LT(metric(g, "switchyard_telemetry_owned_replicas"), kReplicas + kAdded) << g;
    EXPECT_EQ(metric(g, "switchyard_telemetry_shared_records_malformed_total"), 0) << g;
  }
}

TEST_F(TelemetryShareTest, AKilledGatewaysShareMovesAndRedisGoneMeansScrapeEverything) {
  for (size_t g = 0; g < 3; ++g) {
    ASSERT_TRUE(waitUntil([&] { return metric(g, "switchyard_telemetry_live_gateways") == 3; },
                          10s));
  }
  gateways_[0]->child().sendSignal(SIGKILL);
  gateways_[0]->child().waitExit(deadlineIn(5s));
  gateways_[0]->markStopped();
  alive_[0] = false;
  // Its heartbeat lapses within a liveness period (600 ms here): the other two own everything.
  EXPECT_TRUE(waitUntil([&] { return metric(1, "switchyard_telemetry_live_gateways") == 2; },
                        3s));
  EXPECT_TRUE(waitUntil([&] { return ownedSum() == kReplicas; }, 3s)) << ownedSum();
  EXPECT_TRUE(waitUntil([&] { return allFresh(); }, 3s));

  redis_.stop(/*kill=*/true);
  for (size_t g = 1; g < 3; ++g) {
    EXPECT_TRUE(waitUntil(
        [&] { return metric(g, "switchyard_telemetry_owned_replicas") == kReplicas; }, 3s))
        << g;
  }
  EXPECT_TRUE(waitUntil([&] { return allFresh(); }, 3s));
}

}  // namespace
}  // namespace switchyard::testing
