// The SharedState contract, held against both backends: several gateways sharing one store.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <atomic>
#include <thread>
#include <vector>

#include "redis/state_harness.h"

namespace switchyard::state::testing {
namespace {

constexpr TimeNs kLongTtl = 60 * kNsPerSec;

using Gateway = TestGateway;

ReplicaReport report(std::string model, std::string replica, int64_t running = 0,
                     bool publish_running = false) {
  ReplicaReport r;
  r.model = std::move(model);
  r.replica = std::move(replica);
  r.running = running;
  r.publish_running = publish_running;
  return r;
}

template <typename Harness>
class SharedStateContractTest : public ::testing::Test {
 protected:
  Gateway& gateway(const std::string& id) {
    return *gateways_.emplace_back(makeTestGateway(harness_.gateway(id), io_));
  }
  template <typename T>
  T run(asio::awaitable<T> awaitable) {
    return runAwait(io_, std::move(awaitable));
  }
  AdmitResult admit(Gateway& g, std::string_view replica, int64_t limit) {
    return run(g.client->admit(AdmitRequest{"m1", replica, limit}));
  }
  // An admission that also renews the gateway's heartbeat for `ttl` (what gateways do).
  AdmitResult admitLive(Gateway& g, int64_t limit, TimeNs ttl = kLongTtl) {
    AdmitRequest request{"m1", "r1", limit};
    request.liveness_ttl = ttl;
    return run(admitOwned(*g.client, request));
  }
  // This gateway's count of r1 as the sync reports it (the request path keeps the count).
  void publishCount(Gateway& g, int64_t running, bool reconcile) {
    ReplicaReport r = report("m1", "r1", running);
    r.reconcile_running = reconcile;
    ASSERT_TRUE(run(g.sync->publish({&r, 1}, kLongTtl)));
  }
  // A heartbeat for model m1, valid for `ttl`, that leaves the in-flight counts alone.
  void heartbeat(Gateway& g, TimeNs ttl = kLongTtl) {
    const ReplicaReport hb = report("m1", "r1");
    ASSERT_TRUE(run(g.sync->publish({&hb, 1}, ttl)));
  }
  // Fire-and-forget calls are ordered before the next call on the same client.
  void flush(Gateway& g) { run(g.client->lookupJob("flush")); }
  ReplicaGlobalView readOne(Gateway& g, const std::string& model, const std::string& replica) {
    const ReplicaReport wanted = report(model, replica);
    auto views = run(g.sync->read({&wanted, 1}));
    EXPECT_TRUE(views.has_value());
    if (!views || views->size() != 1) return {};
    return (*views)[0];
  }

