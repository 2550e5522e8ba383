// Several gateways, one view: three gateway processes share state through a real redis-server in
// front of emulated engines. In-flight limits hold globally, a killed gateway's counts expire,
// sessions and async jobs follow their replica through any gateway, and losing Redis costs no
// request. Every test is bounded in time and request count.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <map>
#include <set>
#include <thread>

#include "gateway_harness.h"
#include "support/redis_server.h"

namespace switchyard::testing {
namespace {

std::string address(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// The engine's own count of requests it is working on.
double engineRunning(uint16_t engine_port) {
  const HttpResult r = httpRequest(engine_port, "GET", "/metrics", {}, {}, 2s);
  return metricSample(r.body, "vllm:num_requests_running{");
}

class SharedStateTest : public ::testing::Test {
 protected:
  void startEngines(int n) {
    for (int i = 0; i < n; ++i) engines_.push_back(startEngine("A100"));
  }
  std::string config(const std::string& model_extra, const std::string& strategy) {
    std::string replicas;
    for (auto& e : engines_) replicas += replicaLine(e->port(), "A100");
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
           "shared_state: { backend: redis, address: " + redis_.address() +
           ", sync_interval_ms: 100, liveness_ttl_ms: 600, call_timeout_ms: 50,\n"
           "                reconnect_min_ms: 50, reconnect_max_ms: 200 }\n"
           "retry: { max_attempts: 3, budget_min_per_second: 1000 }\n"
           "models:\n  - name: llama2-7b\n    routing_strategy: " + strategy + "\n" +
           model_extra + "    replicas:\n" + replicas;
  }
  void startGateways(int n, const std::string& model_extra = "",
                     const std::string& strategy = "least-request") {
    config_ = std::make_unique<TempFile>(config(model_extra, strategy), ".yaml");
    for (int i = 0; i < n; ++i) {
      gateways_.push_back(std::make_unique<Process>(
          std::vector<std::string>{"gateway", "--config", config_->path()}));
      ASSERT_NE(gateways_.back()->port(1), 0);
    }
  }
  uint16_t port(size_t gateway) const { return gateways_[gateway]->port(0); }
  uint16_t admin(size_t gateway) const { return gateways_[gateway]->port(1); }
  std::string metrics(size_t gateway) {
    return httpRequest(admin(gateway), "GET", "/metrics").body;
  }
  // Waits until every gateway's sync has seen all gateways alive.
  // Whether gateway g comes to count n live gateways (itself included) within `timeout`.
  bool seesLiveGateways(size_t g, size_t n, std::chrono::milliseconds timeout = 5s) {
    return waitUntil(
        [&] {
          return metricSample(metrics(g),
                             "switchyard_shared_state_live_gateways{model=\"llama2-7b\"}") ==
                 static_cast<double>(n);
        },
        timeout);
  }
  void waitForLiveGateways(size_t n) {
    for (size_t g = 0; g < gateways_.size(); ++g) EXPECT_TRUE(seesLiveGateways(g, n)) << metrics(g);
  }
  // `n` concurrent chat requests of `max_tokens`, spread over the gateways in turn, while each
  // engine's own in-flight count is sampled every 10 ms.
  struct Burst {
    int ok = 0, rejected = 0, other = 0;
    std::string other_answer;  // the last answer that was neither 200 nor 429
    double peak[2] = {0, 0};   // per engine (the first two)
  };
  Burst sendBurst(int n, int max_tokens) {
    Burst burst;
    std::atomic<bool> done{false};
    std::atomic<int> ok{0}, rejected{0}, other{0};
    std::mutex other_mutex;
    std::thread sampler([&] {
      while (!done.load()) {
        for (size_t e = 0; e < std::min<size_t>(2, engines_.size()); ++e) {
          const double v = engineRunning(engines_[e]->port());
          if (std::isfinite(v)) burst.peak[e] = std::max(burst.peak[e], v);
        }
        std::this_thread::sleep_for(10ms);
      }
    });
    std::vector<std::thread> clients;
    for (int i = 0; i < n; ++i) {
      clients.emplace_back([&, i] {
        const HttpResult r =
            httpRequest(port(static_cast<size_t>(i) % gateways_.size()), "POST",
                        "/v1/chat/completions", chatBody("llama2-7b", max_tokens), kJson, 30s);
        (r.status == 200 ? ok : r.status == 429 ? rejected : other)++;
        if (r.status != 200 && r.status != 429) {
          std::lock_guard lock(other_mutex);
          burst.other_answer = std::to_string(r.status) + " " + r.body + r.error;
        }
      });
    }
    for (auto& t : clients) t.join();
    done = true;
    sampler.join();
    burst.ok = ok.load();
    burst.rejected = rejected.load();
    burst.other = other.load();
    return burst;
  }

  RedisServer redis_;
  std::vector<std::unique_ptr<Process>> engines_;
  std::unique_ptr<TempFile> config_;
  std::vector<std::unique_ptr<Process>> gateways_;
};

TEST_F(SharedStateTest, InflightLimitHoldsGloballyUnderABurstSpreadAcrossGateways) {
  startEngines(2);
  startGateways(3, "    limits: { max_inflight_per_replica: 2 }\n");
  waitForLiveGateways(3);
  // 24 concurrent requests of ~1 s each, 8 per gateway, against a global capacity of 2 x 2.
  // Each gateway alone would admit 2 per replica: 6 per replica in total without sharing.
  const Burst burst = sendBurst(24, 96);
  EXPECT_EQ(burst.other, 0) << burst.other_answer;
  EXPECT_GE(burst.ok, 4);
  EXPECT_GE(burst.rejected, 1);  // the burst is far above the global capacity
  EXPECT_LE(burst.peak[0], 2.0);
  EXPECT_LE(burst.peak[1], 2.0);
  EXPECT_GT(burst.peak[0] + burst.peak[1], 0.0);  // the sampler saw the load at all
  // Admission happened in shared state, not locally.
  EXPECT_GT(metricSample(metrics(0), "switchyard_shared_state_calls_total{role=\"request\"}"), 0);
}

// Leased slots (48 per replica over 3 gateways of 2 workers: one slot leased ahead per worker):
// a burst past the limit is held to it across gateways. Less than the limit may be admitted at
// the peak: slots leased ahead by one worker are not free for the others (at most twice the lead
// per worker, 12 here), and each gateway sees the others' counts a sync interval late. The bound
// checked is the limit; half of it must be used.
TEST_F(SharedStateTest, LeasedSlotsHoldTheLimitAcrossGateways) {
  startEngines(1);
  startGateways(3, "    limits: { max_inflight_per_replica: 48 }\n");
  waitForLiveGateways(3);
  const Burst burst = sendBurst(72, 160);
  double degraded = 0;  // request-path calls that got no answer in time: decided locally
  for (size_t g = 0; g < gateways_.size(); ++g) {
    degraded += metricSample(metrics(g), "switchyard_shared_state_degraded_total{role=\"request\"}");
  }
  EXPECT_EQ(burst.other, 0) << burst.other_answer;
  EXPECT_GE(burst.ok, 24) << "peak " << burst.peak[0] << ", rejected " << burst.rejected;
  EXPECT_GE(burst.rejected, 1);
  EXPECT_LE(burst.peak[0], 48.0) << "degraded calls " << degraded;
  EXPECT_GT(burst.peak[0], 0.0);
}

// With room to lease ahead (512 per replica: ten slots per worker), steady traffic is admitted
// without a call to Redis per request: a few calls lease slots, the rest need none.
TEST_F(SharedStateTest, LeasedSlotsAdmitSteadyTrafficWithoutACallPerRequest) {
  startEngines(1);
  startGateways(3, "    limits: { max_inflight_per_replica: 512 }\n");
  waitForLiveGateways(3);
  const std::string calls_metric = "switchyard_shared_state_calls_total{role=\"request\"}";
  const double calls_before = metricSample(metrics(0), calls_metric);
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 15; ++i) {
        const HttpResult r = httpRequest(port(0), "POST", "/v1/chat/completions",
                                         chatBody("llama2-7b", 4), kJson, 30s);
        if (r.status == 200) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 60);
  EXPECT_LT(metricSample(metrics(0), calls_metric) - calls_before, 12);
  // Decision records say how each request was admitted.
  const std::string decisions = httpRequest(admin(0), "GET", "/debug/decisions").body;
  EXPECT_NE(decisions.find(R"("inflight":"leased_slot")"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find(R"("inflight":"new_lease")"), std::string::npos);
}

TEST_F(SharedStateTest, AKilledGatewaysCountsStopCountingWithinItsLiveness) {
  startEngines(1);
  startGateways(2);
  waitForLiveGateways(2);
  const std::string replica = address(engines_[0]->port());
  // Three long streams in flight through gateway 0; gateway 1 must see them.
  std::vector<std::thread> streams;
  for (int i = 0; i < 3; ++i) {
    streams.emplace_back([&] {
      streamRequest(port(0), "POST", "/v1/chat/completions",
                    chatBody("llama2-7b", 2000, /*stream=*/true), kJson, 20s);
    });
  }
  EXPECT_TRUE(waitUntil([&] { return fleetField(admin(1), replica, "global_running") == "3"; },
                        5s))
      << fleetField(admin(1), replica, "global_running");
  // SIGKILL: no goodbye, its counts stay in Redis, but its heartbeat stops.
  gateways_[0]->child().sendSignal(SIGKILL);
  gateways_[0]->child().waitExit(deadlineIn(5s));
  gateways_[0]->markStopped();
  for (auto& t : streams) t.join();  // the streams end with the killed gateway
  EXPECT_TRUE(waitUntil([&] { return fleetField(admin(1), replica, "global_running") == "0"; },
                        3s))
      << fleetField(admin(1), replica, "global_running");
  EXPECT_TRUE(seesLiveGateways(1, 1, 3s));
}

TEST_F(SharedStateTest, SessionsStayPinnedAcrossGatewaysAndRepinOnceWhenTheirReplicaGoes) {
  startEngines(3);
  startGateways(3, "", "random");
  std::map<std::string, std::string> pinned;
  for (int round = 0; round < 4; ++round) {
    for (int s = 0; s < 6; ++s) {
      const std::string session = "session-" + std::to_string(s);
      Headers headers = kJson;
      headers.emplace_back("x-session-id", session);
      const HttpResult r = httpRequest(port((round + s) % 3), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 2), headers);
      ASSERT_EQ(r.status, 200) << r.body;
      const std::string target = r.header("target-pod");
      if (round == 0) {
        pinned[session] = target;
      } else {
        EXPECT_EQ(target, pinned[session]) << session << " round " << round;
      }
    }
  }
  // Random routing would have spread 24 requests; the pins kept each session on one replica.
  // Now the replica of session-0 goes away: its next request is re-pinned once, and every
  // gateway follows the new pin.
  const std::string old_target = pinned["session-0"];
  for (auto& e : engines_) {
    if (address(e->port()) == old_target) e.reset();  // SIGTERM, waits for a clean exit
  }
  Headers headers = kJson;
  headers.emplace_back("x-session-id", "session-0");
  const HttpResult moved = httpRequest(port(1), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 2), headers, 20s);
  ASSERT_EQ(moved.status, 200) << moved.body;
  const std::string new_target = moved.header("target-pod");
  EXPECT_NE(new_target, old_target);
  for (int i = 0; i < 6; ++i) {
    const HttpResult r = httpRequest(port(i % 3), "POST", "/v1/chat/completions",
                                     chatBody("llama2-7b", 2), headers, 20s);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), new_target) << "request " << i;
  }
}

