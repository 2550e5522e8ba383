// Observability end to end: /metrics through promtool, the explain header and /debug/decisions,
// OTLP spans received by an in-test collector (with the traceparent the engine got), dropped
// spans when the collector is down, and the dashboard rendered by headless Chromium.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway_harness.h"
#include "loopback_server.h"

namespace switchyard::testing {
namespace {

const std::string kChat =
    R"({"model":"llama2-7b","messages":[{"role":"user","content":"Say this is a test!"}],)"
    R"("max_tokens":8})";

const std::string kEngineReply =
    R"({"id":"c1","object":"chat.completion","model":"llama2-7b","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})";

// A gateway process in front of the given replicas, stopped with SIGTERM.
class Gateway {
 public:
  Gateway(const std::vector<uint16_t>& replicas, const std::string& top) {
    std::string text = "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n" + top +
                       "models:\n  - name: llama2-7b\n    routing_strategy: least-request\n"
                       "    replicas:\n";
    const char* gpus[] = {"A100", "L20"};
    for (size_t i = 0; i < replicas.size(); ++i) {
      text += "      - address: 127.0.0.1:" + std::to_string(replicas[i]) +
              "\n        labels: { gpu: " + gpus[i % 2] + ", engine: vllm }\n";
    }
    config_ = std::make_unique<TempFile>(text, ".yaml");
    process_ = spawnSwitchyard({"gateway", "--config", config_->path()});
    ports_ = process_->waitForListening(deadlineIn(10s));
  }
  ~Gateway() {
    process_->sendSignal(SIGTERM);
    EXPECT_EQ(process_->waitExit(deadlineIn(10s)), std::optional<int>(0));
  }
  uint16_t port() const { return ports_.size() > 0 ? ports_[0] : 0; }
  uint16_t admin() const { return ports_.size() > 1 ? ports_[1] : 0; }

 private:
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<ChildProcess> process_;
  std::vector<uint16_t> ports_;
};


// Runs a shell command; returns its exit status and stdout.
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, out};
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

bool haveTool(const std::string& name) {
  return run("command -v " + name + " >/dev/null 2>&1").first == 0;
}

double metricValue(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

TEST(ObserveTest, MetricsPassPromtoolAndCountTraffic) {
  if (!haveTool("promtool")) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  LoopbackServer a(kEngineReply), b(kEngineReply);
  Gateway gateway({a.port(), b.port()}, "");
  ASSERT_NE(gateway.admin(), 0);
  // Enough requests that random tie-breaking sends some to each replica (all 16 to one: 2^-15).
  constexpr int kRequests = 16;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_EQ(httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, kJson).status,
              200);
  }
  EXPECT_EQ(httpRequest(gateway.port(), "POST", "/v1/chat/completions",
                        R"({"model":"none","messages":[]})", kJson)
                .status,
            404);
  const std::string replica_a = "127.0.0.1:" + std::to_string(a.port());
  const std::string replica_b = "127.0.0.1:" + std::to_string(b.port());
  // A replica that served nothing has no series.
  const auto served = [&](const std::string& page, const std::string& replica) {
    return std::max(0.0, metricValue(page, "switchyard_requests_total{model=\"llama2-7b\","
                                           "replica=\"" + replica +
                                               "\",strategy=\"least-request\",code=\"2xx\"}"));
  };
  // A request is counted when its handler finishes, just after the client got its answer: the
  // last ones may land a moment after the client moved on.
  HttpResult metrics;
  EXPECT_TRUE(waitUntil(
      [&] {
        metrics = httpRequest(gateway.admin(), "GET", "/metrics");
        return served(metrics.body, replica_a) + served(metrics.body, replica_b) ==
                   kRequests &&
               metricValue(metrics.body, "switchyard_requests_total{model=\"\",replica=\"\","
                                         "strategy=\"\",code=\"4xx\"}") == 1;
      },
      3s))
      << metrics.body;
  ASSERT_EQ(metrics.status, 200);
  EXPECT_TRUE(metrics.header("Content-Type").starts_with("text/plain; version=0.0.4"));
  TempFile file(metrics.body, ".prom");
  const auto [status, output] = run("promtool check metrics < " + file.path() + " 2>&1");
  EXPECT_EQ(status, 0) << output << "\n" << metrics.body;
  for (const std::string& r : {replica_a, replica_b}) {
    EXPECT_GT(served(metrics.body, r), 0) << r;  // least-request breaks ties at random
  }
  EXPECT_EQ(metricValue(metrics.body, "switchyard_requests_total{model=\"\",replica=\"\","
                                      "strategy=\"\",code=\"4xx\"}"),
            1);
  EXPECT_EQ(metricValue(metrics.body, "switchyard_output_tokens_total{model=\"llama2-7b\","
                                      "replica=\"" + replica_a + "\"}") +
                metricValue(metrics.body, "switchyard_output_tokens_total{model=\"llama2-7b\","
                                          "replica=\"" + replica_b + "\"}"),
            3 * kRequests);
  EXPECT_EQ(metricValue(metrics.body,
                        "switchyard_routing_decision_seconds_count{model=\"llama2-7b\"}"),
            kRequests);
  EXPECT_NE(metrics.body.find("switchyard_replica_inflight{model=\"llama2-7b\""),
            std::string::npos);
  EXPECT_NE(metrics.body.find("switchyard_model_load_imbalance{model=\"llama2-7b\"}"),
            std::string::npos);
}