  asio::io_context io_;  // first: destroyed after the clients that use it
  Harness harness_;
  std::vector<std::unique_ptr<Gateway>> gateways_;
};

using Backends = ::testing::Types<MemoryHarness, RedisHarness>;
struct BackendNames {
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};
TYPED_TEST_SUITE(SharedStateContractTest, Backends, BackendNames);

TYPED_TEST(SharedStateContractTest, ConcurrentGatewaysNeverExceedTheLimit) {
  constexpr int64_t kLimit = 12;
  constexpr int kAttemptsPerGateway = 10;
  std::vector<Gateway*> gateways;
  for (const char* id : {"a", "b", "c"}) {
    gateways.push_back(&this->gateway(id));
    this->heartbeat(*gateways.back());
  }
  // Each gateway admits from its own thread and io_context, all its calls in flight at once.
  std::atomic<int> admitted_total{0};
  std::vector<int> admitted(gateways.size(), 0);
  std::vector<std::thread> threads;
  for (size_t g = 0; g < gateways.size(); ++g) {
    threads.emplace_back([&, g] {
      asio::io_context io;
      auto client = gateways[g]->backend->makeClient(io.get_executor());
      int answered = 0;
      for (int i = 0; i < kAttemptsPerGateway; ++i) {
        asio::co_spawn(io, admitOwned(*client, AdmitRequest{"m1", "r1", kLimit}),
                       [&, g](std::exception_ptr, AdmitResult result) {
                         ++answered;
                         EXPECT_NE(result.verdict, AdmitVerdict::kDegraded);
                         if (result.verdict == AdmitVerdict::kAdmitted) {
                           EXPECT_LE(result.inflight, kLimit);
                           ++admitted[g];
                           ++admitted_total;
                         }
                       });
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (answered < kAttemptsPerGateway && std::chrono::steady_clock::now() < deadline) {
        io.run_one_for(std::chrono::milliseconds(50));
      }
      EXPECT_EQ(answered, kAttemptsPerGateway);
      client.reset();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(admitted_total.load(), kLimit);

  // a sees the others' admissions; after every release the replica is empty again.
  const auto view = this->readOne(*gateways[0], "m1", "r1");
  EXPECT_EQ(view.others_running, admitted[1] + admitted[2]);
  EXPECT_EQ(view.live_gateways, 3);
  for (size_t g = 0; g < gateways.size(); ++g) {
    for (int i = 0; i < admitted[g]; ++i) gateways[g]->client->release("m1", "r1");
    this->flush(*gateways[g]);
  }
  EXPECT_EQ(this->readOne(*gateways[0], "m1", "r1").others_running, 0);
  const AdmitResult again = this->admit(*gateways[0], "r1", kLimit);
  EXPECT_EQ(again.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(again.inflight, 1);
}

TYPED_TEST(SharedStateContractTest, RefusalCountsNothingAndReleaseNeverGoesNegative) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  this->heartbeat(a);
  this->heartbeat(b);
  EXPECT_EQ(this->admit(a, "r1", 2).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->admit(a, "r1", 2).inflight, 2);
  for (int i = 0; i < 3; ++i) {
    const AdmitResult refused = this->admit(b, "r1", 2);
    EXPECT_EQ(refused.verdict, AdmitVerdict::kInflightLimit);
    EXPECT_EQ(refused.inflight, 2);
  }
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 0);  // b counted nothing
  a.client->release("m1", "r1");
  this->flush(a);
  const AdmitResult admitted = this->admit(b, "r1", 2);
  EXPECT_EQ(admitted.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(admitted.inflight, 2);
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 1);
  // More releases than admissions: b's count stops at zero and a's is untouched.
  for (int i = 0; i < 3; ++i) b.client->release("m1", "r1");
  this->flush(b);
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 0);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 1);
  // No limit: counted anyway.
  EXPECT_EQ(this->admit(b, "r1", 0).inflight, 2);
}

TYPED_TEST(SharedStateContractTest, LapsedHeartbeatStopsCounting) {
  Gateway& a = this->gateway("a");
  Gateway& c = this->gateway("c");
  this->heartbeat(a);
  this->heartbeat(c, this->harness_.shortTtl());
  EXPECT_EQ(this->admit(c, "r1", 3).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->admit(c, "r1", 3).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->admit(a, "r1", 3).inflight, 3);
  EXPECT_EQ(this->admit(a, "r1", 3).verdict, AdmitVerdict::kInflightLimit);
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 2);

  this->harness_.pass(this->harness_.shortTtl() * 3 / 2);  // c's heartbeat lapses
  const AdmitResult admitted = this->admit(a, "r1", 3);
  EXPECT_EQ(admitted.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(admitted.inflight, 2);  // a's own two; c's are ignored
  const auto view = this->readOne(a, "m1", "r1");
  EXPECT_EQ(view.others_running, 0);
  EXPECT_EQ(view.live_gateways, 1);
  // c counts itself still, and counts again for others once it heartbeats.
  EXPECT_EQ(this->admit(c, "r1", 0).inflight, 5);
  this->heartbeat(c);
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 3);
}

TYPED_TEST(SharedStateContractTest, RateLimitIsSharedAcrossGateways) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  Gateway& c = this->gateway("c");
  const AdmitRequest request{"m1", "r1", 0, /*rate_per_second=*/1, /*rate_burst=*/3};
  for (Gateway* g : {&a, &b, &c}) {
    EXPECT_EQ(this->run(g->client->admit(request)).verdict, AdmitVerdict::kAdmitted);
  }
  const AdmitResult limited = this->run(b.client->admit(request));
  EXPECT_EQ(limited.verdict, AdmitVerdict::kRateLimited);
  EXPECT_GT(limited.retry_after, 0);
  EXPECT_LE(limited.retry_after, kNsPerSec);
  EXPECT_EQ(limited.inflight, 1);  // b's own admission; no heartbeats, so only its own count
  EXPECT_EQ(this->run(a.client->admit(request)).verdict, AdmitVerdict::kRateLimited);

