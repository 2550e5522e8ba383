// `switchyard gateway` end to end: the real binary in front of emulated engines, all on
// OS-chosen loopback ports, driven over HTTP.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/perf_profiles.h"
#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

class GatewayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    a100_ = startEngine("A100").release();
    l20_ = startEngine("L20").release();
  }
  static void TearDownTestSuite() {
    delete a100_;
    delete l20_;
  }

  // Starts a gateway with the two engines as `llama2-7b` plus `extra_yaml` models.
  // `replicas` replaces the default pair (the engines serve only `llama2-7b`).
  void startGateway(const std::string& extra_models = "", const std::string& top = "",
                    const std::string& replicas = "") {
    config_text_ = configText(extra_models, top, replicas);
    config_ = std::make_unique<TempFile>(config_text_, ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(0), 0);
    ASSERT_NE(gateway_->port(1), 0);
  }
  std::string configText(const std::string& extra_models, const std::string& top,
                         const std::string& replicas) {
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
           "reload_poll_interval_ms: 100\n" + top +
           "models:\n  - name: llama2-7b\n    routing_strategy: round-robin\n    replicas:\n" +
           (replicas.empty()
                ? replicaLine(a100_->port(), "A100") + replicaLine(l20_->port(), "L20")
                : replicas) +
           extra_models;
  }
  uint16_t port() const { return gateway_->port(0); }
  uint16_t adminPort() const { return gateway_->port(1); }
  void rewriteConfig(const std::string& text) {
    std::ofstream out(config_->path(), std::ios::trunc);
    out << text;
  }

  HttpResult post(std::string_view path, const std::string& body, Headers headers = kJson) {
    return httpRequest(port(), "POST", path, body, std::move(headers));
  }
  std::string fleetJson() { return httpRequest(adminPort(), "GET", "/debug/fleet").body; }
  // output_tokens_total summed over every replica of every model.
  int64_t fleetCounter(std::string_view counter) {
    simdjson::dom::parser parser;
    simdjson::dom::element root = parser.parse(fleetJson());
    int64_t total = 0;
    for (auto model : root["models"].get_array()) {
      for (auto replica : model["replicas"].get_array()) total += replica[counter].get_int64();
    }
    return total;
  }

  static Process* a100_;
  static Process* l20_;
  std::string config_text_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

Process* GatewayTest::a100_ = nullptr;
Process* GatewayTest::l20_ = nullptr;

void expectOpenAiError(const HttpResult& result, int status, std::string_view code = {}) {
  EXPECT_EQ(result.status, status) << result.body;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(result.body).get(root), simdjson::SUCCESS) << result.body;
  std::string_view message;
  EXPECT_EQ(root["error"]["message"].get(message), simdjson::SUCCESS) << result.body;
  EXPECT_FALSE(message.empty());
  std::string_view type;
  EXPECT_EQ(root["error"]["type"].get(type), simdjson::SUCCESS) << result.body;
  if (!code.empty()) {
    std::string_view actual;
    EXPECT_EQ(root["error"]["code"].get(actual), simdjson::SUCCESS) << result.body;
    EXPECT_EQ(actual, code);
  }
  EXPECT_EQ(result.header("content-type"), "application/json");
}

TEST_F(GatewayTest, NonStreamingChatIsRelayedWithRoutingHeaders) {
  startGateway();
  const HttpResult r = post("/v1/chat/completions", chatBody("llama2-7b", 5));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"completion_tokens\":5"), std::string::npos) << r.body;
  EXPECT_EQ(r.header("x-request-id").size(), 16u);
  EXPECT_EQ(r.header("routing-strategy"), "round-robin");
  const std::string pod = r.header("target-pod");
  EXPECT_TRUE(pod == "127.0.0.1:" + std::to_string(a100_->port()) ||
              pod == "127.0.0.1:" + std::to_string(l20_->port()))
      << pod;
}

// A write to a peer that has gone (a killed Redis, through hiredis's plain send()) must come
// back as EPIPE: a process that kept SIGPIPE's default action would die of it mid-load.
bool ignoresSigpipe(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigIgn:", 0) != 0) continue;
    const unsigned long long ignored = std::stoull(line.substr(7), nullptr, 16);
    return (ignored >> (SIGPIPE - 1)) & 1u;
  }
  return false;
}

TEST_F(GatewayTest, GatewayAndEngineOutliveAWriteToAPeerThatHasGone) {
  startGateway();
  EXPECT_TRUE(ignoresSigpipe(gateway_->child().pid()));
  EXPECT_TRUE(ignoresSigpipe(a100_->child().pid()));
}

