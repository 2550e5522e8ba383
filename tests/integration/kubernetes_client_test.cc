// The production Kubernetes client (ApiClient, Reflector, KubernetesDiscovery) against the fake
// API server: real HTTPS on loopback, the real list/watch protocol, injected events and faults.
// The client runs on an io_context driven by the test thread; waits are bounded polls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>

#include "fleet/discovery/kubernetes/api_client.h"
#include "fleet/discovery/kubernetes/kubernetes_discovery.h"
#include "fleet/discovery/kubernetes/reflector.h"
#include "support/fake_kube/fake_api_server.h"

namespace switchyard::fleet::kubernetes {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiServer;
using testing::FakePod;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/switchyard-kubeclient-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file + ".tmp") << text;
    std::filesystem::rename(file + ".tmp", file);  // atomic, as a projected token is swapped
    return file;
  }

 private:
  std::string path_;
};

FakePod pod(const std::string& name, int port = 8000, bool ready = true) {
  FakePod p;
  p.name = name;
  p.port = port;
  p.ready = ready;
  p.labels = {{"model.aibrix.ai/name", "llama"}, {"pod-template-hash", "abc"}, {"gpu", "A100"}};
  p.owner_replica_set = "llama-a100-abc";
  return p;
}

class KubernetesClientTest : public ::testing::Test {
 protected:
  explicit KubernetesClientTest(FakeApiServer::Options options = {}) : server_(options) {}

  KubernetesSettings settings() {
    KubernetesSettings s;
    s.enabled = true;
    s.kubeconfig = dir_.write("kubeconfig", server_.kubeconfig());
    s.namespaces = {"default"};
    s.request_timeout = 2 * kNsPerSec;
    s.backoff_min = 20 * kNsPerMs;
    s.backoff_max = 100 * kNsPerMs;
    s.stale_after = 300 * kNsPerMs;
    return s;
  }

  void start(KubernetesSettings s) {
    discovery_ = std::make_unique<KubernetesDiscovery>(io_, std::move(s), [this] { ++changes_; });
    discovery_->start();
  }

  template <class Predicate>
  bool runUntil(Predicate&& p, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!p()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io_.run_for(10ms);
    }
    return true;
  }

  // The discovered replica of Pod `name`, nullptr if none.
  std::optional<DiscoveredReplica> replica(const std::string& name) {
    for (DiscoveredReplica& r : discovery_->replicas()) {
      if (r.spec.pod.name == name) return r;
    }
    return std::nullopt;
  }
  size_t replicaCount() { return discovery_->replicas().size(); }
  const Reflector& pods() { return *discovery_->reflectors()[0]; }

  void TearDown() override {
    if (discovery_) discovery_->stop();
    discovery_.reset();
    io_.run_for(50ms);
  }

  FakeApiServer server_;
  TempDir dir_;
  boost::asio::io_context io_;
  std::unique_ptr<KubernetesDiscovery> discovery_;
  int changes_ = 0;
};

TEST_F(KubernetesClientTest, ListsThenFollowsEveryChangeOnOneWatch) {
  server_.upsertPod(pod("a", 8001));
  server_.upsertPod(pod("b", 8002));
  start(settings());
  ASSERT_TRUE(runUntil([&] { return discovery_->synced(); }));
  const std::vector<DiscoveredReplica> first = discovery_->replicas();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(first[0].spec.established);  // listed at start: serving already
  EXPECT_EQ(replica("a")->spec.address, "127.0.0.1:8001");
  EXPECT_EQ(replica("a")->spec.labels.at("gpu"), "A100");
  EXPECT_EQ(replica("a")->spec.pod.deployment, "llama-a100");

  server_.upsertPod(pod("c", 8003, /*ready=*/false));
  ASSERT_TRUE(runUntil([&] { return pods().store().pods.count("default/c"); }));
  EXPECT_FALSE(replica("c").has_value());  // starting: not a replica yet
  server_.setPodReady("default", "c", true);
  ASSERT_TRUE(runUntil([&] { return replica("c").has_value(); }));
  EXPECT_FALSE(replica("c")->spec.established);  // joined later: eased in

  server_.setPodReady("default", "a", false);
  ASSERT_TRUE(runUntil([&] { return replica("a") && replica("a")->spec.lifecycle == kNotReady; }));
  server_.deletePod("default", "b", 30);
  ASSERT_TRUE(
      runUntil([&] { return replica("b") && replica("b")->spec.lifecycle == kTerminating; }));
  server_.setPodLabel("default", "c", "aibrix.ai/draining", "true");
  ASSERT_TRUE(runUntil([&] { return replica("c") && replica("c")->spec.lifecycle == kDrainLabel; }));
  server_.removePod("default", "b");
  ASSERT_TRUE(runUntil([&] { return !replica("b").has_value(); }));
  EXPECT_EQ(server_.lists(), 2);  // pods and deployments, once each
  EXPECT_EQ(pods().stats().lists, 1);
  EXPECT_EQ(pods().stats().watches, 1);
  EXPECT_GE(pods().stats().events, 5);
  EXPECT_GT(changes_, 0);
}