  this->harness_.pass(limited.retry_after + 50 * kNsPerMs);
  const AdmitResult after = this->run(c.client->admit(request));
  EXPECT_EQ(after.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(after.inflight, 2);
}

TYPED_TEST(SharedStateContractTest, ReadSumsOtherLiveGatewaysAndEveryonesTokens) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  Gateway& c = this->gateway("c");
  auto tokens = [](ReplicaReport r, int64_t base) {
    r.output_tokens = base;
    r.prefill_tokens = base * 2;
    r.prefill_ns = base * 3;
    r.tokenless_requests = base * 4;
    r.tokenless_latency_ns = base * 5;
    r.token_time_ns = base * 6;
    r.timed_tokens = base * 7;
    r.token_concurrency = base * 8;
    return r;
  };
  const std::vector<ReplicaReport> from_a = {tokens(report("m1", "r1", 5, true), 100),
                                             report("m2", "x", 4, true)};
  const std::vector<ReplicaReport> from_b = {tokens(report("m1", "r1", 3, true), 10),
                                             report("m2", "x", 6, true)};
  const std::vector<ReplicaReport> from_c = {tokens(report("m1", "r1", 7, true), 1)};
  EXPECT_TRUE(this->run(a.sync->publish(from_a, kLongTtl)));
  EXPECT_TRUE(this->run(b.sync->publish(from_b, kLongTtl)));
  EXPECT_TRUE(this->run(c.sync->publish(from_c, this->harness_.shortTtl())));
  // The request path owns r3's count here: publishing with publish_running false keeps it.
  EXPECT_EQ(this->admit(a, "r3", 0).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->admit(a, "r3", 0).verdict, AdmitVerdict::kAdmitted);
  const ReplicaReport a_r3 = report("m1", "r3", 99, false);
  EXPECT_TRUE(this->run(a.sync->publish({&a_r3, 1}, kLongTtl)));

  const std::vector<ReplicaReport> wanted = {report("m1", "r1"), report("m2", "x"),
                                             report("m1", "r3"), report("m1", "unknown")};
  auto views = this->run(a.sync->read(wanted));
  ASSERT_TRUE(views.has_value());
  ASSERT_EQ(views->size(), 4u);
  EXPECT_EQ((*views)[0].model, "m1");
  EXPECT_EQ((*views)[0].replica, "r1");
  EXPECT_EQ((*views)[0].others_running, 10);  // b and c, not a itself
  EXPECT_EQ((*views)[0].live_gateways, 3);
  EXPECT_EQ((*views)[1].replica, "x");
  EXPECT_EQ((*views)[1].others_running, 6);
  EXPECT_EQ((*views)[1].live_gateways, 2);
  EXPECT_EQ(this->readOne(b, "m1", "r3").others_running, 2);
  EXPECT_EQ((*views)[3].others_running, 0);
  EXPECT_EQ((*views)[3].output_tokens, 0);

