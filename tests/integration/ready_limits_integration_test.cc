// Ready means ready: shared in-flight limits hold from a gateway's first request (and across a
// gateway killed and restarted mid-load), /readyz waits for shared state and telemetry, the
// worker count follows the CPUs the process may use, early error answers survive a client that
// is still sending, and a client that leaves costs no more GPU time. Real processes on loopback
// and a real redis-server; every test is bounded in time and request count.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "gateway_harness.h"
#include "support/redis_server.h"

namespace switchyard::testing {
namespace {

// What the engine itself is working on: running plus waiting (its own metrics).
double engineInflight(uint16_t engine_port) {
  const HttpResult r = httpRequest(engine_port, "GET", "/metrics", {}, {}, 2s);
  return metricSample(r.body, "vllm:num_requests_running{") +
         metricSample(r.body, "vllm:num_requests_waiting{");
}

bool waitReady(uint16_t admin_port, std::chrono::milliseconds timeout = 15s) {
  return waitUntil([&] { return httpRequest(admin_port, "GET", "/readyz").status == 200; },
                   timeout);
}

// Samples every engine's in-flight count until stopped; keeps the peak per engine.
class PeakSampler {
 public:
  explicit PeakSampler(std::vector<uint16_t> ports)
      : ports_(std::move(ports)), peaks_(ports_.size(), 0.0) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        for (size_t e = 0; e < ports_.size(); ++e) {
          const double v = engineInflight(ports_[e]);
          if (std::isfinite(v)) {
            std::lock_guard lock(mutex_);
            peaks_[e] = std::max(peaks_[e], v);
          }
        }
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  ~PeakSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<double> peaks() {
    std::lock_guard lock(mutex_);
    return peaks_;
  }

 private:
  std::vector<uint16_t> ports_;
  std::vector<double> peaks_;
  std::mutex mutex_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct BurstResult {
  int ok = 0;
  int refused = 0;
  int other = 0;
};

// `count` chat requests at once, spread over the gateways' client ports.
BurstResult burst(const std::vector<uint16_t>& ports, int count, int max_tokens) {
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < count; ++i) {
    clients.emplace_back([&, i] {
      const HttpResult r = httpRequest(ports[static_cast<size_t>(i) % ports.size()], "POST",
                                       "/v1/chat/completions", chatBody("llama2-7b", max_tokens),
                                       kJson, 60s);
      (r.status == 200 ? ok : r.status == 429 ? refused : other)++;
    });
  }
  for (auto& t : clients) t.join();
  return {ok.load(), refused.load(), other.load()};
}

std::vector<uint16_t> clientPorts(const std::vector<std::unique_ptr<Process>>& gateways) {
  std::vector<uint16_t> ports;
  for (const auto& g : gateways) ports.push_back(g->port(0));
  return ports;
}

class ReadyLimitsTest : public ::testing::Test {
 protected:
  void startEngines() {
    engines_.push_back(startEngine("L20"));
    engines_.push_back(startEngine("A100"));
  }
  std::vector<uint16_t> enginePorts() const {
    return {engines_[0]->port(), engines_[1]->port()};
  }
  std::string sharedConfig(int limit) {
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
           "shared_state: { backend: redis, address: " + redis_.address() +
           ", sync_interval_ms: 100, liveness_ttl_ms: 600, call_timeout_ms: 200,\n"
           "                reconnect_min_ms: 50, reconnect_max_ms: 200 }\n"
           "models:\n  - name: llama2-7b\n    routing_strategy: least-request\n"
           "    limits: { max_inflight_per_replica: " + std::to_string(limit) + " }\n"
           "    replicas:\n" + replicaLine(engines_[0]->port(), "L20") +
           replicaLine(engines_[1]->port(), "A100");
  }
  std::unique_ptr<Process> startReadyGateway(const std::string& config_path) {
    auto gateway = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_path});
    EXPECT_NE(gateway->port(1), 0);
    EXPECT_TRUE(waitReady(gateway->port(1)));
    return gateway;
  }

  RedisServer redis_;
  std::vector<std::unique_ptr<Process>> engines_;
};

