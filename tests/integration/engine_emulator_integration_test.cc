// `switchyard engine` as a performance emulator: latency histograms in both metric dialects,
// several replicas in one process, profile overrides, start-up errors, and every injected fault.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace switchyard::testing {
namespace {

constexpr auto kStartTimeout = 10s;
constexpr std::string_view kShortStream =
    R"({"prompt":"hello there","max_tokens":6,"stream":true})";

// One engine process; stops it (SIGTERM) and checks a clean exit when the test ends.
class Engine {
 public:
  explicit Engine(std::vector<std::string> extra_args = {}, size_t expected_ports = 1) {
    std::vector<std::string> args = {"engine", "--listen", "127.0.0.1:0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    process_ = spawnSwitchyard(args);
    ports_ = process_->waitForListening(deadlineIn(kStartTimeout));
    EXPECT_EQ(ports_.size(), expected_ports);
    if (ports_.empty()) ports_.push_back(0);
  }
  ~Engine() {
    process_->sendSignal(SIGTERM);
    EXPECT_EQ(process_->waitExit(deadlineIn(5s)), std::optional<int>(0));
  }
  uint16_t port(size_t i = 0) const { return ports_.at(i); }
  const std::vector<uint16_t>& ports() const { return ports_; }

  HttpResult setFaults(std::string_view json) {
    HttpResult r = httpRequest(port(), "POST", "/admin/faults", json);
    EXPECT_EQ(r.status, 200) << r.body << r.error;
    return r;
  }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::vector<uint16_t> ports_;
};

std::optional<double> metricValue(const std::string& metrics, const std::string& series) {
  size_t pos = 0;
  while ((pos = metrics.find(series, pos)) != std::string::npos) {
    size_t after = pos + series.size();
    if ((pos == 0 || metrics[pos - 1] == '\n') && after < metrics.size() &&
        (metrics[after] == '{' || metrics[after] == ' ')) {
      size_t space = metrics.find(' ', metrics[after] == '{' ? metrics.find('}', after) : after);
      std::string value = metrics.substr(space + 1, metrics.find('\n', space) - space - 1);
      if (value == "NaN") return std::nan("");
      return std::stod(value);
    }
    pos = after;
  }
  return std::nullopt;
}

std::string metrics(uint16_t port) { return httpRequest(port, "GET", "/metrics").body; }

void expectHistogram(const std::string& text, const std::string& name, const std::string& model,
                     int count) {
  EXPECT_NE(text.find("# TYPE " + name + " histogram\n"), std::string::npos) << name;
  EXPECT_NE(text.find(name + "_bucket{le=\"+Inf\",model_name=\"" + model + "\"} " +
                      std::to_string(count) + "\n"),
            std::string::npos)
      << name << "\n"
      << text;
  EXPECT_NE(text.find(name + "_count{model_name=\"" + model + "\"} " + std::to_string(count)),
            std::string::npos)
      << name;
  EXPECT_NE(text.find(name + "_sum{model_name=\"" + model + "\"} "), std::string::npos) << name;
}

TEST(EngineEmulatorTest, VllmAndSglangMetricsIncludeLatencyHistograms) {
  Engine vllm({"--gpu", "H100"});
  Engine sglang({"--gpu", "H100", "--flavor", "sglang"});
  for (uint16_t port : {vllm.port(), sglang.port()}) {
    StreamResult r = streamRequest(port, "POST", "/v1/completions", kShortStream);
    ASSERT_TRUE(r.ok()) << r.error;
  }
  std::string v = metrics(vllm.port());
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
        "vllm:num_preemptions_total", "switchyard_engine_busy_seconds_total"}) {
    EXPECT_TRUE(metricValue(v, name).has_value()) << name;
  }
  expectHistogram(v, "vllm:time_to_first_token_seconds", "llama2-7b", 1);
  expectHistogram(v, "vllm:inter_token_latency_seconds", "llama2-7b", 5);
  expectHistogram(v, "vllm:e2e_request_latency_seconds", "llama2-7b", 1);
  expectHistogram(v, "vllm:request_queue_time_seconds", "llama2-7b", 1);
  EXPECT_EQ(metricValue(v, "vllm:generation_tokens_total"), 6.0);

  std::string s = metrics(sglang.port());
  for (const char* name : {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
                           "sglang:prompt_tokens_total", "sglang:generation_tokens_total"}) {
    EXPECT_TRUE(metricValue(s, name).has_value()) << name;
  }
  expectHistogram(s, "sglang:time_to_first_token_seconds", "llama2-7b", 1);
  expectHistogram(s, "sglang:inter_token_latency_seconds", "llama2-7b", 5);
  expectHistogram(s, "sglang:e2e_request_latency_seconds", "llama2-7b", 1);
  expectHistogram(s, "sglang:queue_time_seconds", "llama2-7b", 1);
  EXPECT_EQ(s.find("vllm:"), std::string::npos);
}