  this->harness_.pass(this->harness_.shortTtl() * 3 / 2);  // c is no longer live
  views = this->run(a.sync->read(wanted));
  ASSERT_TRUE(views.has_value());
  const ReplicaGlobalView& r1 = (*views)[0];
  EXPECT_EQ(r1.others_running, 3);
  EXPECT_EQ(r1.live_gateways, 2);
  // Tokens: every gateway that reported, this one and the lapsed one included.
  EXPECT_EQ(r1.output_tokens, 111);
  EXPECT_EQ(r1.prefill_tokens, 222);
  EXPECT_EQ(r1.prefill_ns, 333);
  EXPECT_EQ(r1.tokenless_requests, 444);
  EXPECT_EQ(r1.tokenless_latency_ns, 555);
  EXPECT_EQ(r1.token_time_ns, 666);
  EXPECT_EQ(r1.timed_tokens, 777);
  EXPECT_EQ(r1.token_concurrency, 888);
}

TYPED_TEST(SharedStateContractTest, SessionPinRaceHasOneWinner) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  Gateway& c = this->gateway("c");
  // Both pins in flight together.
  std::vector<SessionPin> pins;
  for (auto [g, replica] : {std::pair{&a, "ra"}, std::pair{&b, "rb"}}) {
    asio::co_spawn(this->io_, g->client->pinSession("m1", "s1", "", replica, kLongTtl),
                   [&](std::exception_ptr, SessionPin pin) { pins.push_back(pin); });
  }
  this->io_.restart();
  for (int i = 0; i < 200 && pins.size() < 2; ++i) {
    this->io_.run_one_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_FALSE(pins[0].degraded);
  EXPECT_EQ(pins[0].replica, pins[1].replica);
  const std::string winner = pins[0].replica;
  EXPECT_TRUE(winner == "ra" || winner == "rb") << winner;
  EXPECT_EQ(this->run(c.client->lookupSession("m1", "s1", kLongTtl)).replica, winner);

  // Re-pinning needs the pin in force as `expected`.
  EXPECT_EQ(this->run(c.client->pinSession("m1", "s1", "stale", "rc", kLongTtl)).replica, winner);
  EXPECT_EQ(this->run(c.client->pinSession("m1", "s1", winner, "rc", kLongTtl)).replica, "rc");
  EXPECT_EQ(this->run(a.client->lookupSession("m1", "s1", kLongTtl)).replica, "rc");
  // Another model's session of the same name is separate.
  EXPECT_EQ(this->run(a.client->lookupSession("m2", "s1", kLongTtl)).replica, "");
}

TYPED_TEST(SharedStateContractTest, SessionTtlSlidesOnLookupThenExpires) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  const TimeNs ttl = this->harness_.shortTtl();
  EXPECT_EQ(this->run(a.client->pinSession("m1", "s1", "", "ra", ttl)).replica, "ra");
  this->harness_.pass(ttl * 6 / 10);
  EXPECT_EQ(this->run(b.client->lookupSession("m1", "s1", ttl)).replica, "ra");  // refreshed
  this->harness_.pass(ttl * 6 / 10);
  EXPECT_EQ(this->run(b.client->lookupSession("m1", "s1", ttl)).replica, "ra");
  this->harness_.pass(ttl * 3 / 2);
  const SessionPin expired = this->run(a.client->lookupSession("m1", "s1", ttl));
  EXPECT_FALSE(expired.degraded);
  EXPECT_EQ(expired.replica, "");
  EXPECT_EQ(this->run(b.client->pinSession("m1", "s1", "", "rb", ttl)).replica, "rb");
}

TYPED_TEST(SharedStateContractTest, JobRecordedByOneGatewayIsFoundByAnother) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  a.client->recordJob("batch_123", "m1", "r2", kLongTtl);
  a.client->recordJob("file_9", "m2", "r7", this->harness_.shortTtl());
  this->flush(a);
  const JobOwner owner = this->run(b.client->lookupJob("batch_123"));
  EXPECT_FALSE(owner.degraded);
  EXPECT_EQ(owner.model, "m1");
  EXPECT_EQ(owner.replica, "r2");
  EXPECT_EQ(this->run(b.client->lookupJob("file_9")).replica, "r7");
  const JobOwner unknown = this->run(b.client->lookupJob("nope"));
  EXPECT_FALSE(unknown.degraded);
  EXPECT_EQ(unknown.model, "");
  this->harness_.pass(this->harness_.shortTtl() * 3 / 2);
  EXPECT_EQ(this->run(b.client->lookupJob("file_9")).model, "");
  EXPECT_EQ(this->run(b.client->lookupJob("batch_123")).model, "m1");
  EXPECT_GT(b.client->stats().calls.load(), 0);
  EXPECT_EQ(b.client->stats().degraded.load(), 0);
}

TYPED_TEST(SharedStateContractTest, OneGatewayHoldsALeaseUntilItLapses) {
  Gateway& a = this->gateway("gw-a");
  Gateway& b = this->gateway("gw-b");
  const TimeNs ttl = this->harness_.shortTtl();
  EXPECT_EQ(this->run(a.sync->holdLease("scale-down", ttl)), std::optional<bool>(true));
  EXPECT_EQ(this->run(b.sync->holdLease("scale-down", ttl)), std::optional<bool>(false));
  EXPECT_EQ(this->run(a.sync->holdLease("scale-down", ttl)), std::optional<bool>(true));  // renew
  EXPECT_EQ(this->run(b.sync->holdLease("other-lease", ttl)), std::optional<bool>(true));
  this->harness_.pass(ttl + ttl / 2);  // a stops renewing: b takes over
  EXPECT_EQ(this->run(b.sync->holdLease("scale-down", ttl)), std::optional<bool>(true));
  EXPECT_EQ(this->run(a.sync->holdLease("scale-down", ttl)), std::optional<bool>(false));
}

