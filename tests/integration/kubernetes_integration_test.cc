// The gateway process with Kubernetes discovery against the fake API server and emulated
// engines: Pods become replicas, NotReady excludes at once, a deleted Pod drains (its stream
// finishes, new requests go elsewhere, its session re-pins), operators drain through
// /admin/drain and `switchyard drain-wait`, the deletion-cost annotation marks the cheapest
// replica, and a broken API server leaves the fleet in place, marked stale.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gateway_harness.h"
#include "support/fake_kube/fake_api_server.h"

namespace switchyard::testing {
namespace {

constexpr std::string_view kModel = "llama2-7b";

FakePod podFor(const std::string& name, uint16_t port) {
  FakePod p;
  p.name = name;
  p.port = port;
  p.labels = {{"model.aibrix.ai/name", std::string(kModel)},
              {"pod-template-hash", "abc"},
              {"gpu", "A100"},
              {"team", "inference"}};
  p.owner_replica_set = "llama-a100-abc";
  return p;
}

class KubernetesGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) engines_.push_back(startEngine("A100"));
    kubeconfig_ = std::make_unique<TempFile>(server_.kubeconfig(), ".yaml");
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
        "routing: { default_strategy: least-request }\n"
        "discovery:\n  kubernetes:\n    kubeconfig: " + kubeconfig_->path() + "\n"
        "    namespaces: [default]\n    stale_after_ms: 500\n"
        "    backoff_min_ms: 20\n    backoff_max_ms: 100\n"
        "    scale_down: { interval_ms: 200, lease_ms: 1000, hold_ms: 0 }\n"
        "models: []\n",
        ".yaml");
    server_.upsertDeployment({"default", "llama-a100", {{"model.aibrix.ai/name",
                                                         std::string(kModel)}}, 2, 2});
    server_.upsertPod(podFor("a", engines_[0]->port()));
    server_.upsertPod(podFor("b", engines_[1]->port()));
    gateway_ = std::make_unique<Process>(std::vector<std::string>{"gateway", "--config",
                                                                  config_->path()});
    ASSERT_NE(admin(), 0);
    ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "active" &&
                                       lifecycle("b") == "active"; }, 10s));
  }

  uint16_t client() { return gateway_->port(0); }
  uint16_t admin() { return gateway_->port(1); }
  std::string address(int i) { return "127.0.0.1:" + std::to_string(engines_[i]->port()); }
  std::string lifecycle(const std::string& pod) {
    const std::string replica = pod == "a" ? address(0) : address(1);
    return fleetField(admin(), replica, "lifecycle");
  }
  HttpResult chat(int max_tokens = 8, Headers extra = {}) {
    Headers headers = kJson;
    for (auto& h : extra) headers.push_back(h);
    return httpRequest(client(), "POST", "/v1/chat/completions", chatBody(kModel, max_tokens),
                       headers, 20s);
  }

  FakeApiServer server_;
  std::vector<std::unique_ptr<Process>> engines_;
  std::unique_ptr<TempFile> kubeconfig_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

TEST_F(KubernetesGatewayTest, PodsBecomeReplicasWithTheirLabels) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    const HttpResult r = chat();
    ASSERT_EQ(r.status, 200) << r.body;
    seen.insert(r.header("target-pod"));
  }
  EXPECT_EQ(seen, (std::set<std::string>{address(0), address(1)}));
  EXPECT_EQ(fleetField(admin(), address(0), "labels").find("\"team\":\"inference\"") !=
                std::string::npos,
            true);
  EXPECT_NE(fleetField(admin(), address(0), "pod").find("\"deployment\":\"llama-a100\""),
            std::string::npos);
  const HttpResult fleet = httpRequest(admin(), "GET", "/debug/fleet");
  EXPECT_NE(fleet.body.find(R"("discovery":{"source":"kubernetes","synced":true,"stale":false)"),
            std::string::npos)
      << fleet.body.substr(0, 400);
}