TEST_F(GatewayTest, ClientRequestIdIsKept) {
  startGateway();
  Headers headers = kJson;
  headers.emplace_back("x-request-id", "my-request-42");
  const HttpResult r = post("/v1/completions",
                            R"({"model":"llama2-7b","prompt":"hello","max_tokens":2})", headers);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-request-id"), "my-request-42");
}

TEST_F(GatewayTest, StreamIsRelayedChunkByChunkAsTheEngineProducesIt) {
  startGateway();
  // 24 tokens at the emulated L20/A100 rates take several hundred milliseconds.
  const StreamResult r = streamRequest(port(), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 24, true), kJson, 20s);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type").substr(0, 17), "text/event-stream");
  ASSERT_GE(r.pieces.size(), 10u);
  // Chunks arrive spread over the generation, not all at the end.
  const auto spread = r.pieces.back().at - r.pieces.front().at;
  EXPECT_GT(spread, 150ms);
  EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos);
}

TEST_F(GatewayTest, EmbeddingsAndModels) {
  startGateway("  - name: other\n    replicas: []\n");
  const HttpResult e =
      post("/v1/embeddings", R"({"model":"llama2-7b","input":"the quick brown fox"})");
  EXPECT_EQ(e.status, 200) << e.body;
  EXPECT_NE(e.body.find("embedding"), std::string::npos);

  const HttpResult m = httpRequest(port(), "GET", "/v1/models");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("\"id\":\"llama2-7b\""), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("\"id\":\"other\""), std::string::npos) << m.body;
}

TEST_F(GatewayTest, BadRequestsGetOpenAiErrors) {
  startGateway("  - name: empty\n    replicas: []\n",
               "limits: { max_body_bytes: 4096 }\n");
  expectOpenAiError(post("/v1/chat/completions", "{\"model\": \"llama2-7b\", "), 400);
  expectOpenAiError(post("/v1/chat/completions", "[1,2,3]"), 400);
  expectOpenAiError(post("/v1/chat/completions", R"({"messages":[]})"), 400);
  expectOpenAiError(post("/v1/chat/completions", chatBody("gpt-17", 1)), 404, "model_not_found");
  Headers strategy = kJson;
  strategy.emplace_back("routing-strategy", "telepathy");
  expectOpenAiError(post("/v1/chat/completions", chatBody("llama2-7b", 1), strategy), 400,
                    "invalid_routing_strategy");
  expectOpenAiError(post("/v1/chat/completions", chatBody("empty", 1)), 503, "no_replica");
  expectOpenAiError(httpRequest(port(), "GET", "/v1/nothing"), 404);
  expectOpenAiError(httpRequest(port(), "GET", "/v1/chat/completions"), 405);
  const std::string big = "{\"model\":\"llama2-7b\",\"prompt\":\"" + std::string(8192, 'x') + "\"}";
  expectOpenAiError(post("/v1/completions", big), 413, "request_too_large");
  // The gateway still serves after all of that.
  EXPECT_EQ(post("/v1/chat/completions", chatBody("llama2-7b", 1)).status, 200);
}

TEST_F(GatewayTest, UnreachableReplicaFailsOverAndAllDeadIs502) {
  const uint16_t dead = deadPort();
  startGateway("  - name: all-dead\n    replicas:\n" + replicaLine(dead, "V100"), "",
               replicaLine(dead, "V100") + replicaLine(a100_->port(), "A100"));
  for (int i = 0; i < 6; ++i) {
    const HttpResult r = post("/v1/chat/completions", chatBody("llama2-7b", 1));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), "127.0.0.1:" + std::to_string(a100_->port()));
  }
  expectOpenAiError(post("/v1/chat/completions", chatBody("all-dead", 1)), 502,
                    "upstream_unavailable");
}

TEST_F(GatewayTest, OutputTokensAreCountedForEveryKindOfResponse) {
  startGateway();
  EXPECT_EQ(post("/v1/chat/completions", chatBody("llama2-7b", 7)).status, 200);
  // A stream without usage: counted from its content events, the client sees it unchanged.
  const StreamResult s = streamRequest(port(), "POST", "/v1/chat/completions",
                                       chatBody("llama2-7b", 5, true), kJson, 20s);
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(s.body.find("\"usage\""), std::string::npos);
  // A stream with usage.
  const StreamResult u = streamRequest(
      port(), "POST", "/v1/completions",
      R"({"model":"llama2-7b","prompt":"x","max_tokens":3,"stream":true,)"
      R"("stream_options":{"include_usage":true}})",
      kJson, 20s);
  EXPECT_EQ(u.status, 200);
  // The gateway completes its accounting just after relaying the last chunk: wait for it.
  for (auto deadline = deadlineIn(5s);
       fleetCounter("running") != 0 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(fleetCounter("output_tokens_total"), 7 + 5 + 3) << fleetJson();
  EXPECT_EQ(fleetCounter("requests_total"), 3);
  EXPECT_EQ(fleetCounter("running"), 0);
}

TEST_F(GatewayTest, LeastRequestSpreadsConcurrentStreams) {
  startGateway();
  constexpr int kStreams = 8;
  std::vector<std::string> pods(kStreams);
  std::vector<std::thread> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.emplace_back([&, i] {
      Headers headers = kJson;
      headers.emplace_back("routing-strategy", "least-request");
      const StreamResult r = streamRequest(port(), "POST", "/v1/chat/completions",
                                           chatBody("llama2-7b", 30, true), headers, 30s);
      if (r.status == 200) pods[i] = r.header("target-pod");
    });
    std::this_thread::sleep_for(10ms);  // staggered arrivals, all overlapping
  }
  for (auto& c : clients) c.join();
  std::map<std::string, int> per_pod;
  for (const auto& pod : pods) ++per_pod[pod];
  ASSERT_EQ(per_pod.count(""), 0u) << "a stream failed";
  ASSERT_EQ(per_pod.size(), 2u);
  for (const auto& [pod, count] : per_pod) EXPECT_EQ(count, kStreams / 2) << pod;
}