TEST_F(KubernetesClientTest, AnObjectLeavingTheSelectorIsDeleted) {
  server_.upsertPod(pod("a"));
  start(settings());
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1; }));
  server_.setPodLabel("default", "a", "model.aibrix.ai/name", "");
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 0; }));
  EXPECT_TRUE(pods().store().pods.empty());
}

TEST_F(KubernetesClientTest, BookmarksAdvanceTheResourceVersion) {
  start(settings());
  // Both watches (Pods and Deployments) open: with only one, the bookmark could miss the Pods'.
  ASSERT_TRUE(runUntil([&] { return pods().healthy() && server_.openWatches() == 2; }));
  server_.upsertDeployment({"default", "unrelated", {}, 1, 1});  // moves the version
  server_.sendBookmarks();
  ASSERT_TRUE(runUntil([&] { return pods().stats().bookmarks >= 1; }));
  EXPECT_EQ(pods().resourceVersion(), server_.resourceVersion());
}

TEST_F(KubernetesClientTest, ACutWatchResumesFromTheLastVersionWithoutListing) {
  server_.upsertPod(pod("a"));
  start(settings());
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1 && server_.openWatches() == 2; }));
  server_.cutWatches();
  server_.upsertPod(pod("b", 8002));  // while the client reconnects
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 2; }));
  EXPECT_EQ(pods().stats().lists, 1);
  EXPECT_GE(pods().stats().watches, 2);
  EXPECT_GE(pods().stats().watch_failures, 1);
}

TEST_F(KubernetesClientTest, GoneAsAWatchEventMeansListAgain) {
  server_.upsertPod(pod("a"));
  start(settings());
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1 && server_.openWatches() == 2; }));
  server_.setDown(true);  // the client's version ages while it is away
  server_.upsertPod(pod("b", 8002));
  server_.removePod("default", "a");
  server_.compactHistory();
  server_.setDown(false);
  ASSERT_TRUE(runUntil([&] { return replica("b").has_value() && !replica("a").has_value(); }));
  EXPECT_GE(pods().stats().expired, 1);
  EXPECT_EQ(pods().stats().lists, 2);
}

// Stopping and destroying the discovery between any two handlers must touch nothing of it
// afterwards: completions already queued (a watch's answer header, an event) still run. Stepping
// the io_context one handler at a time stops it at every point of its start-up and first events.
TEST_F(KubernetesClientTest, StoppingBetweenAnyTwoHandlersTouchesNothingAfterwards) {
  server_.upsertPod(pod("a"));
  for (int steps = 1; steps <= 80; ++steps) {
    io_.restart();  // it ran out of work at the end of the last round
    start(settings());
    for (int i = 0; i < steps; ++i) {
      if (i == steps / 2) server_.upsertPod(pod("b", 8002));  // an event on the watch
      io_.run_one_for(20ms);
    }
    discovery_->stop();
    discovery_.reset();
    io_.run_for(5ms);  // the queued completions run now, with the discovery gone
    server_.removePod("default", "b");
  }
}

class KubernetesGoneStatusTest : public KubernetesClientTest {
 protected:
  static FakeApiServer::Options options() {
    FakeApiServer::Options o;
    o.gone_as_http_status = true;
    return o;
  }
  KubernetesGoneStatusTest() : KubernetesClientTest(options()) {}
};

TEST_F(KubernetesGoneStatusTest, GoneAsAnHttpStatusMeansListAgain) {
  start(settings());
  ASSERT_TRUE(runUntil([&] { return discovery_->synced() && server_.openWatches() == 2; }));
  server_.setDown(true);
  server_.upsertPod(pod("b", 8002));
  server_.compactHistory();
  server_.setDown(false);
  ASSERT_TRUE(runUntil([&] { return replica("b").has_value(); }));
  EXPECT_GE(pods().stats().expired, 1);
}