TEST_F(SharedStateTest, AJobCreatedThroughOneGatewayIsFollowedUpThroughAnother) {
  startEngines(3);
  startGateways(2, "", "random");
  simdjson::dom::parser parser;
  for (int i = 0; i < 6; ++i) {
    // A background response, created through gateway 0...
    const HttpResult created = httpRequest(
        port(0), "POST", "/v1/responses",
        R"({"model":"llama2-7b","input":"hello","background":true,"max_output_tokens":4})", kJson);
    ASSERT_EQ(created.status, 200) << created.body;
    const std::string id(parser.parse(created.body)["id"].get_string().value());
    // ...is read through gateway 1 from the replica that holds it (random routing would find it
    // on one replica in three).
    const HttpResult followed = httpRequest(port(1), "GET", "/v1/responses/" + id);
    ASSERT_EQ(followed.status, 200) << followed.body;
    EXPECT_EQ(followed.header("target-pod"), created.header("target-pod"));
    EXPECT_NE(followed.body.find(id), std::string::npos);
  }
  // A file uploaded through gateway 1 is read back through gateway 0.
  const HttpResult file = httpRequest(port(1), "POST", "/v1/files",
                                      R"({"purpose":"batch","content":"line"})", kJson);
  ASSERT_EQ(file.status, 200) << file.body;
  const std::string file_id(parser.parse(file.body)["id"].get_string().value());
  const HttpResult content = httpRequest(port(0), "GET", "/v1/files/" + file_id + "/content");
  EXPECT_EQ(content.status, 200) << content.body;
  EXPECT_EQ(content.header("target-pod"), file.header("target-pod"));
  // An id no replica owns is a clear 404.
  const HttpResult unknown = httpRequest(port(0), "GET", "/v1/responses/resp_unknown");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_NE(unknown.body.find("\"error\""), std::string::npos);
}