TEST(ObserveTest, ExplainHeaderAndDecisionLog) {
  LoopbackServer a(kEngineReply), b(kEngineReply);
  Gateway gateway({a.port(), b.port()}, "decisions: { log_size: 8 }\n");
  Headers headers = kJson;
  headers.push_back({"x-switchyard-explain", "1"});
  headers.push_back({"x-request-id", "explain-me"});
  const HttpResult r =
      httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, headers);
  ASSERT_EQ(r.status, 200);
  const std::string decision = r.header("x-switchyard-decision");
  EXPECT_TRUE(decision.starts_with("strategy=least-request; chosen=" + r.header("target-pod")))
      << decision;
  EXPECT_NE(decision.find("candidates=127.0.0.1:"), std::string::npos) << decision;
  // Without the header, no explanation.
  EXPECT_FALSE(httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, kJson)
                   .hasHeader("x-switchyard-decision"));
  for (int i = 0; i < 20; ++i) httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, kJson);

  const HttpResult log = httpRequest(gateway.admin(), "GET", "/debug/decisions");
  ASSERT_EQ(log.status, 200);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(log.body);
  simdjson::dom::array decisions = root["decisions"].get_array();
  EXPECT_EQ(decisions.size(), 8u);  // the configured bound, merged over both workers
  // ?limit=N: the newest N; a bad limit is a clear 400.
  const HttpResult newest = httpRequest(gateway.admin(), "GET", "/debug/decisions?limit=3");
  ASSERT_EQ(newest.status, 200);
  simdjson::dom::parser limited_parser;
  EXPECT_EQ(limited_parser.parse(newest.body)["decisions"].get_array().size(), 3u);
  EXPECT_EQ(httpRequest(gateway.admin(), "GET", "/debug/decisions?limit=x").status, 400);
  EXPECT_EQ(httpRequest(gateway.admin(), "GET", "/debug/decisions?limit=0").status, 400);
  int64_t previous = INT64_MAX;
  for (auto d : decisions) {
    EXPECT_LE(d["time_unix_ms"].get_int64().value(), previous);  // newest first
    previous = d["time_unix_ms"].get_int64();
    EXPECT_EQ(std::string_view(d["model"].get_string()), "llama2-7b");
    EXPECT_EQ(d["candidates"].get_array().size(), 2u);
  }
  const std::string fleet = httpRequest(gateway.admin(), "GET", "/debug/fleet").body;
  simdjson::dom::element f = parser.parse(fleet);
  for (auto replica : f["models"].at(0)["replicas"].get_array()) {
    EXPECT_TRUE(replica["score"].is_double() || replica["score"].is_int64()) << fleet;
  }
}