TEST(EngineEmulatorTest, ReplicasFileHostsSeveralReplicasInOneProcess) {
  TempFile replicas(R"(
- {gpu: A100, model: llama2-7b, flavor: vllm}
- {gpu: H100, model: chat-b, flavor: sglang, seed: 9}
- {gpu: B200, model: llama2-70b}
)",
                    ".yaml");
  Engine engine({"--replicas", replicas.path()}, 3);
  ASSERT_EQ(engine.ports().size(), 3u);
  EXPECT_NE(httpRequest(engine.port(0), "GET", "/v1/models").body.find("\"llama2-7b\""),
            std::string::npos);
  EXPECT_NE(httpRequest(engine.port(1), "GET", "/v1/models").body.find("\"chat-b\""),
            std::string::npos);
  EXPECT_NE(metrics(engine.port(1)).find("sglang:num_running_reqs"), std::string::npos);
  EXPECT_NE(metrics(engine.port(2)).find("vllm:num_requests_running{model_name=\"llama2-70b\"}"),
            std::string::npos);
  for (uint16_t port : engine.ports()) {
    StreamResult r = streamRequest(port, "POST", "/v1/completions", kShortStream);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_NE(r.body.find("[DONE]"), std::string::npos);
  }
}

TEST(EngineEmulatorTest, ModelThatDoesNotFitIsAStartUpError) {
  auto process = spawnSwitchyard(
      {"engine", "--listen", "127.0.0.1:0", "--gpu", "A10", "--model", "llama2-70b"});
  EXPECT_TRUE(process->waitForListening(deadlineIn(kStartTimeout)).empty());
  EXPECT_EQ(process->waitExit(deadlineIn(5s)), std::optional<int>(2));
  // Two A100s hold it.
  Engine tp({"--gpu", "A100", "--model", "llama2-70b", "--tp", "2"});
  EXPECT_NE(tp.port(), 0);
}

TEST(EngineEmulatorTest, ProfilesOverrideLimitsTheBatchAndRequestsQueue) {
  TempFile profiles(R"(
engine: {max_num_seqs: 2}
gpus: [{name: SLOW, memory_gb: 80, bandwidth_gbps: 300, tflops: 100}]
models: [{name: llama2-7b, params: 6.74e9, layers: 32, hidden_size: 4096, heads: 32, kv_heads: 32}]
)",
                    ".yaml");
  Engine engine({"--profiles", profiles.path(), "--gpu", "SLOW"});
  std::vector<std::unique_ptr<HttpClient>> clients;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([port = engine.port(), i] {
      httpRequest(port, "POST", "/v1/completions",
                  R"({"prompt":"queue me )" + std::to_string(i) + R"(","max_tokens":20})");
    });
  }
  bool queued = false;
  for (auto deadline = deadlineIn(5s); !queued && std::chrono::steady_clock::now() < deadline;) {
    std::string text = metrics(engine.port());
    queued = metricValue(text, "vllm:num_requests_waiting").value_or(0) > 0 &&
             metricValue(text, "vllm:num_requests_running") == 2.0;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(queued);
  for (std::thread& t : threads) t.join();
}

TEST(EngineEmulatorTest, ErrorFaultIsSetReadAndCleared) {
  Engine engine({"--gpu", "H100"});
  HttpResult set = engine.setFaults(R"({"error_rate":1,"error_status":500})");
  EXPECT_NE(set.body.find(R"("error_rate":1)"), std::string::npos) << set.body;
  HttpResult got = httpRequest(engine.port(), "GET", "/admin/faults");
  EXPECT_NE(got.body.find(R"("error_status":500)"), std::string::npos) << got.body;
  HttpResult failed = httpRequest(engine.port(), "POST", "/v1/completions", kShortStream);
  EXPECT_EQ(failed.status, 500);
  EXPECT_NE(failed.body.find(R"("error":)"), std::string::npos);
  EXPECT_EQ(httpRequest(engine.port(), "POST", "/v1/embeddings", R"({"input":"x"})").status, 500);
  EXPECT_EQ(httpRequest(engine.port(), "GET", "/health").status, 200);  // not affected

  EXPECT_EQ(httpRequest(engine.port(), "POST", "/admin/faults", R"({"bogus":1})").status, 400);
  EXPECT_EQ(httpRequest(engine.port(), "POST", "/admin/faults", R"({"error_rate":2})").status, 400);
  engine.setFaults("{}");
  EXPECT_EQ(httpRequest(engine.port(), "POST", "/v1/completions", kShortStream).status, 200);
}