TEST_F(SharedStateTest, RedisLostMidLoadCostsNoRequestAndSharedModeResumes) {
  startEngines(2);
  startGateways(2, "    limits: { max_inflight_per_replica: 8, requests_per_second_per_replica: 500 }\n");
  waitForLiveGateways(2);
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  std::mutex bad_mutex;
  std::string bad_body;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      for (int n = 0; n < 1500 && !stop.load(); ++n) {
        const HttpResult r = httpRequest(port(i % 2), "POST", "/v1/chat/completions",
                                         chatBody("llama2-7b", 2), kJson, 10s);
        if (r.status == 200) {
          ++ok;
        } else {
          ++bad;
          std::lock_guard lock(bad_mutex);
          bad_body = std::to_string(r.status) + " " + r.body + r.error;
        }
      }
    });
  }
  std::this_thread::sleep_for(700ms);  // load under shared state
  redis_.stop(/*kill=*/true);
  std::this_thread::sleep_for(1200ms);  // load with Redis gone
  const double degraded_while_down =
      metricSample(metrics(0), "switchyard_shared_state_degraded_total{role=\"request\"}");
  redis_.start();
  // Both gateways reconnect and admit through Redis again.
  for (size_t g = 0; g < 2; ++g) {
    EXPECT_TRUE(waitUntil(
        [&] {
          return metricSample(metrics(g), "switchyard_shared_state_connected{role=\"request\"}") ==
                 2.0;
        },
        5s))
        << metrics(g);
  }
  const std::string calls_series = "switchyard_shared_state_calls_total{role=\"request\"}";
  const std::string degraded_series = "switchyard_shared_state_degraded_total{role=\"request\"}";
  const double calls_before = metricSample(metrics(0), calls_series);
  // Shared mode resumes: within a deadline, each gateway makes a run of request-path calls of
  // which none is degraded. (A fixed ratio over a fixed time fails on a loaded machine, where a
  // call now and then outlives its timeout; a gateway that never resumed never has such a run.)
  for (size_t g = 0; g < 2; ++g) {
    double run_start_calls = metricSample(metrics(g), calls_series);
    double run_start_degraded = metricSample(metrics(g), degraded_series);
    EXPECT_TRUE(waitUntil(
        [&] {
          const std::string page = metrics(g);
          const double calls = metricSample(page, calls_series);
          const double degraded = metricSample(page, degraded_series);
          if (degraded != run_start_degraded) {  // a degraded call: the run starts over
            run_start_calls = calls;
            run_start_degraded = degraded;
            return false;
          }
          return calls - run_start_calls >= 20;
        },
        15s))
        << "gateway " << g << " made no run of 20 calls without a degraded one:\n"
        << metrics(g);
  }
  stop = true;
  for (auto& t : clients) t.join();
  const std::string page = metrics(0);
  EXPECT_EQ(bad.load(), 0) << bad_body;
  EXPECT_GT(ok.load(), 20);
  EXPECT_GT(degraded_while_down, 0.0);  // the outage was noticed and decided locally
  // After the restart, calls are answered again.
  EXPECT_GT(metricSample(page, calls_series), calls_before);
  EXPECT_TRUE(seesLiveGateways(0, 2));
}