TEST_F(KubernetesGatewayTest, NotReadyIsExcludedAtOnceAndComesBack) {
  server_.setPodReady("default", "a", false);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "not_ready"; }, 5s));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(chat().header("target-pod"), address(1));
  server_.setPodReady("default", "a", true);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "active"; }, 5s));
  EXPECT_EQ(fleetField(admin(), address(0), "slow_start").find("\"warming\":true") !=
                std::string::npos,
            true);
}

TEST_F(KubernetesGatewayTest, ADeletedPodDrainsItsStreamFinishesAndItsSessionRepins) {
  // Pin a session to a and start a long stream on it.
  server_.setPodReady("default", "b", false);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "not_ready"; }, 5s));
  const Headers session = {{"x-session-id", "s-1"}};
  ASSERT_EQ(chat(4, session).header("target-pod"), address(0));
  std::atomic<bool> stream_done{false};
  StreamResult stream;
  std::thread streamer([&] {
    Headers headers = kJson;
    headers.push_back({"x-session-id", "s-1"});
    stream = streamRequest(client(), "POST", "/v1/chat/completions",
                           chatBody(kModel, 300, /*stream=*/true), headers, 30s);
    stream_done = true;
  });
  ASSERT_TRUE(waitUntil([&] { return fleetField(admin(), address(0), "running") == "1"; }, 5s));
  server_.setPodReady("default", "b", true);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "active"; }, 5s));
  server_.deletePod("default", "a", 30);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "draining"; }, 5s));
  EXPECT_NE(fleetField(admin(), address(0), "lifecycle_reasons").find("terminating"),
            std::string::npos);
  // New requests, the session's included, go elsewhere while a's stream runs on.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(chat(4).header("target-pod"), address(1));
  EXPECT_EQ(chat(4, session).header("target-pod"), address(1));
  EXPECT_EQ(chat(4, session).header("target-pod"), address(1));
  EXPECT_FALSE(stream_done.load());
  streamer.join();
  ASSERT_EQ(stream.status, 200);
  EXPECT_NE(stream.body.find("data: [DONE]"), std::string::npos) << "the stream was cut";
  EXPECT_EQ(stream.header("target-pod"), address(0));
  const HttpResult decisions = httpRequest(admin(), "GET", "/debug/decisions?limit=1");
  EXPECT_NE(decisions.body.find("\"excluded\":\"draining\""), std::string::npos)
      << decisions.body.substr(0, 600);
  server_.removePod("default", "a");
  ASSERT_TRUE(waitUntil([&] { return fleetField(admin(), address(0), "name").empty(); }, 5s));
}

TEST_F(KubernetesGatewayTest, AsyncJobsOnADrainingReplicaStayReachableUntilItIsGone) {
  simdjson::dom::parser parser;
  std::vector<std::pair<std::string, std::string>> jobs;  // id, replica
  for (int i = 0; i < 4; ++i) {
    const HttpResult created = httpRequest(
        client(), "POST", "/v1/responses",
        R"({"model":"llama2-7b","input":"hello","background":true,"max_output_tokens":4})",
        kJson);
    ASSERT_EQ(created.status, 200) << created.body;
    jobs.emplace_back(std::string(parser.parse(created.body)["id"].get_string().value()),
                      created.header("target-pod"));
  }
  server_.deletePod("default", "a", 30);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "draining"; }, 5s));
  for (const auto& [id, replica] : jobs) {
    const HttpResult followed = httpRequest(client(), "GET", "/v1/responses/" + id);
    ASSERT_EQ(followed.status, 200) << followed.body;
    EXPECT_EQ(followed.header("target-pod"), replica);
  }
}

TEST_F(KubernetesGatewayTest, TheDrainLabelDrains) {
  server_.setPodLabel("default", "b", "aibrix.ai/draining", "true");
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "draining"; }, 5s));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(chat().header("target-pod"), address(0));
  server_.setPodLabel("default", "b", "aibrix.ai/draining", "");
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "active"; }, 5s));
}

