// The Redis backend when Redis fails: stopped, paused (answers late), restarted; and clients
// destroyed with calls in flight. Every call must come back, degraded, within its deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "redis/state_harness.h"

namespace switchyard::state::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class RedisFailureTest : public ::testing::Test {
 protected:
  RedisFailureTest() {
    settings_ = harness_.settings();
    settings_.call_timeout = 300 * kNsPerMs;
    settings_.sync_timeout = 300 * kNsPerMs;
    settings_.reconnect_min = 20 * kNsPerMs;
    settings_.reconnect_max = 200 * kNsPerMs;
    backend_ = makeRedisBackend(settings_, "a");
    client_ = backend_->makeClient(io_.get_executor());
    sync_ = backend_->makeSync(io_.get_executor());
  }
  template <typename T>
  T run(asio::awaitable<T> awaitable) {
    return runAwait(io_, std::move(awaitable));
  }
  AdmitResult admit() { return run(client_->admit(AdmitRequest{"m1", "r1", 100})); }
  // Retries until Redis answers or 10 s pass (the reconnect is in the background).
  bool admittedWithin(std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (admit().verdict == AdmitVerdict::kAdmitted) return true;
      io_.restart();
      io_.run_for(20ms);
    }
    return false;
  }

  asio::io_context io_;
  RedisHarness harness_;
  SharedStateSettings settings_;
  std::shared_ptr<SharedStateBackend> backend_;
  std::unique_ptr<SharedStateClient> client_;
  std::unique_ptr<SharedStateSync> sync_;
};

TEST_F(RedisFailureTest, StoppedRedisAnswersDegradedThenReconnects) {
  ASSERT_EQ(admit().verdict, AdmitVerdict::kAdmitted);
  EXPECT_TRUE(client_->stats().connected.load());
  EXPECT_TRUE(client_->distributed());

  harness_.server().stop();
  const auto started = Clock::now();
  EXPECT_EQ(admit().verdict, AdmitVerdict::kDegraded);
  EXPECT_TRUE(run(client_->lookupSession("m1", "s", kNsPerSec)).degraded);
  EXPECT_TRUE(run(client_->lookupJob("j")).degraded);
  const ReplicaReport hb{"m1", "r1", 0, /*publish_running=*/false};
  EXPECT_FALSE(run(sync_->publish({&hb, 1}, kNsPerSec)));
  EXPECT_FALSE(run(sync_->read({&hb, 1})).has_value());
  EXPECT_FALSE(run(sync_->holdLease("scale-down", kNsPerSec)).has_value());
  EXPECT_FALSE(run(sync_->putMark("drain", "r1", "", kNsPerSec)));
  EXPECT_FALSE(run(sync_->readMarks("drain")).has_value());
  client_->release("m1", "r1");  // fire and forget: must not throw or block
  // Each answer is bounded by the 300 ms deadline; generous bound for a loaded machine.
  EXPECT_LT(Clock::now() - started, 5s);
  EXPECT_GE(client_->stats().degraded.load(), 3);
  EXPECT_GE(sync_->stats().degraded.load(), 5);
  EXPECT_FALSE(client_->stats().connected.load());

  harness_.server().start();  // same port, empty
  EXPECT_TRUE(admittedWithin(10s));
  EXPECT_GE(client_->stats().reconnects.load(), 1);
  EXPECT_TRUE(client_->stats().connected.load());
  bool published = false;  // the sync reconnects on its own
  for (auto deadline = Clock::now() + 10s; !published && Clock::now() < deadline;) {
    published = run(sync_->publish({&hb, 1}, kNsPerSec));
    io_.restart();
    io_.run_for(20ms);
  }
  EXPECT_TRUE(published);
}

TEST_F(RedisFailureTest, KilledRedisMidCallAnswersDegraded) {
  ASSERT_EQ(admit().verdict, AdmitVerdict::kAdmitted);
  harness_.server().pause();
  std::vector<AdmitResult> results;
  for (int i = 0; i < 5; ++i) {
    asio::co_spawn(io_, admitOwned(*client_, AdmitRequest{"m1", "r1", 100}),
                   [&](std::exception_ptr, AdmitResult r) { results.push_back(r); });
  }
  io_.restart();
  io_.poll();  // sent, not answered
  harness_.server().stop(/*kill=*/true);
  const auto deadline = Clock::now() + 5s;
  while (results.size() < 5 && Clock::now() < deadline) io_.run_one_for(50ms);
  ASSERT_EQ(results.size(), 5u);
  for (const AdmitResult& r : results) {
    EXPECT_EQ(r.verdict, AdmitVerdict::kDegraded) << "in flight " << r.inflight;
  }
}