TEST_F(SharedStateTest, CapacityIsLearnedFromEveryGatewaysTraffic) {
  startEngines(1);
  startGateways(2, "", "load-balance");
  waitForLiveGateways(2);
  const std::string replica = address(engines_[0]->port());
  // Traffic through gateway 0 only: gateway 1 counts no token of its own, yet learns the
  // replica's speed from the tokens summed in shared state.
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      for (int n = 0; n < 200 && !stop.load(); ++n) {
        httpRequest(port(0), "POST", "/v1/chat/completions",
                    chatBody("llama2-7b", 24, /*stream=*/true), kJson, 10s);
      }
    });
  }
  auto learned = [&](size_t gateway) {
    const HttpResult r = httpRequest(admin(gateway), "GET", "/debug/fleet");
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(r.body).get(root) != simdjson::SUCCESS) return 0.0;
    for (auto entry : root["models"].at(0)["replicas"].get_array()) {
      double decode = 0;
      if (entry["capacity"]["decode"].get(decode) == simdjson::SUCCESS) return decode;
    }
    return 0.0;
  };
  const bool learned_there = waitUntil([&] { return learned(1) > 0; }, 8s);
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_TRUE(learned_there);
  EXPECT_EQ(fleetField(admin(1), replica, "output_tokens_total"), "0");
  // Both gateways learned from the same counts: the same order of magnitude.
  EXPECT_GT(learned(0), 0.0);
  EXPECT_LT(learned(1) / learned(0), 3.0);
  EXPECT_GT(learned(1) / learned(0), 1.0 / 3.0);
  // The model's mean, the stand-in for replicas not yet measured, follows the estimates (one
  // replica: its own; both are refreshed together each second).
  const HttpResult fleet = httpRequest(admin(1), "GET", "/debug/fleet");
  simdjson::dom::parser parser;
  double mean = 0;
  ASSERT_EQ(parser.parse(fleet.body)["models"].at(0)["learned_means"]["decode"].get(mean),
            simdjson::SUCCESS)
      << fleet.body;
  EXPECT_GT(mean, learned(1) / 3) << fleet.body;
  EXPECT_LT(mean, learned(1) * 3) << fleet.body;
}

