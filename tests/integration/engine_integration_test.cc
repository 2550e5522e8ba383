// `switchyard engine` end to end: the real binary on an OS-chosen loopback port, driven over HTTP.
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>

#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace switchyard::testing {
namespace {

constexpr auto kStartTimeout = 10s;

// A running engine; stops it (SIGTERM) and checks a clean exit when the test ends.
class Engine {
 public:
  explicit Engine(std::vector<std::string> extra_args = {}) {
    std::vector<std::string> args = {"engine", "--listen", "127.0.0.1:0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    process_ = spawnSwitchyard(args);
    std::vector<uint16_t> ports = process_->waitForListening(deadlineIn(kStartTimeout));
    if (ports.size() == 1) port_ = ports[0];
  }
  ~Engine() {
    process_->sendSignal(SIGTERM);
    EXPECT_EQ(process_->waitExit(deadlineIn(5s)), std::optional<int>(0));
  }
  uint16_t port() const { return port_; }
  ChildProcess& process() { return *process_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  uint16_t port_ = 0;
};

struct SseEvent {
  std::string data;  // after "data: "
};

std::vector<SseEvent> parseSse(const std::string& body) {
  std::vector<SseEvent> events;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated SSE event: " << body.substr(pos);
      break;
    }
    std::string event = body.substr(pos, end - pos);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    events.push_back(SseEvent{event.substr(6)});
    pos = end + 2;
  }
  return events;
}

simdjson::dom::element parseJson(simdjson::dom::parser& parser, const std::string& text) {
  return parser.parse(text);  // throws (failing the test) on invalid JSON
}

std::optional<double> metricValue(const std::string& metrics, const std::string& name) {
  size_t pos = 0;
  while ((pos = metrics.find(name, pos)) != std::string::npos) {
    bool line_start = pos == 0 || metrics[pos - 1] == '\n';
    size_t after = pos + name.size();
    if (line_start && after < metrics.size() && (metrics[after] == '{' || metrics[after] == ' ')) {
      size_t space = metrics.find(' ', metrics[after] == '{' ? metrics.find('}', after) : after);
      return std::stod(metrics.substr(space + 1, metrics.find('\n', space) - space - 1));
    }
    pos = after;
  }
  return std::nullopt;
}

// Polls /metrics until `name` satisfies `predicate` or the deadline passes.
template <typename Predicate>
bool waitForMetric(uint16_t port, const std::string& name, Predicate predicate,
                   SteadyTime deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResult metrics = httpRequest(port, "GET", "/metrics");
    if (metrics.ok()) {
      std::optional<double> value = metricValue(metrics.body, name);
      if (value && predicate(*value)) return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// prometheus_client's `name[]` filter, which vLLM's /metrics serves: only the asked families.
TEST(EngineIntegrationTest, MetricsAnswerOnlyTheFamiliesAskedFor) {
  Engine engine;
  ASSERT_NE(engine.port(), 0);
  const HttpResult whole = httpRequest(engine.port(), "GET", "/metrics");
  ASSERT_EQ(whole.status, 200);
  const HttpResult some = httpRequest(
      engine.port(), "GET",
      "/metrics?name%5B%5D=vllm%3Anum_requests_running"
      "&name[]=vllm:e2e_request_latency_seconds_count");
  ASSERT_EQ(some.status, 200);
  EXPECT_NE(some.body.find("\nvllm:num_requests_running{"), std::string::npos) << some.body;
  EXPECT_NE(some.body.find("vllm:e2e_request_latency_seconds_bucket{"), std::string::npos);
  EXPECT_EQ(some.body.find("vllm:num_requests_waiting"), std::string::npos) << some.body;
  EXPECT_EQ(some.body.find("vllm:kv_cache_usage_perc"), std::string::npos);
  EXPECT_LT(some.body.size() * 4, whole.body.size());
  // An unknown name answers an empty page, as prometheus_client does.
  EXPECT_EQ(httpRequest(engine.port(), "GET", "/metrics?name[]=nothing").body, "");
}

TEST(EngineIntegrationTest, ListensOnAnOsChosenPortAndStopsCleanlyOnSigterm) {
  auto process = spawnSwitchyard({"engine", "--listen", "127.0.0.1:0", "--gpu", "H100"});
  std::vector<uint16_t> ports = process->waitForListening(deadlineIn(kStartTimeout));
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_NE(ports[0], 0);
  EXPECT_EQ(process->stdoutLines().size(), 1u);
  HttpResult health = httpRequest(ports[0], "GET", "/health");
  ASSERT_TRUE(health.ok()) << health.error;
  EXPECT_EQ(health.status, 200);
  process->sendSignal(SIGTERM);
  EXPECT_EQ(process->waitExit(deadlineIn(5s)), std::optional<int>(0));
}

TEST(EngineIntegrationTest, SigintWhileStreamingStillExitsZero) {
  auto process = spawnSwitchyard({"engine", "--listen", "127.0.0.1:0"});
  std::vector<uint16_t> ports = process->waitForListening(deadlineIn(kStartTimeout));
  ASSERT_EQ(ports.size(), 1u);
  HttpClient client(ports[0]);
  bool signalled = false;
  StreamResult stream =
      client.stream("POST", "/v1/completions", R"({"prompt":"x","max_tokens":1000,"stream":true})",
                    {}, [&](const StreamPiece&) {
                      if (!signalled) process->sendSignal(SIGINT);
                      signalled = true;
                      return true;
                    });
  EXPECT_TRUE(signalled);
  EXPECT_FALSE(stream.ok());  // the server closed the stream instead of finishing it
  EXPECT_EQ(process->waitExit(deadlineIn(5s)), std::optional<int>(0));
}

TEST(EngineIntegrationTest, UnknownGpuIsAStartUpError) {
  auto process = spawnSwitchyard({"engine", "--listen", "127.0.0.1:0", "--gpu", "TPU9"});
  EXPECT_TRUE(process->waitForListening(deadlineIn(kStartTimeout)).empty());
  EXPECT_EQ(process->waitExit(deadlineIn(5s)), std::optional<int>(2));
}

TEST(EngineIntegrationTest, StreamingChatSendsOneEventPerTokenAsItIsProduced) {
  Engine engine({"--gpu", "A100"});  // one 7B decode step every ~10.3 ms
  ASSERT_NE(engine.port(), 0);
  constexpr int kTokens = 12;
  StreamResult stream = streamRequest(
      engine.port(), "POST", "/v1/chat/completions",
      R"({"model":"llama2-7b","messages":[{"role":"user","content":"Say something"}],)"
      R"("max_tokens":12,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(stream.ok()) << stream.error;
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(stream.header("content-type").rfind("text/event-stream", 0), 0u);
  EXPECT_EQ(stream.header("transfer-encoding"), "chunked");

  std::vector<SseEvent> events = parseSse(stream.body);
  // role, 12 tokens, finish, usage, [DONE]
  ASSERT_EQ(events.size(), static_cast<size_t>(kTokens + 4)) << stream.body;
  EXPECT_EQ(events.back().data, "[DONE]");
  simdjson::dom::parser parser;
  simdjson::dom::element first = parseJson(parser, events[0].data);
  EXPECT_EQ(std::string_view(first["object"]), "chat.completion.chunk");
  EXPECT_EQ(std::string_view(first["choices"].at(0)["delta"]["role"]), "assistant");
  EXPECT_EQ(std::string_view(first["choices"].at(0)["delta"]["content"]), "");
  std::string text;
  for (int i = 1; i <= kTokens; ++i) {
    simdjson::dom::element chunk = parseJson(parser, events[i].data);
    std::string_view content = chunk["choices"].at(0)["delta"]["content"];
    EXPECT_FALSE(content.empty());
    EXPECT_TRUE(chunk["choices"].at(0)["finish_reason"].is_null());
    text += content;
  }
  simdjson::dom::element finish = parseJson(parser, events[kTokens + 1].data);
  EXPECT_EQ(std::string_view(finish["choices"].at(0)["finish_reason"]), "length");
  EXPECT_EQ(simdjson::dom::object(finish["choices"].at(0)["delta"]).size(), 0u);
  simdjson::dom::element usage = parseJson(parser, events[kTokens + 2].data);
  EXPECT_EQ(simdjson::dom::array(usage["choices"]).size(), 0u);
  EXPECT_EQ(int64_t(usage["usage"]["completion_tokens"]), kTokens);
  EXPECT_EQ(int64_t(usage["usage"]["prompt_tokens"]), 4);  // ceil(13 / 4)
  EXPECT_EQ(int64_t(usage["usage"]["total_tokens"]), kTokens + 4);

  // Each event arrived in its own piece, spread over the decode time, not all at the end.
  ASSERT_GE(stream.pieces.size(), events.size());
  auto spread = stream.pieces.back().at - stream.pieces.front().at;
  EXPECT_GE(spread, 90ms);  // 11 decode steps of ~10.3 ms = ~113 ms
  size_t early = 0;
  for (const StreamPiece& piece : stream.pieces) {
    if (stream.pieces.back().at - piece.at >= 50ms) ++early;
  }
  EXPECT_GE(early, 4u);

  // Same seed, same prompt: same text.
  StreamResult again = streamRequest(
      engine.port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Say something"}],"max_tokens":12,"stream":true})");
  ASSERT_TRUE(again.ok()) << again.error;
  std::vector<SseEvent> again_events = parseSse(again.body);
  ASSERT_EQ(again_events.size(), static_cast<size_t>(kTokens + 3));  // no usage chunk
  std::string again_text;
  for (int i = 1; i <= kTokens; ++i) {
    again_text += std::string_view(
        parseJson(parser, again_events[i].data)["choices"].at(0)["delta"]["content"]);
  }
  EXPECT_EQ(again_text, text);
}

TEST(EngineIntegrationTest, StreamingCompletionsWithoutUsage) {
  Engine engine({"--gpu", "H100"});
  ASSERT_NE(engine.port(), 0);
  StreamResult stream = streamRequest(engine.port(), "POST", "/v1/completions",
                                      R"({"prompt":"Once upon","max_tokens":5,"stream":true})");
  ASSERT_TRUE(stream.ok()) << stream.error;
  std::vector<SseEvent> events = parseSse(stream.body);
  ASSERT_EQ(events.size(), 7u) << stream.body;  // 5 tokens, finish, [DONE]
  simdjson::dom::parser parser;
  for (int i = 0; i < 5; ++i) {
    simdjson::dom::element chunk = parseJson(parser, events[i].data);
    EXPECT_EQ(std::string_view(chunk["object"]), "text_completion");
    EXPECT_FALSE(std::string_view(chunk["choices"].at(0)["text"]).empty());
  }
  EXPECT_EQ(std::string_view(parseJson(parser, events[5].data)["choices"].at(0)["finish_reason"]),
            "length");
  EXPECT_EQ(events[6].data, "[DONE]");
}

TEST(EngineIntegrationTest, NonStreamingResponsesCarryUsage) {
  Engine engine({"--gpu", "B200", "--model", "tiny-model"});
  ASSERT_NE(engine.port(), 0);
  simdjson::dom::parser parser;

  HttpResult chat =
      httpRequest(engine.port(), "POST", "/v1/chat/completions",
                  R"({"model":"tiny-model","messages":[{"role":"system","content":"abcde"},)"
                  R"({"role":"user","content":"fghij"}],"max_completion_tokens":7})");
  ASSERT_TRUE(chat.ok()) << chat.error;
  EXPECT_EQ(chat.status, 200);
  EXPECT_EQ(chat.header("content-type"), "application/json");
  EXPECT_EQ(chat.header("content-length"), std::to_string(chat.body.size()));
  simdjson::dom::element response = parseJson(parser, chat.body);
  EXPECT_EQ(std::string_view(response["object"]), "chat.completion");
  EXPECT_EQ(std::string_view(response["model"]), "tiny-model");
  EXPECT_EQ(std::string_view(response["choices"].at(0)["finish_reason"]), "length");
  EXPECT_EQ(std::string_view(response["choices"].at(0)["message"]["role"]), "assistant");
  EXPECT_FALSE(std::string_view(response["choices"].at(0)["message"]["content"]).empty());
  EXPECT_EQ(int64_t(response["usage"]["prompt_tokens"]), 3);  // ceil(10 / 4)
  EXPECT_EQ(int64_t(response["usage"]["completion_tokens"]), 7);
  EXPECT_EQ(int64_t(response["usage"]["total_tokens"]), 10);

  HttpResult completion = httpRequest(engine.port(), "POST", "/v1/completions",
                                      R"({"prompt":"123456789","stream":false})");
  ASSERT_TRUE(completion.ok()) << completion.error;
  simdjson::dom::element text = parseJson(parser, completion.body);
  EXPECT_EQ(std::string_view(text["object"]), "text_completion");
  EXPECT_FALSE(std::string_view(text["choices"].at(0)["text"]).empty());
  EXPECT_EQ(int64_t(text["usage"]["prompt_tokens"]), 3);
  EXPECT_EQ(int64_t(text["usage"]["completion_tokens"]), 16);  // the default max_tokens
}

TEST(EngineIntegrationTest, EmbeddingsModelsAndHealth) {
  Engine engine({"--model", "embedder"});
  ASSERT_NE(engine.port(), 0);
  simdjson::dom::parser parser;

  HttpResult embeddings = httpRequest(engine.port(), "POST", "/v1/embeddings",
                                      R"({"model":"embedder","input":["hello","hello world!"]})");
  ASSERT_TRUE(embeddings.ok()) << embeddings.error;
  EXPECT_EQ(embeddings.status, 200);
  simdjson::dom::element response = parseJson(parser, embeddings.body);
  simdjson::dom::array data = response["data"];
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(int64_t(data.at(1)["index"]), 1);
  simdjson::dom::array vector = data.at(0)["embedding"];
  EXPECT_GT(vector.size(), 0u);
  double norm = 0;
  for (double v : vector) norm += v * v;
  EXPECT_NEAR(norm, 1.0, 1e-3);
  EXPECT_EQ(int64_t(response["usage"]["prompt_tokens"]), 2 + 3);

  HttpResult again =
      httpRequest(engine.port(), "POST", "/v1/embeddings", R"({"input":["hello","hello world!"]})");
  EXPECT_EQ(again.body, embeddings.body);  // deterministic

  HttpResult models = httpRequest(engine.port(), "GET", "/v1/models");
  ASSERT_TRUE(models.ok()) << models.error;
  EXPECT_EQ(models.status, 200);
  simdjson::dom::element list = parseJson(parser, models.body);
  ASSERT_EQ(simdjson::dom::array(list["data"]).size(), 1u);
  EXPECT_EQ(std::string_view(list["data"].at(0)["id"]), "embedder");

  HttpResult health = httpRequest(engine.port(), "GET", "/health");
  EXPECT_EQ(health.status, 200);
}

TEST(EngineIntegrationTest, VllmMetricsTrackRunningRequestsAndTokens) {
  Engine engine({"--gpu", "A10"});  // ~30 ms per step: a 40-token stream stays open ~1.2 s
  ASSERT_NE(engine.port(), 0);
  HttpResult idle = httpRequest(engine.port(), "GET", "/metrics");
  ASSERT_TRUE(idle.ok()) << idle.error;
  EXPECT_EQ(idle.header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
        "switchyard_engine_busy_seconds_total"}) {
    EXPECT_NE(idle.body.find(std::string("# HELP ") + name + " "), std::string::npos) << name;
    EXPECT_NE(idle.body.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
    EXPECT_NE(idle.body.find(std::string(name) + "{model_name=\"llama2-7b\"} "), std::string::npos)
        << name;
  }
  EXPECT_EQ(metricValue(idle.body, "vllm:num_requests_running"), 0.0);

  std::optional<double> running_during;
  std::optional<double> kv_during;
  HttpClient client(engine.port());
  StreamResult stream = client.stream(
      "POST", "/v1/completions",
      R"({"prompt":"a prompt of some forty characters.......","max_tokens":40,"stream":true})", {},
      [&](const StreamPiece&) {
        if (!running_during) {
          HttpResult metrics = httpRequest(engine.port(), "GET", "/metrics");
          running_during = metricValue(metrics.body, "vllm:num_requests_running");
          kv_during = metricValue(metrics.body, "vllm:kv_cache_usage_perc");
        }
        return true;
      });
  ASSERT_TRUE(stream.ok()) << stream.error;
  EXPECT_EQ(running_during, 1.0);
  ASSERT_TRUE(kv_during.has_value());
  EXPECT_GT(*kv_during, 0.0);

  HttpResult after = httpRequest(engine.port(), "GET", "/metrics");
  EXPECT_EQ(metricValue(after.body, "vllm:num_requests_running"), 0.0);
  EXPECT_EQ(metricValue(after.body, "vllm:kv_cache_usage_perc"), 0.0);
  EXPECT_EQ(metricValue(after.body, "vllm:prompt_tokens_total"), 10.0);
  EXPECT_EQ(metricValue(after.body, "vllm:generation_tokens_total"), 40.0);
  std::optional<double> busy = metricValue(after.body, "switchyard_engine_busy_seconds_total");
  ASSERT_TRUE(busy.has_value());
  EXPECT_GT(*busy, 1.0);  // ~1.2 s of decoding plus prefill
}

TEST(EngineIntegrationTest, SglangFlavorUsesSglangMetricNames) {
  Engine engine({"--flavor", "sglang", "--model", "m"});
  ASSERT_NE(engine.port(), 0);
  HttpResult metrics = httpRequest(engine.port(), "GET", "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.error;
  for (const char* name : {"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
                           "sglang:prompt_tokens_total", "sglang:generation_tokens_total",
                           "switchyard_engine_busy_seconds_total"}) {
    EXPECT_NE(metrics.body.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
    EXPECT_EQ(metricValue(metrics.body, name), 0.0) << name;
  }
  EXPECT_EQ(metrics.body.find("vllm:"), std::string::npos);
  HttpResult models = httpRequest(engine.port(), "GET", "/v1/models");
  EXPECT_NE(models.body.find(R"("owned_by":"sglang")"), std::string::npos);
}

TEST(EngineIntegrationTest, ClientDisconnectCancelsTheRequest) {
  Engine engine({"--gpu", "A10"});
  ASSERT_NE(engine.port(), 0);
  HttpClient client(engine.port());
  int pieces = 0;
  StreamResult stream =
      client.stream("POST", "/v1/completions", R"({"prompt":"x","max_tokens":500,"stream":true})",
                    {}, [&](const StreamPiece&) { return ++pieces < 2; });
  EXPECT_EQ(pieces, 2);
  // The engine notices at its next write (~40 ms later) and cancels the request in the model.
  EXPECT_TRUE(waitForMetric(
      engine.port(), "vllm:num_requests_running", [](double v) { return v == 0; }, deadlineIn(5s)));
  HttpResult metrics = httpRequest(engine.port(), "GET", "/metrics");
  std::optional<double> generated = metricValue(metrics.body, "vllm:generation_tokens_total");
  ASSERT_TRUE(generated.has_value());
  EXPECT_LT(*generated, 100.0);
}

TEST(EngineIntegrationTest, ErrorsUseTheOpenAiEnvelope) {
  Engine engine;
  ASSERT_NE(engine.port(), 0);
  simdjson::dom::parser parser;
  auto expect_error = [&](const HttpResult& result, int status) {
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_EQ(result.status, status) << result.body;
    EXPECT_EQ(result.header("content-type"), "application/json");
    simdjson::dom::element error = parseJson(parser, result.body)["error"];
    EXPECT_FALSE(std::string_view(error["message"]).empty());
    EXPECT_FALSE(std::string_view(error["type"]).empty());
    EXPECT_TRUE(error["param"].is_null());
    EXPECT_TRUE(error["code"].is_null());
  };
  HttpResult not_found = httpRequest(engine.port(), "GET", "/v2/nothing");
  expect_error(not_found, 404);
  EXPECT_NE(not_found.body.find(R"("type":"invalid_request_error")"), std::string::npos);

  HttpResult malformed =
      httpRequest(engine.port(), "POST", "/v1/chat/completions", R"({"messages": [)");
  expect_error(malformed, 400);
  EXPECT_NE(malformed.body.find(R"("type":"invalid_request_error")"), std::string::npos);

  expect_error(httpRequest(engine.port(), "POST", "/v1/completions", "not json at all"), 400);
  expect_error(httpRequest(engine.port(), "POST", "/v1/completions", "[1,2]"), 400);
  expect_error(
      httpRequest(engine.port(), "POST", "/v1/completions", R"({"prompt":"x","max_tokens":0})"),
      400);
  expect_error(httpRequest(engine.port(), "POST", "/v1/chat/completions", R"({"model":"x"})"), 400);
  expect_error(httpRequest(engine.port(), "POST", "/v1/embeddings", R"({"input":5})"), 400);
  expect_error(
      httpRequest(engine.port(), "POST", "/v1/completions", R"({"model":"other","prompt":"x"})"),
      404);
  expect_error(httpRequest(engine.port(), "GET", "/v1/chat/completions"), 405);
}

TEST(EngineIntegrationTest, KeepAliveReusesOneConnectionUntilIdleTimeout) {
  Engine engine;
  ASSERT_NE(engine.port(), 0);
  HttpClient client(engine.port());
  HttpResult first = client.request("GET", "/health");
  ASSERT_TRUE(first.ok()) << first.error;
  uint16_t local_port = client.localPort();
  ASSERT_NE(local_port, 0);
  HttpResult second =
      client.request("POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2})");
  ASSERT_TRUE(second.ok()) << second.error;
  EXPECT_EQ(second.status, 200);
  StreamResult third =
      client.stream("POST", "/v1/completions", R"({"prompt":"hi","max_tokens":2,"stream":true})");
  ASSERT_TRUE(third.ok()) << third.error;
  EXPECT_TRUE(client.isOpen());
  EXPECT_EQ(client.localPort(), local_port);  // the same TCP connection served all three

  // An idle keep-alive connection is closed by the server after 5 s, as uvicorn does.
  auto idle_since = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.waitForServerClose(deadlineIn(10s)));
  EXPECT_GE(std::chrono::steady_clock::now() - idle_since, 4s);
}

}  // namespace
}  // namespace switchyard::testing
