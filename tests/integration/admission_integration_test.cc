// Deadline-aware admission and the gateway's queue, end to end: requests that find every replica
// at its in-flight limit wait instead of being refused, are refused with deadline_unattainable the
// moment they can no longer finish in time, and cost no GPU work when their client leaves while
// they wait. An emulated engine behind a one-worker gateway on loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

double engineRunning(uint16_t engine_port) {
  const HttpResult r = httpRequest(engine_port, "GET", "/metrics", {}, {}, 2s);
  return metricSample(r.body, "vllm:num_requests_running{") +
         metricSample(r.body, "vllm:num_requests_waiting{");
}

class AdmissionTest : public ::testing::Test {
 protected:
  void start(const std::string& admission, int limit = 1) {
    engine_ = startEngine("A100");
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
        "admission: " + admission + "\n"
        "models:\n  - name: llama2-7b\n    limits: { max_inflight_per_replica: " +
            std::to_string(limit) + " }\n"
        "    replicas:\n" + replicaLine(engine_->port(), "A100"),
        ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(1), 0);
  }
  HttpResult chat(int max_tokens, Headers headers = kJson) {
    return httpRequest(gateway_->port(0), "POST", "/v1/chat/completions",
                       chatBody("llama2-7b", max_tokens), std::move(headers), 60s);
  }
  std::string metrics() { return httpRequest(gateway_->port(1), "GET", "/metrics").body; }

  std::unique_ptr<Process> engine_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

TEST_F(AdmissionTest, WithoutAQueueASaturatedModelAnswers429AtOnce) {
  start("{ queue: off }");
  std::thread busy([&] { EXPECT_EQ(chat(150).status, 200); });
  ASSERT_TRUE(waitUntil([&] { return engineRunning(engine_->port()) == 1.0; }, 5s));
  const HttpResult refused = chat(4);
  EXPECT_EQ(refused.status, 429);
  EXPECT_NE(refused.body.find("replica_inflight_limit"), std::string::npos);
  busy.join();
}

TEST_F(AdmissionTest, QueuedRequestsWaitTheirTurnAndAllSucceed) {
  start("{ queue: fifo, recheck_ms: 20 }");
  std::atomic<int> ok{0};
  std::atomic<double> peak_depth{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] { ok += chat(40).status == 200 ? 1 : 0; });
  }
  // Four requests, one slot: the engine never sees more than one, the queue holds the rest.
  double peak_engine = 0;
  const SteadyTime until = deadlineIn(30s);
  while (ok.load() < 4 && std::chrono::steady_clock::now() < until) {
    peak_engine = std::max(peak_engine, engineRunning(engine_->port()));
    peak_depth = std::max(peak_depth.load(),
                          metricSample(metrics(), "switchyard_queue_depth{model=\"llama2-7b\"}"));
    std::this_thread::sleep_for(10ms);
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_LE(peak_engine, 1.0);
  EXPECT_GE(peak_depth.load(), 1.0);
  const std::string page = metrics();
  EXPECT_EQ(metricSample(page, "switchyard_demand_requests_total{model=\"llama2-7b\"}"), 4.0);
  EXPECT_GE(metricSample(page, "switchyard_queue_wait_seconds_count{model=\"llama2-7b\"}"), 1.0);
  EXPECT_EQ(metricSample(page, "switchyard_queue_depth{model=\"llama2-7b\"}"), 0.0);
}