TYPED_TEST(SharedStateContractTest, MarksAreSharedExpireAndCanBeRemoved) {
  Gateway& a = this->gateway("gw-a");
  Gateway& b = this->gateway("gw-b");
  const TimeNs ttl = this->harness_.shortTtl();
  EXPECT_TRUE(this->run(a.sync->putMark("drain", "10.0.0.2:8000", "pod-b", kLongTtl)));
  EXPECT_TRUE(this->run(a.sync->putMark("drain", "10.0.0.1:8000", "", kLongTtl)));
  EXPECT_TRUE(this->run(b.sync->putMark("drain", "10.0.0.3:8000", "pod c", ttl)));
  EXPECT_TRUE(this->run(b.sync->putMark("other-set", "x", "y", kLongTtl)));
  auto marks = this->run(b.sync->readMarks("drain"));
  ASSERT_TRUE(marks.has_value());
  ASSERT_EQ(marks->size(), 3u);
  EXPECT_EQ((*marks)[0].key, "10.0.0.1:8000");
  EXPECT_EQ((*marks)[0].value, "");
  EXPECT_EQ((*marks)[1].value, "pod-b");
  EXPECT_EQ((*marks)[2].value, "pod c");  // values may hold spaces
  EXPECT_TRUE(this->run(b.sync->putMark("drain", "10.0.0.1:8000", "", 0)));  // removed
  this->harness_.pass(ttl + ttl / 2);  // the short one expires
  marks = this->run(a.sync->readMarks("drain"));
  ASSERT_TRUE(marks.has_value());
  ASSERT_EQ(marks->size(), 1u);
  EXPECT_EQ((*marks)[0].key, "10.0.0.2:8000");
  marks = this->run(a.sync->readMarks("empty-set"));
  ASSERT_TRUE(marks.has_value());
  EXPECT_TRUE(marks->empty());
}

// --- Limits that hold from the first request (docs/shared-state.md) ---

TYPED_TEST(SharedStateContractTest, AGatewayCountsFromItsFirstAdmissionBeforeAnyHeartbeat) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  // Neither has published a heartbeat yet: the admissions themselves make them live.
  EXPECT_EQ(this->admitLive(a, 3).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->admitLive(a, 3).verdict, AdmitVerdict::kAdmitted);
  const AdmitResult third = this->admitLive(b, 3);
  EXPECT_EQ(third.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(third.inflight, 3);
  // a's count of the replica includes b's request at once, and the limit holds for both.
  EXPECT_EQ(this->admitLive(a, 3).verdict, AdmitVerdict::kInflightLimit);
  EXPECT_EQ(this->admitLive(b, 3).verdict, AdmitVerdict::kInflightLimit);
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 1);
  EXPECT_EQ(this->readOne(a, "m1", "r1").live_gateways, 2);
}

TYPED_TEST(SharedStateContractTest, WithoutALivenessTtlAnAdmissionMakesNobodyLive) {
  // The old contract stays available: a gateway that asks for no heartbeat renewal is counted
  // only once its sync has published one.
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  EXPECT_EQ(this->admitLive(b, 2, 0).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->readOne(a, "m1", "r1").others_running, 0);
  EXPECT_EQ(this->readOne(a, "m1", "r1").live_gateways, 1);
}

TYPED_TEST(SharedStateContractTest, ReconcileOverwritesTheSharedCountAndZeroRemovesIt) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  EXPECT_EQ(this->admitLive(a, 0).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->admitLive(a, 0).verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 2);
  // Without reconcile the request path's count is left alone...
  this->publishCount(a, 7, false);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 2);
  // ...with it, the gateway's own count replaces what the store held (e.g. after a lost
  // release), and a zero removes the entry.
  this->publishCount(a, 1, true);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 1);
  this->publishCount(a, 0, true);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 0);
  a.client->release("m1", "r1");  // a release after the reset never goes negative
  this->flush(a);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 0);
}