// Three gateways started one after the other, each waited for until ready, then a burst at
// once: the engines never see more than the limit, round after round.
TEST_F(ReadyLimitsTest, SharedLimitHoldsFromTheFirstBurstAfterReadiness) {
  constexpr int kLimit = 3;
  startEngines();
  TempFile config(sharedConfig(kLimit), ".yaml");
  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<Process>> gateways;
    for (int g = 0; g < 3; ++g) gateways.push_back(startReadyGateway(config.path()));
    PeakSampler sampler(enginePorts());
    const BurstResult result = burst(clientPorts(gateways), 36, 150);
    sampler.stop();
    const std::vector<double> peaks = sampler.peaks();
    EXPECT_EQ(result.other, 0) << "round " << round;
    EXPECT_GE(result.ok, 2 * kLimit) << "round " << round;
    EXPECT_GT(result.refused, 0) << "round " << round;  // the burst is far above capacity
    for (double peak : peaks) EXPECT_LE(peak, kLimit) << "round " << round;
    EXPECT_GT(peaks[0] + peaks[1], 0.0);  // the sampler saw the load at all
  }
}

TEST_F(ReadyLimitsTest, SharedLimitHoldsWhenAGatewayIsKilledAndRestartedMidLoad) {
  constexpr int kLimit = 3;
  startEngines();
  TempFile config(sharedConfig(kLimit), ".yaml");
  std::vector<std::unique_ptr<Process>> gateways;
  for (int g = 0; g < 3; ++g) gateways.push_back(startReadyGateway(config.path()));
  std::mutex ports_mutex;
  std::vector<uint16_t> ports = clientPorts(gateways);
  PeakSampler sampler(enginePorts());
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, unexpected{0};
  const uint16_t killed_port = ports[2];
  std::vector<std::thread> clients;
  for (int i = 0; i < 9; ++i) {
    clients.emplace_back([&, i] {
      for (int n = 0; n < 200 && !stop.load(); ++n) {
        uint16_t port;
        {
          std::lock_guard lock(ports_mutex);
          port = ports[(i + n) % 3];
        }
        const HttpResult r = httpRequest(port, "POST", "/v1/chat/completions",
                                         chatBody("llama2-7b", 40), kJson, 30s);
        if (r.status == 200) {
          ++ok;
        } else if (r.status != 429 && port != 0 && port != killed_port) {
          ++unexpected;  // requests in flight through the killed gateway fail with it
        }
      }
    });
  }
  std::this_thread::sleep_for(1500ms);
  {
    std::lock_guard lock(ports_mutex);
    ports[2] = 0;
  }
  gateways[2]->child().sendSignal(SIGKILL);  // no goodbye: its counts stay in Redis
  gateways[2]->child().waitExit(deadlineIn(5s));
  gateways[2]->markStopped();
  std::this_thread::sleep_for(500ms);
  gateways[2] = startReadyGateway(config.path());
  {
    std::lock_guard lock(ports_mutex);
    ports[2] = gateways[2]->port(0);
  }
  std::this_thread::sleep_for(2500ms);
  stop = true;
  for (auto& t : clients) t.join();
  sampler.stop();
  for (double peak : sampler.peaks()) EXPECT_LE(peak, kLimit);
  EXPECT_GT(ok.load(), 10);

  // No count was left behind: once the killed gateway's heartbeat has expired, a burst of long
  // requests fills each replica to exactly its limit again.
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(burst(clientPorts(gateways), 12, 200).ok, 2 * kLimit);
  EXPECT_EQ(unexpected.load(), 0);
}

// A gateway in front of one engine, with `extra` top-level YAML.
std::string singleEngineConfig(uint16_t engine_port, const std::string& extra, int workers = 1) {
  return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: " +
         std::to_string(workers) + "\n" + extra +
         "models:\n  - name: llama2-7b\n    replicas:\n" + replicaLine(engine_port, "L20");
}

TEST_F(ReadyLimitsTest, ReadyzWaitsForSharedStateThenSaysItRunsDegraded) {
  startEngines();
  TempFile file(singleEngineConfig(
                    engines_[0]->port(),
                    "shared_state: { backend: redis, address: 127.0.0.1:" +
                        std::to_string(deadPort()) +
                        ", reconnect_min_ms: 50, reconnect_max_ms: 200 }\n"
                        "readiness: { shared_state_timeout_ms: 1500, telemetry_timeout_ms: 1000 }\n"),
                ".yaml");
  Process gateway({"gateway", "--config", file.path()});
  const uint16_t admin = gateway.port(1);
  ASSERT_NE(admin, 0);
  EXPECT_EQ(httpRequest(admin, "GET", "/healthz").status, 200);  // alive at once
  const HttpResult early = httpRequest(admin, "GET", "/readyz");
  EXPECT_EQ(early.status, 503) << early.body;
  EXPECT_NE(early.body.find("shared state"), std::string::npos) << early.body;
  ASSERT_TRUE(waitReady(admin, 5s));
  const HttpResult ready = httpRequest(admin, "GET", "/readyz");
  EXPECT_NE(ready.body.find("\"degraded\""), std::string::npos) << ready.body;
  // Requests are served meanwhile, on local decisions.
  EXPECT_EQ(httpRequest(gateway.port(0), "POST", "/v1/chat/completions",
                        chatBody("llama2-7b", 4), kJson)
                .status,
            200);
}

