// SLO routing end to end: a gateway whose model has an SLO and emulated profiles for its two GPU
// types routes by predicted latency, explains each decision (predictions per candidate, the
// objective), pins a GPU type on request (x-switchyard-gpu), and refuses a bad `slo:` at load.
// Emulated A10 and L20 engines on loopback.
#include <gtest/gtest.h>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

// A chat request whose prompt is about `prompt_tokens` tokens (4 bytes each).
std::string longChat(int prompt_tokens, int max_tokens) {
  std::string words;
  words.reserve(static_cast<size_t>(prompt_tokens) * 4);
  for (int i = 0; i < prompt_tokens; ++i) words += "tok ";
  return "{\"model\":\"llama2-7b\",\"messages\":[{\"role\":\"user\",\"content\":\"" + words +
         "\"}],\"max_tokens\":" + std::to_string(max_tokens) + "}";
}

class SloRoutingGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a10_ = startEngine("A10");
    l20_ = startEngine("L20");
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
        "models:\n  - name: llama2-7b\n    routing_strategy: slo\n"
        "    slo: { objective: tpot=50ms, percentile: 99,"
        " profiles: { A10: emulated, L20: emulated }, costs: { A10: 1.006, L20: 1.861 } }\n"
        "    replicas:\n" +
            replicaLine(a10_->port(), "A10") + replicaLine(l20_->port(), "L20"),
        ".yaml");
    gateway_ =
        std::make_unique<Process>(std::vector<std::string>{"gateway", "--config", config_->path()},
                                  60s);  // emulated profiles first: seconds on a busy machine
    ASSERT_NE(gateway_->port(1), 0);
  }
  HttpResult chat(const std::string& body, Headers headers = kJson) {
    return httpRequest(gateway_->port(0), "POST", "/v1/chat/completions", body, std::move(headers),
                       60s);
  }
  std::string address(const std::unique_ptr<Process>& engine) {
    return "127.0.0.1:" + std::to_string(engine->port());
  }

  std::unique_ptr<Process> a10_, l20_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

TEST_F(SloRoutingGatewayTest, DecisionsCarryPredictionsAndTheObjective) {
  const HttpResult r = chat(chatBody("llama2-7b", 16));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string decisions = httpRequest(gateway_->port(1), "GET", "/debug/decisions").body;
  EXPECT_NE(decisions.find("\"predicted_tpot_ms\""), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("\"predicted_ttft_ms\""), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("\"tpot_ms\":50"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("\"percentile\":99"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("\"fallback\":\"none\""), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("\"cost_per_request\":"), std::string::npos) << decisions;
  // The L20 alone serves some shapes in time (e.g. 4k-token prompts with 128 outputs): it is kept
  // for those, and /debug/fleet says so.
  const std::string fleet = httpRequest(gateway_->port(1), "GET", "/debug/fleet").body;
  EXPECT_NE(fleet.find("\"slo_reserved_gpus\":[\"L20\"]"), std::string::npos) << fleet;
}

TEST_F(SloRoutingGatewayTest, ALongPromptGoesWhereItsTokensAreFastEnough) {
  // A 4k-token prompt: the A10's chunked prefill stalls its decode; the L20 meets the SLO.
  for (int i = 0; i < 3; ++i) {
    const HttpResult r = chat(longChat(4000, 8));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), address(l20_));
  }
}

TEST_F(SloRoutingGatewayTest, AStreamedPromptIsAPendingPrefillUntilItsFirstToken) {
  // A 4k-token prompt takes the A10 about 0.75 s to prefill: meanwhile the gateway counts its
  // tokens as pending there (what SLO routing and deadline admission add to a newcomer's TTFT).
  std::string body = longChat(4000, 4);
  body.insert(1, "\"stream\":true,");
  Headers pinned = kJson;
  pinned.push_back({"x-switchyard-gpu", "A10"});
  const std::string a10 = address(a10_);
  auto pending = [&] {
    const std::string value = fleetField(gateway_->port(1), a10, "prefill_pending_tokens");
    return value.empty() ? -1L : std::stol(value);
  };
  EXPECT_EQ(pending(), 0);
  StreamResult streamed;
  std::thread client([&] {
    streamed = streamRequest(gateway_->port(0), "POST", "/v1/chat/completions", body, pinned, 60s);
  });
  EXPECT_TRUE(waitUntil([&] { return pending() >= 3900; }, 30s));
  client.join();
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(pending(), 0);
  // A client that leaves before the first token takes its prompt back too. Other words: the
  // engine's prefix cache would answer the same prompt at once.
  std::string other = body;
  for (size_t at = other.find("tok "); at != std::string::npos; at = other.find("tok ", at)) {
    other.replace(at, 4, "tak ");
  }
  {
    HttpClient leaving(gateway_->port(0), 300ms);  // gives up long before the prefill ends
    const StreamResult r = leaving.stream("POST", "/v1/chat/completions", other, pinned);
    EXPECT_FALSE(r.ok());
  }
  EXPECT_TRUE(waitUntil([&] { return pending() == 0; }, 30s)) << pending();
}