TYPED_TEST(SharedStateContractTest, ARetiredGatewayStopsCountingAtOnce) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  EXPECT_EQ(this->admitLive(a, 0).verdict, AdmitVerdict::kAdmitted);
  this->heartbeat(a);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 1);
  EXPECT_EQ(this->readOne(b, "m1", "r1").live_gateways, 2);
  const ReplicaReport r = report("m1", "r1");
  EXPECT_TRUE(this->run(a.sync->retire({&r, 1})));
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 0);
  EXPECT_EQ(this->readOne(b, "m1", "r1").live_gateways, 1);
}

TYPED_TEST(SharedStateContractTest, LiveGatewaysAgreeOnTheirRanks) {
  std::vector<Gateway*> all;
  for (const char* id : {"gw-c", "gw-a", "gw-b"}) {
    all.push_back(&this->gateway(id));
    this->heartbeat(*all.back());
  }
  std::set<int> ranks;
  for (Gateway* g : all) {
    const ReplicaGlobalView v = this->readOne(*g, "m1", "r1");
    EXPECT_EQ(v.live_gateways, 3);
    ranks.insert(v.gateway_rank);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(this->readOne(*all[1], "m1", "r1").gateway_rank, 0);  // "gw-a" sorts first
  EXPECT_EQ(this->readOne(*all[0], "m1", "r1").gateway_rank, 2);
}

TYPED_TEST(SharedStateContractTest, AKeysRequestBudgetIsSharedAcrossGateways) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  const QuotaRequest q{"alice", /*rpm=*/3, /*tpm=*/0, /*tokens=*/10};
  QuotaResult first = this->run(a.client->checkQuota(q));
  ASSERT_FALSE(first.degraded);
  EXPECT_EQ(first.answer.verdict, QuotaVerdict::kAdmitted);
  EXPECT_EQ(first.answer.remaining_requests, 2);
  EXPECT_EQ(first.answer.remaining_tokens, -1);  // no token budget
  EXPECT_EQ(this->run(b.client->checkQuota(q)).answer.remaining_requests, 1);
  EXPECT_EQ(this->run(a.client->checkQuota(q)).answer.remaining_requests, 0);
  const QuotaResult refused = this->run(b.client->checkQuota(q));
  EXPECT_EQ(refused.answer.verdict, QuotaVerdict::kRequestLimit);
  EXPECT_EQ(refused.answer.remaining_requests, 0);
  // One request refills every 20 s: the next fits after at most that.
  EXPECT_GT(refused.answer.retry_after, 0);
  EXPECT_LE(refused.answer.retry_after, 20 * kNsPerSec);
  EXPECT_GT(refused.answer.reset_requests, 40 * kNsPerSec);
  // Another key has its own budget.
  EXPECT_EQ(this->run(b.client->checkQuota(QuotaRequest{"bob", 3, 0, 0})).answer.verdict,
            QuotaVerdict::kAdmitted);
}

TYPED_TEST(SharedStateContractTest, ATokenBudgetIsDebitedAtAdmissionAndSettledAtCompletion) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  const QuotaRequest q{"alice", /*rpm=*/100, /*tpm=*/1000, /*tokens=*/600};
  const QuotaResult first = this->run(a.client->checkQuota(q));
  EXPECT_EQ(first.answer.verdict, QuotaVerdict::kAdmitted);
  EXPECT_EQ(first.answer.remaining_requests, 99);
  EXPECT_NEAR(static_cast<double>(first.answer.remaining_tokens), 400, 2);
  // 600 more do not fit: refused by tokens, and the request is not counted either.
  const QuotaResult refused = this->run(b.client->checkQuota(q));
  EXPECT_EQ(refused.answer.verdict, QuotaVerdict::kTokenLimit);
  EXPECT_EQ(refused.answer.remaining_requests, 99);
  EXPECT_GT(refused.answer.retry_after, 0);
  // The first request used 100 tokens, not 600: 500 come back and the second fits.
  a.client->settleQuota("alice", 1000, 100 - 600);
  this->flush(a);
  const QuotaResult second = this->run(b.client->checkQuota(q));
  EXPECT_EQ(second.answer.verdict, QuotaVerdict::kAdmitted);
  EXPECT_NEAR(static_cast<double>(second.answer.remaining_tokens), 300, 2);
  // A request larger than the whole budget passes on a full bucket only.
  const QuotaResult huge = this->run(a.client->checkQuota(QuotaRequest{"carol", 0, 1000, 5000}));
  EXPECT_EQ(huge.answer.verdict, QuotaVerdict::kAdmitted);
  EXPECT_EQ(huge.answer.remaining_tokens, 0);
}