TEST_F(RedisFailureTest, LateReplyIsDroppedAndItsAdmissionUndone) {
  ASSERT_EQ(admit().verdict, AdmitVerdict::kAdmitted);  // count 1
  harness_.server().pause();
  const auto started = Clock::now();
  EXPECT_EQ(admit().verdict, AdmitVerdict::kDegraded);  // the deadline, not a disconnect
  EXPECT_LT(Clock::now() - started, 5s);
  EXPECT_TRUE(client_->stats().connected.load());
  harness_.server().resume();
  // Redis now runs the late admission (count 2) and this one (count 3); the late one is undone.
  const AdmitResult next = admit();
  EXPECT_EQ(next.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(next.inflight, 3);
  run(client_->lookupJob("flush"));
  auto other = makeRedisBackend(settings_, "b");
  auto other_sync = other->makeSync(io_.get_executor());
  const ReplicaReport hb{"m1", "r1", 0, /*publish_running=*/false};
  ASSERT_TRUE(run(sync_->publish({&hb, 1}, 60 * kNsPerSec)));  // a is live for b
  auto views = run(other_sync->read({&hb, 1}));
  ASSERT_TRUE(views.has_value());
  EXPECT_EQ((*views)[0].others_running, 2);
}

TEST_F(RedisFailureTest, DestroyingAClientWithCallsInFlightIsClean) {
  ASSERT_EQ(admit().verdict, AdmitVerdict::kAdmitted);
  harness_.server().pause();  // keep the calls in flight
  int completed = 0;
  for (int i = 0; i < 4; ++i) {
    asio::co_spawn(io_, admitOwned(*client_, AdmitRequest{"m1", "r1", 100}),
                   [&](std::exception_ptr e, AdmitResult r) {
                     EXPECT_FALSE(e);
                     EXPECT_EQ(r.verdict, AdmitVerdict::kDegraded);
                     ++completed;
                   });
  }
  asio::co_spawn(io_, client_->lookupSession("m1", "s", kNsPerSec),
                 [&](std::exception_ptr, SessionPin pin) {
                   EXPECT_TRUE(pin.degraded);
                   ++completed;
                 });
  client_->release("m1", "r1");
  io_.restart();
  io_.poll();
  client_.reset();
  const auto started = Clock::now();
  while (completed < 5 && Clock::now() - started < 5s) io_.run_one_for(50ms);
  EXPECT_EQ(completed, 5);
  harness_.server().resume();
}

TEST(RedisShutdownTest, IoContextDestroyedWithSuspendedCallsIsClean) {
  RedisHarness harness;
  SharedStateSettings settings = harness.settings();
  auto backend = makeRedisBackend(settings, "a");
  harness.server().pause();
  {
    asio::io_context io;
    auto client = backend->makeClient(io.get_executor());
    auto sync = backend->makeSync(io.get_executor());
    for (int i = 0; i < 3; ++i) {
      asio::co_spawn(io, admitOwned(*client, AdmitRequest{"m1", "r1", 1}), asio::detached);
    }
    const ReplicaReport hb{"m1", "r1", 0, /*publish_running=*/false};
    asio::co_spawn(io, sync->read({&hb, 1}), asio::detached);
    io.poll();
    client.reset();
    sync.reset();
  }  // the io_context goes with coroutine frames never resumed
  harness.server().resume();
}

TEST(RedisBackendTest, UnreachableRedisDegradesAtOnce) {
  SharedStateSettings settings;
  settings.backend = SharedStateSettings::Backend::kRedis;
  settings.address = "127.0.0.1:1";  // nothing listens there
  settings.reconnect_min = 10 * kNsPerMs;
  settings.reconnect_max = 50 * kNsPerMs;
  auto backend = makeBackend(settings);
  EXPECT_EQ(backend->gatewayId().size(), 16u);
  asio::io_context io;
  auto client = backend->makeClient(io.get_executor());
  io.run_for(100ms);  // a few refused connects
  EXPECT_EQ(runAwait(io, client->admit(AdmitRequest{"m1", "r1"})).verdict,
            AdmitVerdict::kDegraded);
  EXPECT_FALSE(client->stats().connected.load());
  EXPECT_EQ(client->stats().reconnects.load(), 0);
}

TEST(MemoryBackendTest, MakeBackendDefaultsToMemoryWithARandomId) {
  auto first = makeBackend(SharedStateSettings{});
  auto second = makeBackend(SharedStateSettings{});
  EXPECT_EQ(first->gatewayId().size(), 16u);
  EXPECT_NE(first->gatewayId(), second->gatewayId());
  EXPECT_EQ(makeBackend(SharedStateSettings{}, "given")->gatewayId(), "given");
  asio::io_context io;
  EXPECT_FALSE(first->makeClient(io.get_executor())->distributed());
}

}  // namespace
}  // namespace switchyard::state::testing