// A request pinned to a GPU type whose replicas are all draining: 503 no_replica, as when the
// whole model drains, not 502 (nothing failed to answer).
TEST_F(KubernetesGatewayTest, APinnedGpuTypeAllDrainingAnswers503) {
  server_.setPodLabel("default", "b", "gpu", "L20");
  ASSERT_TRUE(waitUntil([&] {
    return fleetField(admin(), address(1), "labels").find("\"gpu\":\"L20\"") !=
           std::string::npos;
  }, 5s));
  EXPECT_EQ(chat(8, {{"x-switchyard-gpu", "L20"}}).header("target-pod"), address(1));
  server_.setPodLabel("default", "b", "aibrix.ai/draining", "true");
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "draining"; }, 5s));
  const HttpResult pinned = chat(8, {{"x-switchyard-gpu", "L20"}});
  EXPECT_EQ(pinned.status, 503) << pinned.body;
  EXPECT_NE(pinned.body.find("no_replica"), std::string::npos) << pinned.body;
  EXPECT_EQ(chat().header("target-pod"), address(0));  // unpinned requests still go to a
}

TEST_F(KubernetesGatewayTest, DrainWaitHoldsUntilTheReplicaIsEmpty) {
  server_.setPodReady("default", "b", false);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "not_ready"; }, 5s));
  std::atomic<bool> stream_done{false};
  std::chrono::steady_clock::time_point stream_end;
  StreamResult stream;
  std::thread streamer([&] {
    stream = streamRequest(client(), "POST", "/v1/chat/completions",
                           chatBody(kModel, 250, /*stream=*/true), kJson, 30s);
    stream_end = std::chrono::steady_clock::now();
    stream_done = true;
  });
  ASSERT_TRUE(waitUntil([&] { return fleetField(admin(), address(0), "running") == "1"; }, 5s));
  server_.setPodReady("default", "b", true);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "active"; }, 5s));
  auto waiter = spawnSwitchyard({"drain-wait", "--gateway",
                                 "http://127.0.0.1:" + std::to_string(admin()), "--pod", "a",
                                 "--timeout", "20s", "--interval", "100ms"});
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "draining"; }, 5s));
  EXPECT_NE(fleetField(admin(), address(0), "lifecycle_reasons").find("drain_requested"),
            std::string::npos);
  const HttpResult status = httpRequest(admin(), "GET", "/admin/drain/a");
  EXPECT_EQ(status.status, 200);
  EXPECT_NE(status.body.find("\"in_flight\":1"), std::string::npos) << status.body;
  EXPECT_NE(status.body.find("\"empty\":false"), std::string::npos) << status.body;
  const auto exit_code = waiter->waitExit(deadlineIn(25s));
  const auto exited = std::chrono::steady_clock::now();
  ASSERT_EQ(exit_code, std::optional<int>(0));
  streamer.join();
  EXPECT_TRUE(stream_done.load());
  EXPECT_NE(stream.body.find("data: [DONE]"), std::string::npos);
  EXPECT_GE(exited, stream_end);  // it waited for the stream
  const HttpResult after = httpRequest(admin(), "GET", "/admin/drain/a");
  EXPECT_NE(after.body.find("\"empty\":true"), std::string::npos) << after.body;
}