TYPED_TEST(SharedStateContractTest, AnAdmissionCarriesTheKeysBudgetInTheSameCall) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  this->heartbeat(a);  // in-flight counts hold across live gateways only
  this->heartbeat(b);
  const QuotaRequest q{"alice", /*rpm=*/2, /*tpm=*/0, /*tokens=*/5};
  AdmitRequest request{"m1", "r1", /*max_inflight=*/1};
  request.quota = &q;
  const AdmitResult admitted = this->run(a.client->admit(request));
  EXPECT_EQ(admitted.verdict, AdmitVerdict::kAdmitted);
  EXPECT_EQ(admitted.quota.remaining_requests, 1);
  // The replica is full: refused by the in-flight limit, and the key's budget is untouched.
  const AdmitResult full = this->run(b.client->admit(request));
  EXPECT_EQ(full.verdict, AdmitVerdict::kInflightLimit);
  a.client->release("m1", "r1");
  this->flush(a);
  EXPECT_EQ(this->run(b.client->admit(request)).quota.remaining_requests, 0);
  b.client->release("m1", "r1");
  this->flush(b);
  // The key's budget is spent: refused for it, and the replica counts nothing.
  const AdmitResult limited = this->run(a.client->admit(request));
  EXPECT_EQ(limited.verdict, AdmitVerdict::kQuotaLimited);
  EXPECT_EQ(limited.quota.verdict, QuotaVerdict::kRequestLimit);
  EXPECT_GT(limited.quota.retry_after, 0);
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 0);
  // The quota-only call sees the same budget.
  EXPECT_EQ(this->run(b.client->checkQuota(q)).answer.verdict, QuotaVerdict::kRequestLimit);
}

ReplicaReport heartbeatOnly(std::string model) {
  ReplicaReport r;
  r.model = std::move(model);
  r.heartbeat_only = true;
  return r;
}

TYPED_TEST(SharedStateContractTest, ReadChangesAnswersOnlyWhatChanged) {
  Gateway& a = this->gateway("gw-a");
  Gateway& b = this->gateway("gw-b");
  const ReplicaReport hb = heartbeatOnly("m1");
  ASSERT_TRUE(this->run(a.sync->publish({&hb, 1}, kLongTtl)));
  ASSERT_TRUE(this->run(b.sync->publish({&hb, 1}, kLongTtl)));
  ChangeQuery query{"m1", {}};
  auto readA = [&] {
    auto answer = this->run(a.sync->readChanges({&query, 1}));
    EXPECT_TRUE(answer.has_value());
    if (!answer || answer->size() != 1) return ModelChanges{};
    query.cursor = (*answer)[0].cursor;
    return (*answer)[0];
  };
  ModelChanges changes = readA();
  EXPECT_TRUE(changes.full);  // a new cursor reads everything
  EXPECT_TRUE(changes.replicas.empty());
  EXPECT_EQ(changes.live_gateways, 2);
  EXPECT_EQ(changes.gateway_rank, 0);
  changes = readA();
  EXPECT_FALSE(changes.full);
  EXPECT_TRUE(changes.replicas.empty());

  // An admission elsewhere: that replica alone.
  EXPECT_EQ(this->admit(b, "r1", 0).verdict, AdmitVerdict::kAdmitted);
  changes = readA();
  ASSERT_EQ(changes.replicas.size(), 1u);
  EXPECT_EQ(changes.replicas[0].replica, "r1");
  EXPECT_EQ(changes.replicas[0].others_running, 1);
  EXPECT_TRUE(readA().replicas.empty());
  // A release: r1 again.
  b.client->release("m1", "r1");
  this->flush(b);
  changes = readA();
  ASSERT_EQ(changes.replicas.size(), 1u);
  EXPECT_EQ(changes.replicas[0].others_running, 0);
  // A publish that writes r2's tokens.
  ReplicaReport r2 = report("m1", "r2");
  r2.output_tokens = 40;
  ASSERT_TRUE(this->run(b.sync->publish({&r2, 1}, kLongTtl)));
  changes = readA();
  ASSERT_EQ(changes.replicas.size(), 1u);
  EXPECT_EQ(changes.replicas[0].replica, "r2");
  EXPECT_EQ(changes.replicas[0].output_tokens, 40);
  // The live set changes: everything with counts, whatever the cursor.
  Gateway& c = this->gateway("gw-c");
  ASSERT_TRUE(this->run(c.sync->publish({&hb, 1}, kLongTtl)));
  changes = readA();
  EXPECT_TRUE(changes.full);
  EXPECT_EQ(changes.live_gateways, 3);
  std::set<std::string> names;
  for (const auto& v : changes.replicas) names.insert(v.replica);
  EXPECT_EQ(names, (std::set<std::string>{"r1", "r2"}));
}