TEST_F(KubernetesClientTest, AMalformedEventMeansListAgain) {
  server_.upsertPod(pod("a"));
  start(settings());
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1 && server_.openWatches() == 2; }));
  server_.sendGarbage();
  ASSERT_TRUE(runUntil([&] { return pods().stats().lists == 2; }));
  EXPECT_GE(pods().stats().parse_errors, 1);
  EXPECT_EQ(replicaCount(), 1u);  // nothing lost
}

TEST_F(KubernetesClientTest, ABrokenServerNeverEmptiesTheFleetAndMarksItStale) {
  server_.upsertPod(pod("a"));
  server_.upsertPod(pod("b", 8002));
  start(settings());
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 2; }));
  EXPECT_FALSE(discovery_->stale(SteadyClock::instance().now()));
  server_.setDown(true);
  ASSERT_TRUE(runUntil([&] { return discovery_->stale(SteadyClock::instance().now()); }));
  EXPECT_EQ(replicaCount(), 2u);  // the last known fleet stays
  EXPECT_FALSE(pods().lastError().empty());
  server_.setDown(false);
  ASSERT_TRUE(runUntil([&] { return !discovery_->stale(SteadyClock::instance().now()); }));
  EXPECT_EQ(replicaCount(), 2u);
}

TEST_F(KubernetesClientTest, ASlowServerTimesOutThenRecovers) {
  server_.upsertPod(pod("a"));
  server_.setDelay(1500ms);
  KubernetesSettings s = settings();
  s.request_timeout = 300 * kNsPerMs;
  start(s);
  ASSERT_TRUE(runUntil([&] { return pods().stats().list_failures >= 1; }));
  EXPECT_FALSE(discovery_->synced());
  EXPECT_EQ(replicaCount(), 0u);
  server_.setDelay(0ms);
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1; }));
}

TEST_F(KubernetesClientTest, FailingListsBackOffAndRetry) {
  server_.upsertPod(pod("a"));
  server_.failLists(3, 500);
  start(settings());
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1; }));
  EXPECT_GE(pods().stats().list_failures + discovery_->reflectors()[1]->stats().list_failures, 3);
}

TEST_F(KubernetesClientTest, AWrongTokenIsUnauthorizedAndStale) {
  server_.setToken("another");
  start(settings());
  ASSERT_TRUE(runUntil([&] { return pods().stats().unauthorized >= 1; }));
  EXPECT_FALSE(discovery_->synced());
  ASSERT_TRUE(runUntil([&] { return discovery_->stale(SteadyClock::instance().now()); }));
  EXPECT_NE(pods().lastError().find("401"), std::string::npos) << pods().lastError();
}

TEST_F(KubernetesClientTest, InClusterTokenIsReReadWhenItRotates) {
  server_.upsertPod(pod("a"));
  KubernetesSettings s = settings();
  s.kubeconfig.clear();
  s.in_cluster.server = server_.url();
  s.in_cluster.token_file = dir_.write("token", "test-token\n");
  s.in_cluster.ca_file = dir_.write("ca.crt", server_.tls().ca_pem);
  s.in_cluster.namespace_file = dir_.write("namespace", "default");
  s.namespaces.clear();  // the service account's namespace
  start(s);
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1 && server_.openWatches() == 2; }));
  EXPECT_EQ(discovery_->namespaces(), std::vector<std::string>{"default"});
  const uint64_t reloads = discovery_->client().tokenReloads();
  server_.setToken("rotated");
  server_.cutWatches();
  ASSERT_TRUE(runUntil([&] { return pods().stats().unauthorized >= 1; }));
  dir_.write("token", "rotated\n");
  server_.upsertPod(pod("b", 8002));
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 2; }));
  EXPECT_GT(discovery_->client().tokenReloads(), reloads);
}

TEST_F(KubernetesClientTest, AnUnknownCaFailsTheHandshake) {
  KubernetesSettings s = settings();
  s.kubeconfig.clear();
  s.in_cluster.server = server_.url();
  s.in_cluster.token_file = dir_.write("token", "test-token");
  s.in_cluster.ca_file = dir_.write("ca.crt", testing::makeUnrelatedCaPem());
  start(s);
  ASSERT_TRUE(runUntil([&] { return pods().stats().list_failures >= 1; }));
  EXPECT_NE(pods().lastError().find("handshake"), std::string::npos) << pods().lastError();
  EXPECT_FALSE(discovery_->synced());
}

class KubernetesClientCertTest : public KubernetesClientTest {
 protected:
  static FakeApiServer::Options options() {
    FakeApiServer::Options o;
    o.token.clear();
    o.require_client_cert = true;
    return o;
  }
  KubernetesClientCertTest() : KubernetesClientTest(options()) {}
};