TEST_F(SloRoutingGatewayTest, AGpuTypeCanBePinnedAndAnUnknownOneIsRefused) {
  for (int i = 0; i < 3; ++i) {
    Headers pinned = kJson;
    pinned.push_back({"x-switchyard-gpu", "A10"});
    const HttpResult r = chat(chatBody("llama2-7b", 4), pinned);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("target-pod"), address(a10_));
  }
  Headers unknown = kJson;
  unknown.push_back({"x-switchyard-gpu", "H100"});
  const HttpResult refused = chat(chatBody("llama2-7b", 4), unknown);
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("gpu_not_served"), std::string::npos) << refused.body;
}

// Whether a gateway refuses to start with this `slo:` block.
bool refusedAtLoad(const std::string& slo) {
  TempFile config(
      "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
      "models:\n  - name: llama2-7b\n    routing_strategy: slo\n"
      "    slo: " + slo + "\n"
      "    replicas:\n      - address: 127.0.0.1:9\n        labels: { gpu: A10 }\n",
      ".yaml");
  auto process = spawnSwitchyard({"gateway", "--config", config.path()});
  EXPECT_TRUE(process->waitForListening(deadlineIn(kStartTimeout)).empty()) << slo;
  const std::optional<int> status = process->waitExit(deadlineIn(60s));
  return status.has_value() && *status != 0;
}

TEST(SloRoutingConfigTest, AProfileFileThatDoesNotExistIsALoadError) {
  EXPECT_TRUE(refusedAtLoad("{ objective: tpot=50ms, profiles: { A10: /nonexistent/a10.json } }"));
}

TEST(SloRoutingConfigTest, APriceForAnUnprofiledTypeOrNotAboveZeroIsALoadError) {
  EXPECT_TRUE(refusedAtLoad(
      "{ objective: tpot=50ms, profiles: { A10: emulated }, costs: { H100: 3 } }"));
  EXPECT_TRUE(refusedAtLoad(
      "{ objective: tpot=50ms, profiles: { A10: emulated }, costs: { A10: 0 } }"));
  EXPECT_TRUE(refusedAtLoad(
      "{ objective: tpot=50ms, profiles: { A10: emulated }, costs: [1] }"));
}

TEST(SloRoutingConfigTest, TheDemoRefusesMalformedGpuPricesBeforeStartingAFleet) {
  for (const char* costs : {"H100:2", "A10:abc", "A10:0", "A10"}) {
    auto process = spawnSwitchyard({"demo", "--gpus", "A10,L20", "--strategies", "slo",
                                    "--gpu-costs", costs, "--seconds", "1"});
    const std::optional<int> status = process->waitExit(deadlineIn(30s));
    ASSERT_TRUE(status.has_value()) << costs;
    EXPECT_EQ(*status, 2) << costs;
  }
}

TEST(SloRoutingConfigTest, TheDemoRefusesMalformedProfileFilesBeforeStartingAFleet) {
  TempFile not_json("{\"gpu\": ", ".json");
  for (const std::string& profiles :
       {std::string("A10"), std::string("H100:") + not_json.path(),
        std::string("A10:/nonexistent/a10.json"), "A10:" + not_json.path()}) {
    auto process = spawnSwitchyard({"demo", "--gpus", "A10,L20", "--strategies", "slo",
                                    "--slo-profiles", profiles, "--seconds", "1"});
    const std::optional<int> status = process->waitExit(deadlineIn(30s));
    ASSERT_TRUE(status.has_value()) << profiles;
    EXPECT_EQ(*status, 2) << profiles;
  }
}

// The demo's slo strategy runs on the profile file it is given (the optimizer's benchmark runs
// its answer on the profiles it was computed from): a generated profile serves every request.
TEST(SloRoutingConfigTest, TheDemoRoutesByTheProfileFileItIsGiven) {
  TempFile profile("", ".json");
  auto generate = spawnSwitchyard({"gen-profile", "--emulated", "A10", "--model", "llama2-7b",
                                   "--deployment", "llama2-7b-A10", "--gpu", "A10", "--slo",
                                   "tpot=50ms", "--prompts", "64,512", "--outputs", "16,64", "-o",
                                   profile.path()});
  ASSERT_EQ(generate->waitExit(deadlineIn(60s)), std::optional<int>(0));
  auto demo = spawnSwitchyard({"demo", "--gpus", "A10,A10", "--strategies", "slo",
                               "--slo-profiles", "A10:" + profile.path(), "--rate", "2",
                               "--seconds", "2", "--warmup", "1", "--capacity-seconds", "1"});
  EXPECT_EQ(demo->waitExit(deadlineIn(120s)), std::optional<int>(0));
}

}  // namespace
}  // namespace switchyard::testing