TYPED_TEST(SharedStateContractTest, HeartbeatOnlyReportsWriteNoCounts) {
  Gateway& a = this->gateway("a");
  Gateway& b = this->gateway("b");
  this->heartbeat(b);
  ReplicaReport counted = report("m1", "r1", 3, true);
  counted.output_tokens = 7;
  ASSERT_TRUE(this->run(a.sync->publish({&counted, 1}, kLongTtl)));
  EXPECT_EQ(this->readOne(b, "m1", "r1").others_running, 3);
  ReplicaReport hb = heartbeatOnly("m1");
  hb.replica = "r1";  // ignored
  hb.publish_running = true;
  ASSERT_TRUE(this->run(a.sync->publish({&hb, 1}, kLongTtl)));
  const ReplicaGlobalView view = this->readOne(b, "m1", "r1");
  EXPECT_EQ(view.others_running, 3);
  EXPECT_EQ(view.output_tokens, 7);
  EXPECT_EQ(view.live_gateways, 2);
}

TYPED_TEST(SharedStateContractTest, SignalBatchesReachTheOtherGatewaysOnce) {
  Gateway& a = this->gateway("gw-a");
  Gateway& b = this->gateway("gw-b");
  auto first = this->run(a.sync->exchangeSignals("r1 1 0 0.5 - 3\n", "", kLongTtl));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->live_gateways, (std::vector<std::string>{"gw-a"}));
  EXPECT_TRUE(first->batches.empty());  // its own batch is not answered to it
  auto seen = this->run(b.sync->exchangeSignals("", "", kLongTtl));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->live_gateways, (std::vector<std::string>{"gw-a", "gw-b"}));
  ASSERT_EQ(seen->batches.size(), 1u);
  EXPECT_EQ(seen->batches[0].gateway, "gw-a");
  EXPECT_EQ(seen->batches[0].payload, "r1 1 0 0.5 - 3\n");
  EXPECT_GE(seen->batches[0].age_ms, 0);
  EXPECT_LT(seen->batches[0].age_ms, 1000);
  // Once read, not again; a's next batch only.
  auto again = this->run(b.sync->exchangeSignals("", seen->cursor, kLongTtl));
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->batches.empty());
  ASSERT_TRUE(this->run(a.sync->exchangeSignals("r1 2 0 0.5 - 1\n", first->cursor, kLongTtl)));
  auto next = this->run(b.sync->exchangeSignals("", again->cursor, kLongTtl));
  ASSERT_TRUE(next.has_value());
  ASSERT_EQ(next->batches.size(), 1u);
  EXPECT_EQ(next->batches[0].payload, "r1 2 0 0.5 - 1\n");
}

TYPED_TEST(SharedStateContractTest, ATelemetryHeartbeatLapses) {
  Gateway& a = this->gateway("gw-a");
  Gateway& c = this->gateway("gw-c");
  ASSERT_TRUE(this->run(c.sync->exchangeSignals("", "", this->harness_.shortTtl())));
  auto both = this->run(a.sync->exchangeSignals("", "", kLongTtl));
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->live_gateways.size(), 2u);
  this->harness_.pass(this->harness_.shortTtl() * 3 / 2);
  auto alone = this->run(a.sync->exchangeSignals("", both->cursor, kLongTtl));
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->live_gateways, (std::vector<std::string>{"gw-a"}));
}

}  // namespace
}  // namespace switchyard::state::testing