TEST_F(GatewayTest, EngineTelemetryIsScraped) {
  startGateway();
  EXPECT_TRUE(waitUntil(
      [&] {
        const std::string fleet = fleetJson();
        return fleet.find("\"kv_usage\":null") == std::string::npos &&
               fleet.find("\"fresh\":false") == std::string::npos;
      },
      5s))
      << fleetJson();
  // The KV cache's size, from the engine's vllm:cache_config_info: the emulated L20's own.
  const int64_t l20_tokens =
      engine::makePerfConfig(engine::builtinProfiles(), "L20", "llama2-7b").kvCapacityTokens();
  EXPECT_NE(fleetJson().find("\"kv_capacity_tokens\":" + std::to_string(l20_tokens)),
            std::string::npos)
      << fleetJson();
}

TEST_F(GatewayTest, ReloadAppliesAGoodFileAndRejectsABadOne) {
  startGateway();
  const std::string l20 = "127.0.0.1:" + std::to_string(l20_->port());
  // The new file keeps only the L20 replica and adds a model.
  rewriteConfig(configText("  - name: added\n    replicas: []\n", "",
                           replicaLine(l20_->port(), "L20")));
  EXPECT_TRUE(waitUntil(
      [&] { return httpRequest(port(), "GET", "/v1/models").body.find("added") !=
                   std::string::npos; },
      5s));
  for (int i = 0; i < 4; ++i) {
    const HttpResult r = post("/v1/chat/completions", chatBody("llama2-7b", 1));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("target-pod"), l20);
  }

  rewriteConfig("models: [ this is not valid");
  gateway_->child().sendSignal(SIGHUP);
  std::this_thread::sleep_for(300ms);  // give a (wrong) reload the chance to happen
  // The old fleet stays in service.
  EXPECT_NE(httpRequest(port(), "GET", "/v1/models").body.find("added"), std::string::npos);
  const HttpResult r = post("/v1/chat/completions", chatBody("llama2-7b", 1));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("target-pod"), l20);
}

TEST_F(GatewayTest, SigtermLetsStreamsInFlightFinish) {
  startGateway();
  StreamResult result;
  std::atomic<bool> first_piece{false};
  std::thread client([&] {
    HttpClient c(port(), 30s);
    result = c.stream("POST", "/v1/chat/completions", chatBody("llama2-7b", 30, true), kJson,
                      [&](const StreamPiece&) {
                        first_piece = true;
                        return true;
                      });
  });
  ASSERT_TRUE(waitUntil([&] { return first_piece.load(); }, 10s));
  gateway_->child().sendSignal(SIGTERM);
  client.join();
  EXPECT_EQ(result.status, 200);
  EXPECT_NE(result.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(gateway_->child().waitExit(deadlineIn(10s)), std::optional<int>(0));
  gateway_->markStopped();
  EXPECT_FALSE(httpRequest(port(), "GET", "/v1/models", {}, {}, 2s).ok());
}

TEST_F(GatewayTest, StalledClientIsDroppedWithoutBlockingOthers) {
  startGateway("", "timeouts: { client_header_ms: 300 }\n");
  // A connection that never sends a request is closed after the header timeout...
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const char partial[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n";
  ASSERT_GT(::send(fd, partial, sizeof partial - 1, 0), 0);
  // ...while other clients are served.
  EXPECT_EQ(post("/v1/chat/completions", chatBody("llama2-7b", 1)).status, 200);
  char byte;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // orderly close by the gateway
  EXPECT_LT(std::chrono::steady_clock::now() - started, 4s);
  ::close(fd);
}

}  // namespace
}  // namespace switchyard::testing