// A request taken from the queue gives up its place once admitted: the next one starts when the
// next slot frees, not when the first one's answer ends.
TEST_F(AdmissionTest, AnAdmittedRequestNoLongerHoldsTheQueue) {
  start("{ queue: fifo, recheck_ms: 20 }", 2);
  const auto depth = [&] {
    return metricSample(metrics(), "switchyard_queue_depth{model=\"llama2-7b\"}");
  };
  std::atomic<bool> long_done{false};
  std::atomic<bool> last_done_first{false};
  std::thread first([&] { EXPECT_EQ(chat(10).status, 200); });
  std::thread second([&] { EXPECT_EQ(chat(100).status, 200); });
  ASSERT_TRUE(waitUntil([&] { return engineRunning(engine_->port()) == 2.0; }, 5s));
  // Queued behind both: a long request, then a short one.
  std::thread queued_long([&] {
    EXPECT_EQ(chat(800).status, 200);
    long_done = true;
  });
  ASSERT_TRUE(waitUntil([&] { return depth() == 1.0; }, 5s));
  std::thread queued_short([&] {
    EXPECT_EQ(chat(4).status, 200);
    last_done_first = !long_done.load();
  });
  for (std::thread* t : {&first, &second, &queued_short, &queued_long}) t->join();
  EXPECT_TRUE(last_done_first.load()) << "the short request waited for the long one's answer";
}

TEST_F(AdmissionTest, ARequestThatCannotFinishInTimeIsRefusedWithDeadlineUnattainable) {
  start("{ queue: deadline, recheck_ms: 20 }");
  for (int i = 0; i < 6; ++i) ASSERT_EQ(chat(30).status, 200);  // capacity is learned meanwhile
  // A long request holds the only slot; one that must be done in 300 ms cannot wait for it.
  std::thread busy([&] { EXPECT_EQ(chat(400).status, 200); });
  ASSERT_TRUE(waitUntil([&] { return engineRunning(engine_->port()) == 1.0; }, 5s));
  Headers tight = kJson;
  tight.emplace_back("x-request-deadline-ms", "300");
  const auto sent = std::chrono::steady_clock::now();
  const HttpResult refused = chat(100, tight);
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_NE(refused.body.find("deadline_unattainable"), std::string::npos) << refused.body;
  EXPECT_FALSE(refused.header("Retry-After").empty());
  EXPECT_LE(took, 1s);  // refused by the deadline, not by a timeout
  EXPECT_EQ(engineRunning(engine_->port()), 1.0);  // it never reached the engine
  // One with time to spare waits and is served.
  Headers loose = kJson;
  loose.emplace_back("x-request-timeout", "60s");
  EXPECT_EQ(chat(10, loose).status, 200);
  busy.join();
  const std::string page = metrics();
  EXPECT_GE(metricSample(page, "switchyard_rejected_requests_total{limit=\"deadline_unattainable\"}"),
            1.0);
  const std::string decisions = httpRequest(gateway_->port(1), "GET", "/debug/decisions").body;
  EXPECT_NE(decisions.find(R"("refused":"deadline_unattainable")"), std::string::npos);
}

TEST_F(AdmissionTest, AMalformedDeadlineIsABadRequest) {
  start("{ queue: deadline }");
  Headers bad = kJson;
  bad.emplace_back("x-request-deadline-ms", "soon");
  const HttpResult r = chat(4, bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("invalid_deadline"), std::string::npos) << r.body;
}

TEST_F(AdmissionTest, AClientThatLeavesWhileQueuedCostsNoGpuWork) {
  start("{ queue: fifo, recheck_ms: 20 }");
  std::thread busy([&] { EXPECT_EQ(chat(200).status, 200); });
  ASSERT_TRUE(waitUntil([&] { return engineRunning(engine_->port()) == 1.0; }, 5s));
  const auto promptTokens = [&] {
    return metricSample(httpRequest(engine_->port(), "GET", "/metrics").body,
                        "vllm:prompt_tokens_total{");
  };
  const double prompt_before = promptTokens();
  {
    HttpClient leaving(gateway_->port(0), 300ms);
    const HttpResult r = leaving.request("POST", "/v1/chat/completions",
                                         chatBody("llama2-7b", 50), kJson);
    EXPECT_EQ(r.status, 0);  // gave up while queued
  }
  EXPECT_TRUE(waitUntil(
      [&] {
        return metricSample(metrics(), "switchyard_client_cancelled_total{model=\"llama2-7b\","
                                       "stage=\"queued\"}") == 1.0;
      },
      3s));
  // The engine never saw the request that left: no prompt was submitted after the first.
  EXPECT_EQ(promptTokens(), prompt_before);
  busy.join();
}

}  // namespace
}  // namespace switchyard::testing