TEST(ObserveTest, SpansReachTheCollectorWithParentChildIds) {
  LoopbackServer collector("{}");
  LoopbackServer engine(kEngineReply);
  Gateway gateway({engine.port()},
                  "tracing: { otlp_endpoint: http://127.0.0.1:" + std::to_string(collector.port()) +
                      ", sampling_ratio: 1.0, export_interval_ms: 50 }\n");
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string client_span = "00f067aa0ba902b7";
  Headers headers = kJson;
  headers.push_back({"traceparent", "00-" + trace + "-" + client_span + "-01"});
  ASSERT_EQ(httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, headers).status,
            200);

  // The engine got a child traceparent of the same trace.
  const auto calls = engine.requests("/v1/chat/completions");
  ASSERT_EQ(calls.size(), 1u);
  const std::string upstream = calls[0].headers.at("traceparent");
  ASSERT_EQ(upstream.size(), 55u) << upstream;
  EXPECT_EQ(upstream.substr(3, 32), trace);
  EXPECT_NE(upstream.substr(36, 16), client_span);
  EXPECT_EQ(upstream.substr(53), "01");

  std::map<std::string, simdjson::dom::element> by_name;
  simdjson::dom::parser parser;
  std::vector<std::string> bodies;
  ASSERT_TRUE(waitUntil(
      [&] {
        size_t spans = 0;
        for (const auto& r : collector.requests("/v1/traces")) {
          simdjson::dom::element root = parser.parse(r.body);
          spans += root["resourceSpans"].at(0)["scopeSpans"].at(0)["spans"].get_array().size();
        }
        return spans >= 3;
      },
      5s));
  struct Span {
    std::string trace, id, parent;
    std::map<std::string, std::string> attributes;
  };
  std::map<std::string, Span> spans;
  for (const auto& r : collector.requests("/v1/traces")) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    simdjson::dom::element root = parser.parse(r.body);
    for (auto s : root["resourceSpans"].at(0)["scopeSpans"].at(0)["spans"].get_array()) {
      Span span;
      span.trace = std::string(s["traceId"].get_string().value());
      span.id = std::string(s["spanId"].get_string().value());
      std::string_view parent;
      if (s["parentSpanId"].get(parent) == simdjson::SUCCESS) span.parent = std::string(parent);
      for (auto a : s["attributes"].get_array()) {
        auto value = a["value"];
        std::string_view text;
        if (value["stringValue"].get(text) == simdjson::SUCCESS ||
            value["intValue"].get(text) == simdjson::SUCCESS) {
          span.attributes[std::string(a["key"].get_string().value())] = std::string(text);
        } else {
          span.attributes[std::string(a["key"].get_string().value())] =
              std::to_string(value["doubleValue"].get_double().value());
        }
      }
      spans[std::string(s["name"].get_string().value())] = span;
    }
  }
  ASSERT_EQ(spans.count("gateway.request"), 1u);
  ASSERT_EQ(spans.count("process.select_target_pod"), 1u);
  ASSERT_EQ(spans.count("llm.inference"), 1u);
  Span root = spans["gateway.request"];
  Span select = spans["process.select_target_pod"];
  Span inference = spans["llm.inference"];
  EXPECT_EQ(root.trace, trace);
  EXPECT_EQ(root.parent, client_span);
  EXPECT_EQ(select.trace, trace);
  EXPECT_EQ(select.parent, root.id);
  EXPECT_EQ(inference.parent, root.id);
  EXPECT_EQ(inference.id, upstream.substr(36, 16));  // the engine's parent is llm.inference
  EXPECT_EQ(select.attributes["routing.strategy"], "least-request");
  EXPECT_EQ(select.attributes["routing.candidate_count"], "1");
  EXPECT_EQ(select.attributes["routing.ready_replica_count"], "1");
  EXPECT_EQ(select.attributes["routing.selected_pod"],
            "127.0.0.1:" + std::to_string(engine.port()));
  EXPECT_TRUE(select.attributes.count("routing.time_ms"));
  EXPECT_EQ(inference.attributes["gen_ai.usage.output_tokens"], "3");
  EXPECT_TRUE(inference.attributes.count("llm.time_to_first_chunk_ms"));
  EXPECT_TRUE(inference.attributes.count("llm.streaming_to_last_chunk_ms"));
  EXPECT_EQ(root.attributes["http.response.status_code"], "200");
}

