// A replica added by a config reload is eased in under least-request-top-k: its share of the
// traffic starts well below a fair share and grows over the ramp, instead of a stampede onto its
// empty queue. Bounded: a 6 s ramp, about 12 s in all; compares shares, not wall-clock figures.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

std::string configText(const std::vector<std::unique_ptr<Process>>& engines, size_t count) {
  std::string replicas;
  for (size_t i = 0; i < count; ++i) replicas += replicaLine(engines[i]->port(), "A100");
  return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
         "reload_poll_interval_ms: 100\n"
         "routing:\n  default_strategy: least-request-top-k\n"
         "  least_request_top_k: { k: 2, tolerance_requests: 1, tolerance_fraction: 0 }\n"
         "  slow_start: { ramp_ms: 6000 }\n"
         "models:\n  - name: llama2-7b\n    replicas:\n" +
         replicas;
}

TEST(SlowStartIntegration, ReplicaAddedByReloadGetsARampedShare) {
  std::vector<std::unique_ptr<Process>> engines;
  for (int i = 0; i < 4; ++i) engines.push_back(startEngine("A100"));
  TempFile config(configText(engines, 3), ".yaml");
  Process gateway({"gateway", "--config", config.path()});
  ASSERT_NE(gateway.port(1), 0);
  const std::string added = "127.0.0.1:" + std::to_string(engines[3]->port());

  // Closed-loop clients keep about 16 requests in flight, so the established replicas carry a
  // load the new one would otherwise undercut.
  std::atomic<bool> stop{false};
  std::atomic<int> phase{0};  // 0 before the reload, 1 early in the ramp, 2 after it
  std::mutex mutex;
  std::map<int, std::map<std::string, int>> pods;
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&] {
      while (!stop) {
        const HttpResult r = httpRequest(gateway.port(0), "POST", "/v1/chat/completions",
                                         chatBody("llama2-7b", 24), kJson, 20s);
        if (r.status != 200) continue;
        std::lock_guard lock(mutex);
        ++pods[phase][r.header("target-pod")];
      }
    });
  }
  std::this_thread::sleep_for(1s);  // let the established replicas' load build up
  {
    std::ofstream out(config.path(), std::ios::trunc);
    out << configText(engines, 4);
  }
  ASSERT_TRUE(waitUntil([&] { return !fleetField(gateway.port(1), added, "name").empty(); }, 5s));
  phase = 1;
  std::this_thread::sleep_for(1500ms);  // the first quarter of the ramp
  phase = 3;                            // not counted: the middle of the ramp
  std::this_thread::sleep_for(4500ms);
  phase = 2;  // ramp over: a full share
  std::this_thread::sleep_for(2500ms);
  stop = true;
  for (std::thread& t : clients) t.join();

  auto share = [&](int p) {
    int total = 0;
    for (const auto& [pod, n] : pods[p]) total += n;
    return total == 0 ? 0.0 : static_cast<double>(pods[p][added]) / total;
  };
  const double early = share(1);
  const double late = share(2);
  // A fair share is 1/4. A stampede gives the new replica most of the first decisions; with
  // slow start it gets at most ~1/8 of the traffic over the first quarter of the ramp.
  EXPECT_LT(early, 0.15) << "early " << early << ", late " << late;
  EXPECT_GT(late, 0.15) << "late " << late;
  EXPECT_GT(late, early * 1.5) << "early " << early << ", late " << late;
}

}  // namespace
}  // namespace switchyard::testing