TEST_F(KubernetesGatewayTest, DrainEndpointsAnswerErrorsPlainly) {
  EXPECT_EQ(httpRequest(admin(), "GET", "/admin/drain/nobody").status, 404);
  EXPECT_EQ(httpRequest(admin(), "POST", "/admin/drain", "{\"replica\":5}", kJson).status, 400);
  EXPECT_EQ(httpRequest(admin(), "POST", "/admin/drain", "not json", kJson).status, 400);
  EXPECT_EQ(httpRequest(admin(), "POST", "/admin/drain", "{}", kJson).status, 400);
  EXPECT_EQ(httpRequest(admin(), "DELETE", "/admin/drain").status, 405);
  const HttpResult drained =
      httpRequest(admin(), "POST", "/admin/drain", "{\"replica\":\"" + address(1) + "\"}", kJson);
  EXPECT_EQ(drained.status, 200) << drained.body;
  const HttpResult list = httpRequest(admin(), "GET", "/admin/drain");
  EXPECT_NE(list.body.find(address(1)), std::string::npos);
  const HttpResult undone = httpRequest(admin(), "POST", "/admin/drain",
                                        "{\"pod\":\"b\",\"drain\":false}", kJson);
  EXPECT_EQ(undone.status, 200);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("b") == "active"; }, 5s));
  // drain-wait on a Pod no gateway knows: nothing to wait for.
  auto waiter = spawnSwitchyard({"drain-wait", "--gateway",
                                 "http://127.0.0.1:" + std::to_string(admin()), "--pod", "zzz",
                                 "--timeout", "5s"});
  EXPECT_EQ(waiter->waitExit(deadlineIn(10s)), std::optional<int>(0));
  auto bad = spawnSwitchyard({"drain-wait", "--gateway", "ftp://x", "--pod", "a"});
  EXPECT_EQ(bad->waitExit(deadlineIn(10s)), std::optional<int>(2));
}

TEST_F(KubernetesGatewayTest, ABrokenApiServerKeepsTheFleetAndMarksItStale) {
  server_.setDown(true);
  ASSERT_TRUE(waitUntil([&] {
    return httpRequest(admin(), "GET", "/debug/fleet").body.find("\"stale\":true") !=
           std::string::npos;
  }, 5s));
  const HttpResult metrics = httpRequest(admin(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("switchyard_discovery_stale{source=\"kubernetes\"} 1"),
            std::string::npos);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(chat().status, 200);
  EXPECT_EQ(lifecycle("a"), "active");
  EXPECT_EQ(lifecycle("b"), "active");
  server_.setDown(false);
  ASSERT_TRUE(waitUntil([&] {
    return httpRequest(admin(), "GET", "/debug/fleet").body.find("\"stale\":false") !=
           std::string::npos;
  }, 5s));
}

TEST_F(KubernetesGatewayTest, TheCheapestReplicaCarriesTheDeletionCost) {
  // Keep b busy: a is cheaper to lose.
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop) {
      streamRequest(client(), "POST", "/v1/chat/completions",
                    chatBody(kModel, 400, /*stream=*/true), kJson, 30s);
    }
  });
  server_.setPodReady("default", "a", false);
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "not_ready"; }, 5s));
  ASSERT_TRUE(waitUntil([&] { return fleetField(admin(), address(1), "running") == "1"; }, 5s));
  server_.setPodReady("default", "a", true);
  auto annotation = [&](const std::string& name) {
    FakePod p;
    if (!server_.findPod("default", name, p)) return std::string();
    const auto it = p.annotations.find("controller.kubernetes.io/pod-deletion-cost");
    return it == p.annotations.end() ? std::string() : it->second;
  };
  ASSERT_TRUE(waitUntil([&] { return annotation("a") == "-100"; }, 8s));
  EXPECT_EQ(annotation("b"), "");
  stop = true;
  busy.join();
  // The Deployment shrinks: the ReplicaSet controller deletes the marked Pod.
  const auto victims = server_.scaleDeployment("default", "llama-a100", 1, 30, true);
  ASSERT_EQ(victims, std::vector<std::string>{"a"});
  ASSERT_TRUE(waitUntil([&] { return lifecycle("a") == "draining"; }, 5s));
  // Few patches: the choice changed once.
  EXPECT_LE(server_.patches().size(), 3u);
  const HttpResult metrics = httpRequest(admin(), "GET", "/metrics");
  EXPECT_NE(metrics.body.find("switchyard_scale_down_deciding 1"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::testing