TEST(ObserveTest, CollectorDownDropsAndCountsSpansAndRequestsStillWork) {
  LoopbackServer engine(kEngineReply);
  uint16_t dead;
  {
    LoopbackServer gone("{}");
    dead = gone.port();
  }
  Gateway gateway({engine.port()}, "tracing: { otlp_endpoint: http://127.0.0.1:" +
                                       std::to_string(dead) +
                                       ", sampling_ratio: 1.0, export_interval_ms: 50 }\n");
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, kJson).status,
              200);
  }
  EXPECT_TRUE(waitUntil(
      [&] {
        const std::string m = httpRequest(gateway.admin(), "GET", "/metrics").body;
        return metricValue(m, "switchyard_trace_spans_dropped_total") >= 15;
      },
      5s));
}

TEST(ObserveTest, DashboardRendersWithDataInHeadlessChromium) {
  if (!haveTool("chromium")) GTEST_SKIP() << "chromium not installed";
  LoopbackServer a(kEngineReply), b(kEngineReply);
  Gateway gateway({a.port(), b.port()}, "");
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(httpRequest(gateway.port(), "POST", "/v1/chat/completions", kChat, kJson).status,
              200);
  }
  const HttpResult page = httpRequest(gateway.admin(), "GET", "/dashboard");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body.find("http://"), std::string::npos) << "no external assets";
  EXPECT_EQ(page.body.find("https://"), std::string::npos) << "no external assets";
  // Traffic keeps flowing while the page polls, so the traffic-share chart has deltas to draw.
  std::atomic<bool> done{false};
  std::thread traffic([&] {
    HttpClient client(gateway.port());
    while (!done) {
      client.request("POST", "/v1/chat/completions", kChat, kJson);
      std::this_thread::sleep_for(5ms);  // pacing, not waiting for a condition
    }
  });
  const std::string profile = std::filesystem::temp_directory_path() /
                              ("switchyard-chromium-" + std::to_string(::getpid()));
  const auto [status, dom] = run(
      "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--no-first-run --user-data-dir=" + profile +
      " --virtual-time-budget=5000 --dump-dom http://127.0.0.1:" +
      std::to_string(gateway.admin()) + "/dashboard 2>/dev/null");
  done = true;
  traffic.join();
  std::filesystem::remove_all(profile);
  ASSERT_EQ(status, 0) << dom;
  EXPECT_NE(dom.find("data-ready=\"1\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-replicas=\"2\""), std::string::npos);
  EXPECT_EQ(dom.find("data-decisions=\"0\""), std::string::npos);
  // Count rendered rows only (the page's own script contains the row template too).
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = 0; (at = dom.find(needle, at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(count("<tr class=\"replica\" data-replica=\"127.0.0.1:"), 2u);
  EXPECT_GE(count("<rect class=\"share\""), 2u);  // the traffic-share chart has data
  EXPECT_NE(dom.find("data-gpu=\"A100\""), std::string::npos);
  EXPECT_NE(dom.find("data-gpu=\"L20\""), std::string::npos);
  EXPECT_NE(dom.find("<svg class=\"bar\""), std::string::npos);
  EXPECT_GE(count("<tr class=\"decision\"><td>"), 11u);  // >= 10 rendered + the template
}

}  // namespace
}  // namespace switchyard::testing