TEST_F(ReadyLimitsTest, ReadyzTurnsDrainingOnShutdownWhileHealthzStaysAlive) {
  startEngines();
  TempFile file(singleEngineConfig(engines_[0]->port(), "timeouts: { shutdown_grace_ms: 5000 }\n"),
                ".yaml");
  Process gateway({"gateway", "--config", file.path()});
  const uint16_t admin = gateway.port(1);
  ASSERT_TRUE(waitReady(admin));
  // A long stream keeps the gateway draining for a while after SIGTERM.
  std::thread stream([&] {
    streamRequest(gateway.port(0), "POST", "/v1/chat/completions",
                  chatBody("llama2-7b", 150, true), kJson, 30s);
  });
  ASSERT_TRUE(waitUntil([&] { return engineInflight(engines_[0]->port()) >= 1; }, 5s));
  gateway.child().sendSignal(SIGTERM);
  EXPECT_TRUE(waitUntil(
      [&] {
        const HttpResult r = httpRequest(admin, "GET", "/readyz");
        return r.status == 503 && r.body.find("draining") != std::string::npos;
      },
      3s));
  EXPECT_EQ(httpRequest(admin, "GET", "/healthz").status, 200);
  stream.join();
  gateway.markStopped();
  EXPECT_EQ(gateway.child().waitExit(deadlineIn(10s)), std::optional<int>(0));
}

TEST_F(ReadyLimitsTest, AStreamCutByTheEndOfTheShutdownGraceLeavesACleanExit) {
  // The worker's event loop is torn down with the stream's relay waiting on the engine: the
  // relay and the coroutine waiting for it must go with it (a sanitizer build reports a leak
  // as a failed exit).
  startEngines();
  TempFile file(singleEngineConfig(engines_[0]->port(), "timeouts: { shutdown_grace_ms: 300 }\n"),
                ".yaml");
  Process gateway({"gateway", "--config", file.path()});
  ASSERT_TRUE(waitReady(gateway.port(1)));
  std::thread stream([&] {
    streamRequest(gateway.port(0), "POST", "/v1/chat/completions",
                  chatBody("llama2-7b", 1000, true), kJson, 30s);
  });
  ASSERT_TRUE(waitUntil([&] { return engineInflight(engines_[0]->port()) >= 1; }, 5s));
  std::this_thread::sleep_for(200ms);  // tokens are flowing: the relay waits on a read
  gateway.child().sendSignal(SIGTERM);
  EXPECT_EQ(gateway.child().waitExit(deadlineIn(10s)), std::optional<int>(0));
  gateway.markStopped();
  stream.join();
}

TEST(WorkerCountTest, WorkersZeroFollowsTheAffinityMask) {
  auto engine = startEngine("L20");
  TempFile file(singleEngineConfig(engine->port(), "", /*workers=*/0), ".yaml");
  ChildProcess pinned({"/usr/bin/taskset", "-c", "0", SWITCHYARD_BINARY, "gateway", "--config",
                       file.path()});
  const std::vector<uint16_t> ports = pinned.waitForListening(deadlineIn(kStartTimeout));
  ASSERT_EQ(ports.size(), 2u);
  const std::string page = httpRequest(ports[1], "GET", "/metrics").body;
  EXPECT_EQ(metricSample(page, "switchyard_workers"), 1.0) << page.substr(0, 200);
  pinned.sendSignal(SIGTERM);
  EXPECT_EQ(pinned.waitExit(deadlineIn(10s)), std::optional<int>(0));
}