// Requests admitted locally while Redis was away are counted there once the gateway has given
// Redis its counts again; when they end they must leave Redis's count too, or the replica stays
// full in every gateway's eyes.
TEST_F(SharedStateTest, RequestsAdmittedWhileRedisWasAwayAreReleasedThereToo) {
  startEngines(1);
  startGateways(1, "    limits: { max_inflight_per_replica: 4 }\n");
  waitForLiveGateways(1);
  redis_.stop(/*kill=*/true);
  std::vector<std::thread> long_requests;
  for (int i = 0; i < 3; ++i) {
    long_requests.emplace_back([&] {
      const HttpResult r = httpRequest(port(0), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 400), kJson, 30s);
      EXPECT_EQ(r.status, 200) << r.body << r.error;
    });
  }
  ASSERT_TRUE(waitUntil([&] { return engineRunning(engines_[0]->port()) == 3.0; }, 5s));
  redis_.start();
  // The sync rewrites this gateway's counts (3 in flight) once Redis answers again.
  ASSERT_TRUE(waitUntil(
      [&] {
        return metricSample(metrics(0), "switchyard_shared_state_connected{role=\"sync\"}") ==
                   1.0 &&
               metricSample(metrics(0), "switchyard_shared_state_connected{role=\"request\"}") ==
                   2.0;
      },
      5s))
      << metrics(0);
  std::this_thread::sleep_for(300ms);  // a few sync cycles
  for (auto& t : long_requests) t.join();
  // The replica is empty: a burst of its limit is admitted whole.
  std::atomic<int> ok{0};
  std::string refused;
  std::mutex refused_mutex;
  std::vector<std::thread> burst;
  for (int i = 0; i < 4; ++i) {
    burst.emplace_back([&] {
      const HttpResult r = httpRequest(port(0), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 20), kJson, 10s);
      if (r.status == 200) {
        ++ok;
      } else {
        std::lock_guard lock(refused_mutex);
        refused = std::to_string(r.status) + " " + r.body;
      }
    });
  }
  for (auto& t : burst) t.join();
  EXPECT_EQ(ok.load(), 4) << refused;
}

}  // namespace
}  // namespace switchyard::testing