TEST(EngineEmulatorTest, ResetAndHangFaults) {
  Engine engine({"--gpu", "H100", "--faults", R"({"reset":true})"});
  HttpResult reset = httpRequest(engine.port(), "POST", "/v1/completions", kShortStream);
  EXPECT_FALSE(reset.ok());
  EXPECT_EQ(reset.status, 0);

  engine.setFaults(R"({"hang_before_first_byte":1})");
  auto before = std::chrono::steady_clock::now();
  HttpResult hang = httpRequest(engine.port(), "POST", "/v1/completions", kShortStream, {}, 300ms);
  EXPECT_FALSE(hang.ok());
  EXPECT_EQ(hang.status, 0);
  EXPECT_GE(std::chrono::steady_clock::now() - before, 250ms);  // the client gave up
  EXPECT_EQ(httpRequest(engine.port(), "GET", "/health").status, 200);
}

TEST(EngineEmulatorTest, StallAndTruncateFaultsShapeTheStream) {
  Engine engine({"--gpu", "H100"});
  engine.setFaults(R"({"stall_mid_stream_ms":400,"stall_after_tokens":2})");
  StreamResult stalled = streamRequest(engine.port(), "POST", "/v1/completions", kShortStream);
  ASSERT_TRUE(stalled.ok()) << stalled.error;
  EXPECT_NE(stalled.body.find("[DONE]"), std::string::npos);
  std::chrono::nanoseconds longest_gap{0};
  for (size_t i = 1; i < stalled.pieces.size(); ++i) {
    longest_gap = std::max(longest_gap, stalled.pieces[i].at - stalled.pieces[i - 1].at);
  }
  EXPECT_GE(longest_gap, 350ms);

  engine.setFaults(R"({"truncate_stream":true,"truncate_after_tokens":3})");
  StreamResult truncated = streamRequest(engine.port(), "POST", "/v1/completions", kShortStream);
  EXPECT_FALSE(truncated.ok());  // the chunked body never ended
  EXPECT_EQ(truncated.body.find("[DONE]"), std::string::npos);
  size_t events = 0;
  for (size_t pos = 0; (pos = truncated.body.find("data: ", pos)) != std::string::npos; ++pos) {
    ++events;
  }
  EXPECT_EQ(events, 3u) << truncated.body;
}

TEST(EngineEmulatorTest, SlowdownStretchesGeneration) {
  Engine engine({"--gpu", "A100"});
  auto timed = [&] {
    auto start = std::chrono::steady_clock::now();
    HttpResult r = httpRequest(engine.port(), "POST", "/v1/completions",
                               R"({"prompt":"slow","max_tokens":20})");
    EXPECT_EQ(r.status, 200);
    return std::chrono::steady_clock::now() - start;
  };
  auto normal = timed();  // ~20 steps of ~10 ms
  engine.setFaults(R"({"slowdown":4})");
  auto slow = timed();
  EXPECT_GT(slow, 2.5 * normal) << normal.count() << " vs " << slow.count();
  std::string text = metrics(engine.port());
  EXPECT_GT(metricValue(text, "switchyard_engine_busy_seconds_total").value_or(0), 0.8);
}

TEST(EngineEmulatorTest, CrashAfterRequestsExitsTheProcess) {
  auto process = spawnSwitchyard({"engine", "--listen", "127.0.0.1:0", "--gpu", "H100", "--faults",
                                  R"({"crash_after_requests":1})"});
  std::vector<uint16_t> ports = process->waitForListening(deadlineIn(kStartTimeout));
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(httpRequest(ports[0], "POST", "/v1/completions", kShortStream).status, 200);
  HttpResult second = httpRequest(ports[0], "POST", "/v1/completions", kShortStream);
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(process->waitExit(deadlineIn(5s)), std::optional<int>(3));
}

TEST(EngineEmulatorTest, TelemetryFaults) {
  Engine engine({"--gpu", "H100"});
  engine.setFaults(R"({"metrics_missing":true})");
  EXPECT_EQ(httpRequest(engine.port(), "GET", "/metrics").status, 404);

  engine.setFaults(R"({"metrics_nan_kv":true})");
  std::string nan = metrics(engine.port());
  EXPECT_NE(nan.find("vllm:kv_cache_usage_perc{model_name=\"llama2-7b\"} NaN\n"),
            std::string::npos);

  engine.setFaults(R"({"metrics_stale":true})");
  std::string frozen = metrics(engine.port());
  ASSERT_TRUE(streamRequest(engine.port(), "POST", "/v1/completions", kShortStream).ok());
  EXPECT_EQ(metrics(engine.port()), frozen);
  EXPECT_EQ(metricValue(frozen, "vllm:generation_tokens_total"), 0.0);
  engine.setFaults("{}");
  EXPECT_EQ(metricValue(metrics(engine.port()), "vllm:generation_tokens_total"), 6.0);
}

}  // namespace
}  // namespace switchyard::testing