TEST(WorkerCountTest, BusyPollingWorkersServeStreamsCountTheirPollingAndStopOnSigterm) {
  auto engine = startEngine("L20");
  TempFile file(singleEngineConfig(engine->port(), "busy_poll_us: 200\n", /*workers=*/2),
                ".yaml");
  Process gateway({"gateway", "--config", file.path()});
  ASSERT_TRUE(waitReady(gateway.port(1)));
  for (const bool stream : {false, true, false, true}) {
    const HttpResult r = httpRequest(gateway.port(0), "POST", "/v1/chat/completions",
                                     chatBody("llama2-7b", 8, stream), kJson);
    EXPECT_EQ(r.status, 200) << r.body;
    if (stream) {
      EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos) << r.body;
    }
  }
  // Every request left the worker waiting on the engine or the client: it polled meanwhile.
  const std::string page = httpRequest(gateway.port(1), "GET", "/metrics").body;
  EXPECT_GT(metricSample(page, "switchyard_worker_busy_poll_seconds_total"), 0.0);
}

// --- Early errors and clients that leave ---

bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class GatewayWithEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = startEngine("L20");
    config_ = std::make_unique<TempFile>(singleEngineConfig(engine_->port(), ""), ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(1), 0);
  }
  std::unique_ptr<Process> engine_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

// Python's http.client and most scripts write the whole body before reading: the 413 must reach
// them, not a reset.
TEST_F(GatewayWithEngineTest, A413ReachesAClientThatWritesTheWholeBodyFirst) {
  const int fd = connectTo(gateway_->port(0));
  ASSERT_GE(fd, 0);
  const size_t size = 9u << 20;  // above the 8 MiB default limit
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                           "Content-Type: application/json\r\nContent-Length: " +
                           std::to_string(size) + "\r\n\r\n";
  ASSERT_TRUE(sendAll(fd, head));
  const std::string chunk(64 * 1024, 'a');
  bool sent = true;
  for (size_t done = 0; done < size && sent; done += chunk.size()) {
    sent = sendAll(fd, std::string_view(chunk).substr(0, std::min(chunk.size(), size - done)));
  }
  EXPECT_TRUE(sent) << "the gateway reset the connection while the body was being sent";
  const std::string answer = readAll(fd);
  ::close(fd);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 413") << answer.substr(0, 200);
  EXPECT_NE(answer.find("request_too_large"), std::string::npos);
}

// Clients that give up after a second: the engine stops working on their requests (its running
// count falls to zero) within 200 ms, for non-streamed and streamed requests alike.
void expectAbortedWhenClientsLeave(uint16_t client_port, uint16_t engine_port, bool stream) {
  std::vector<int> fds;
  const std::string body = chatBody("llama2-7b", 3000, stream);
  for (int i = 0; i < 4; ++i) {
    const int fd = connectTo(client_port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(sendAll(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                            "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body));
    fds.push_back(fd);
  }
  ASSERT_TRUE(waitUntil([&] { return engineInflight(engine_port) == 4.0; }, 5s));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(engineInflight(engine_port), 4.0);  // still generating: 3000 tokens take long
  for (int fd : fds) ::close(fd);
  const auto left = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitUntil([&] { return engineInflight(engine_port) == 0.0; }, 5s));
  const auto took = std::chrono::steady_clock::now() - left;
  EXPECT_LE(took, 200ms + 60ms) << "poll granularity included";
}

TEST_F(GatewayWithEngineTest, NonStreamedRequestsOfClientsThatLeaveAreAbortedAtTheEngine) {
  expectAbortedWhenClientsLeave(gateway_->port(0), engine_->port(), false);
  const std::string page = httpRequest(gateway_->port(1), "GET", "/metrics").body;
  EXPECT_EQ(metricSample(page, "switchyard_client_cancelled_total{model=\"llama2-7b\","
                              "stage=\"waiting_first_byte\"}"),
            4.0);
  const std::string decisions = httpRequest(gateway_->port(1), "GET", "/debug/decisions").body;
  EXPECT_NE(decisions.find(R"("client_cancelled":"waiting_first_byte")"), std::string::npos);
}

TEST_F(GatewayWithEngineTest, StreamedRequestsOfClientsThatLeaveAreAbortedAtTheEngine) {
  expectAbortedWhenClientsLeave(gateway_->port(0), engine_->port(), true);
  const std::string page = httpRequest(gateway_->port(1), "GET", "/metrics").body;
  EXPECT_EQ(metricSample(page, "switchyard_client_cancelled_total{model=\"llama2-7b\","
                              "stage=\"streaming\"}"),
            4.0);
}

TEST_F(GatewayWithEngineTest, TheEmulatorAbortsANonStreamedRequestWhoseClientLeft) {
  expectAbortedWhenClientsLeave(engine_->port(), engine_->port(), false);
}

}  // namespace
}  // namespace switchyard::testing