TEST_F(KubernetesClientCertTest, AClientCertificateAuthenticates) {
  server_.upsertPod(pod("a"));
  KubernetesSettings s = settings();
  s.kubeconfig = dir_.write("kubeconfig-cert", server_.kubeconfig(/*client_cert=*/true));
  start(s);
  ASSERT_TRUE(runUntil([&] { return replicaCount() == 1; }));
  EXPECT_EQ(server_.unauthorized(), 0);
}

TEST_F(KubernetesClientTest, ListsArePaginated) {
  for (int i = 0; i < 7; ++i) server_.upsertPod(pod("p" + std::to_string(i), 8000 + i));
  ApiClient client(io_, [&] {
    Credentials c;
    EXPECT_TRUE(parseKubeconfig(server_.kubeconfig(), "/tmp", "", c).ok());
    return c;
  }());
  ReflectorOptions options;
  options.path = "/api/v1/namespaces/default/pods";
  options.label_selector = "model.aibrix.ai/name=llama,gpu in (A100,H100)";
  options.page_size = 3;
  Reflector reflector(io_, client, options, [] {}, 1);
  reflector.start();
  ASSERT_TRUE(runUntil([&] { return reflector.synced(); }));
  EXPECT_EQ(reflector.store().pods.size(), 7u);
  EXPECT_EQ(server_.lists(), 3);
  reflector.stop();
  client.cancel();
}

TEST_F(KubernetesClientTest, PatchesAPodsAnnotation) {
  server_.upsertPod(pod("a"));
  ApiClient client(io_, [&] {
    Credentials c;
    EXPECT_TRUE(parseKubeconfig(server_.kubeconfig(), "/tmp", "", c).ok());
    return c;
  }());
  ApiResponse response;
  bool done = false;
  boost::asio::co_spawn(
      io_,
      [&]() -> boost::asio::awaitable<void> {
        response = co_await client.request(
            ApiMethod::kPatch, "/api/v1/namespaces/default/pods/a",
            R"({"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"-100"}}})",
            "application/merge-patch+json", 2 * kNsPerSec);
        done = true;
      },
      boost::asio::detached);
  ASSERT_TRUE(runUntil([&] { return done; }));
  EXPECT_EQ(response.status, 200) << response.error << response.body;
  FakePod after;
  ASSERT_TRUE(server_.findPod("default", "a", after));
  EXPECT_EQ(after.annotations.at("controller.kubernetes.io/pod-deletion-cost"), "-100");
  EXPECT_EQ(server_.patches().size(), 1u);
}

TEST_F(KubernetesClientTest, TheNodesGpuLabelFillsIn) {
  FakePod p = pod("a");
  p.labels.erase("gpu");
  p.node = "gpu-node-1";
  server_.upsertPod(p);
  server_.setNodeLabels("gpu-node-1", {{"nvidia.com/gpu.product", "NVIDIA-L20"}});
  KubernetesSettings s = settings();
  s.mapping.node_gpu_label = "nvidia.com/gpu.product";
  start(s);
  ASSERT_TRUE(runUntil([&] {
    const auto r = replica("a");
    return r && r->spec.labels.count("gpu") && r->spec.labels.at("gpu") == "NVIDIA-L20";
  }));
}

TEST_F(KubernetesClientTest, DeploymentsAreWatchedToo) {
  server_.upsertDeployment({"default", "llama-a100", {{"model.aibrix.ai/name", "llama"},
                                                      {"model.aibrix.ai/min_replicas", "1"}},
                            4, 4});
  start(settings());
  ASSERT_TRUE(runUntil([&] { return discovery_->deployments().size() == 1; }));
  EXPECT_EQ(discovery_->deployments()[0]->replicas, 4);
  server_.upsertDeployment({"default", "llama-a100", {{"model.aibrix.ai/name", "llama"}}, 3, 3});
  ASSERT_TRUE(runUntil([&] { return discovery_->deployments()[0]->replicas == 3; }));
}

TEST(KubernetesClientSetup, BadCredentialsFailAtStartWithTheReason) {
  boost::asio::io_context io;
  KubernetesSettings s;
  s.enabled = true;
  s.kubeconfig = "/nonexistent/kubeconfig";
  try {
    KubernetesDiscovery discovery(io, s, [] {});
    ADD_FAILURE() << "accepted a missing kubeconfig";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kubeconfig"), std::string::npos);
  }
}

}  // namespace
}  // namespace switchyard::fleet::kubernetes
