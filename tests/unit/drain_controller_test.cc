// Operators' drains shared between gateways: two gateways on one memory store (as they would on
// one Redis), each with its own fleet registry and DrainController.
#include "gateway/drain_controller.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "state/memory_state.h"

namespace switchyard::gateway {
namespace {

using namespace std::chrono_literals;

fleet::ModelSpec fleetWith(const std::string& second_pod = "p2") {
  fleet::ModelSpec model;
  model.name = "m";
  fleet::ReplicaSpec a{"10.0.0.1:8000", {{"gpu", "A100"}}};
  a.pod = {"p1", "llm", "dep"};
  fleet::ReplicaSpec b{"10.0.0.2:8000", {{"gpu", "A100"}}};
  b.pod = {second_pod, "llm", "dep"};
  fleet::ReplicaSpec s{"10.0.0.9:8000", {}};  // a static replica
  model.replicas = {a, b, s};
  return model;
}

struct GatewayUnderTest {
  GatewayUnderTest(boost::asio::io_context& io, std::shared_ptr<state::MemoryStore> store,
                   const std::string& id) {
    registry.apply({fleetWith()}, kNsPerSec, "least-request");
    backend = state::makeMemoryBackend(std::move(store), id);
    sync = backend->makeSync(io.get_executor());
    DrainSettings settings;
    settings.sync_interval = 20 * kNsPerMs;
    settings.settle = 0;
    drain = std::make_unique<DrainController>(io, registry, *sync, settings);
    drain->start();
  }
  ~GatewayUnderTest() { drain->stop(); }
  const fleet::ReplicaState& replica(size_t i) { return *registry.latest()->models[0].replicas[i].state; }
  AdminResponse call(std::string_view method, std::string_view path, std::string_view body = {}) {
    return drain->handle(AdminRequest{method, path, {}, body});
  }

  fleet::FleetRegistry registry;
  std::shared_ptr<state::SharedStateBackend> backend;
  std::unique_ptr<state::SharedStateSync> sync;
  std::unique_ptr<DrainController> drain;
};

class DrainControllerTest : public ::testing::Test {
 protected:
  template <class P>
  bool runUntil(P&& p, std::chrono::milliseconds timeout = 3s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!p()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io_.run_for(10ms);
    }
    return true;
  }
  boost::asio::io_context io_;
  std::shared_ptr<state::MemoryStore> store_ = std::make_shared<state::MemoryStore>();
  GatewayUnderTest a_{io_, store_, "gw-a"};
  GatewayUnderTest b_{io_, store_, "gw-b"};
};

TEST_F(DrainControllerTest, ADrainOnOneGatewayReachesTheOthers) {
  const AdminResponse r = a_.call("POST", "/admin/drain", R"({"pod":"p1"})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_NE(r.body.find(R"("replica":"10.0.0.1:8000")"), std::string::npos) << r.body;
  EXPECT_TRUE(a_.replica(0).draining());  // at once here
  ASSERT_TRUE(runUntil([&] { return b_.replica(0).draining(); }));
  EXPECT_EQ(b_.replica(0).lifecycle(), fleet::kDrainRequested);
  EXPECT_FALSE(b_.replica(1).draining());
  EXPECT_EQ(b_.drain->marks().at("10.0.0.1:8000"), "p1");

  // Undone from the other gateway.
  ASSERT_EQ(b_.call("POST", "/admin/drain", R"({"replica":"llm/p1","drain":false})").status,
            200u);
  EXPECT_FALSE(b_.replica(0).draining());
  ASSERT_TRUE(runUntil([&] { return !a_.replica(0).draining(); }));
}

TEST_F(DrainControllerTest, EmptyMeansDrainingWithNothingInFlightAnywhere) {
  ASSERT_EQ(a_.call("POST", "/admin/drain", R"({"replica":"10.0.0.9:8000"})").status, 200u);
  auto& counters = const_cast<fleet::ReplicaState&>(a_.replica(2)).counters();
  counters.running.store(1);
  const_cast<fleet::ReplicaState&>(a_.replica(2)).storeRemoteRunning(2);
  AdminResponse status = a_.call("GET", "/admin/drain/10.0.0.9:8000");
  ASSERT_EQ(status.status, 200u);
  EXPECT_NE(status.body.find(R"("in_flight":3,"in_flight_here":1,"in_flight_other_gateways":2)"),
            std::string::npos)
      << status.body;
  EXPECT_NE(status.body.find(R"("empty":false)"), std::string::npos);
  counters.running.store(0);
  const_cast<fleet::ReplicaState&>(a_.replica(2)).storeRemoteRunning(0);
  status = a_.call("GET", "/admin/drain/10.0.0.9:8000");
  EXPECT_NE(status.body.find(R"("empty":true)"), std::string::npos) << status.body;
  // A replica that is not draining is never empty, whatever its load.
  status = a_.call("GET", "/admin/drain/p2");
  EXPECT_NE(status.body.find(R"("draining":false)"), std::string::npos);
  EXPECT_NE(status.body.find(R"("empty":false)"), std::string::npos);
  const AdminResponse list = a_.call("GET", "/admin/drain");
  EXPECT_NE(list.body.find("10.0.0.9:8000"), std::string::npos);
  EXPECT_EQ(list.body.find("10.0.0.2:8000"), std::string::npos);
}

TEST_F(DrainControllerTest, AMarkDoesNotDrainANewPodOnTheSameAddress) {
  ASSERT_EQ(a_.call("POST", "/admin/drain", R"({"pod":"p2"})").status, 200u);
  ASSERT_TRUE(runUntil([&] { return b_.replica(1).draining(); }));
  // p2 is gone; p2-new got its IP.
  b_.registry.apply({fleetWith("p2-new")}, kNsPerSec, "least-request");
  b_.drain->refresh();
  EXPECT_FALSE(b_.replica(1).draining());
}

TEST_F(DrainControllerTest, BadRequestsAreDefinedErrors) {
  EXPECT_EQ(a_.call("POST", "/admin/drain", "").status, 400u);
  EXPECT_EQ(a_.call("POST", "/admin/drain", "[1]").status, 400u);
  EXPECT_EQ(a_.call("POST", "/admin/drain", R"({"pod":7})").status, 400u);
  EXPECT_EQ(a_.call("POST", "/admin/drain", R"({"pod":"p1","drain":"yes"})").status, 400u);
  EXPECT_EQ(a_.call("POST", "/admin/drain", R"({"pod":"nobody"})").status, 404u);
  EXPECT_EQ(a_.call("GET", "/admin/drain/nobody").status, 404u);
  EXPECT_EQ(a_.call("PUT", "/admin/drain").status, 405u);
  EXPECT_EQ(a_.call("POST", "/admin/drain/p1").status, 405u);
  EXPECT_EQ(a_.call("GET", "/admin/drainage").status, 404u);
  const AdminResponse r = a_.call("POST", "/admin/drain", "{");
  EXPECT_NE(r.body.find("\"error\""), std::string::npos);
}

}  // namespace
}  // namespace switchyard::gateway
