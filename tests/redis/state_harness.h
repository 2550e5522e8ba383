// What the shared-state contract tests run on: "gateways" that share one backend store, and a
// way to let time pass. MemoryHarness shares a MemoryStore and a ManualClock; RedisHarness
// shares a real redis-server on loopback (time passes for real there: Redis keeps the clock).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "state/memory_state.h"
#include "state/redis/redis_backend.h"
#include "support/redis_server.h"

namespace switchyard::state::testing {

namespace asio = boost::asio;

// Runs `awaitable` on `io` until it completes (bounded: 10 s), on this thread.
template <typename T>
T runAwait(asio::io_context& io, asio::awaitable<T> awaitable) {
  std::optional<T> result;
  std::exception_ptr error;
  asio::co_spawn(io, std::move(awaitable), [&](std::exception_ptr e, T value) {
    error = e;
    result.emplace(std::move(value));
  });
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!result && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(50));
  }
  if (error) std::rethrow_exception(error);
  if (!result) throw std::runtime_error("awaitable did not complete within 10 s");
  return std::move(*result);
}

// client.admit() with the request held by the coroutine: awaitables start lazily, so one handed
// to co_spawn must not refer to a temporary request.
inline asio::awaitable<AdmitResult> admitOwned(SharedStateClient& client, AdmitRequest request) {
  co_return co_await client.admit(request);
}

// One gateway of the fleet under test: its backend, a request-path client and a sync, all on
// the test's io_context.
struct TestGateway {
  std::shared_ptr<SharedStateBackend> backend;
  std::unique_ptr<SharedStateClient> client;
  std::unique_ptr<SharedStateSync> sync;
};

inline std::unique_ptr<TestGateway> makeTestGateway(std::shared_ptr<SharedStateBackend> backend,
                                                    asio::io_context& io) {
  auto g = std::make_unique<TestGateway>();
  g->backend = std::move(backend);
  g->client = g->backend->makeClient(io.get_executor());
  g->sync = g->backend->makeSync(io.get_executor());
  return g;
}

class MemoryHarness {
 public:
  static constexpr const char* kName = "Memory";
  std::shared_ptr<SharedStateBackend> gateway(const std::string& id) {
    return makeMemoryBackend(store_, id, clock_);
  }
  void pass(TimeNs duration) { clock_.advance(duration); }
  // A TTL the tests can outwait.
  TimeNs shortTtl() const { return 300 * kNsPerMs; }

 private:
  std::shared_ptr<MemoryStore> store_ = std::make_shared<MemoryStore>();
  ManualClock clock_{1'000 * kNsPerSec};
};

class RedisHarness {
 public:
  static constexpr const char* kName = "Redis";
  RedisHarness() {
    settings_.backend = SharedStateSettings::Backend::kRedis;
    settings_.address = server_.address();
    // Generous: the contract tests check semantics, not latency, on a busy 2-core machine
    // (and under ASan); the failure tests set tight deadlines themselves.
    settings_.call_timeout = 2 * kNsPerSec;
    settings_.sync_timeout = 2 * kNsPerSec;
  }
  std::shared_ptr<SharedStateBackend> gateway(const std::string& id) {
    return makeRedisBackend(settings_, id);
  }
  void pass(TimeNs duration) { std::this_thread::sleep_for(std::chrono::nanoseconds(duration)); }
  TimeNs shortTtl() const { return 800 * kNsPerMs; }

  switchyard::testing::RedisServer& server() { return server_; }
  SharedStateSettings& settings() { return settings_; }

 private:
  switchyard::testing::RedisServer server_;
  SharedStateSettings settings_;
};

}  // namespace switchyard::state::testing
