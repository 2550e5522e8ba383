// SharedState: the routing state several gateway instances must agree on.
//
// Two roles, two interfaces:
//  - SharedStateClient: the request path. One instance per worker thread, used only from that
//    worker's io_context. Every call completes within the client's deadline: when the backend is
//    slow or unreachable the result says `degraded` and the caller decides locally. No call
//    blocks a thread; calls issued together are pipelined.
//  - SharedStateSync: the control plane. Publishes this gateway's heartbeat and per-replica
//    counts, and reads every live gateway's, off the request path.
//
// Backends: memory (one gateway; also lets tests run several "gateways" in one process) and
// Redis (src/state/redis/). Both satisfy the contract tests in tests/redis/.
//
// Keys are grouped per model with a hash tag ("sy:{model}:…"), so a Redis Cluster keeps all keys
// one script touches on one shard.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace switchyard::state {

// Counters each client and sync keeps for /metrics. Written by its own thread, read by the
// metrics scrape on another: relaxed atomics.
struct SharedStateStats {
  // Upper bounds (ns) of the call latency histogram's buckets; the last bucket is +Inf.
  static constexpr std::array<TimeNs, 9> kLatencyBounds = {
      50'000, 100'000, 200'000, 500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000,
      50'000'000};
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> degraded{0};    // calls answered `degraded` (timeout, disconnected, error)
  std::atomic<int64_t> reconnects{0};  // successful connections after the first
  std::atomic<int64_t> latency_ns_total{0};  // of answered calls
  std::array<std::atomic<int64_t>, kLatencyBounds.size() + 1> latency_buckets{};
  std::atomic<bool> connected{false};

  void recordLatency(TimeNs ns) {
    latency_ns_total.fetch_add(ns, std::memory_order_relaxed);
    size_t b = 0;
    while (b < kLatencyBounds.size() && ns > kLatencyBounds[b]) ++b;
    latency_buckets[b].fetch_add(1, std::memory_order_relaxed);
  }
};

// An API key's per-minute budgets (docs/security.md), checked and debited atomically across
// gateways: requests per minute and tokens per minute, each a bucket of one minute's worth that
// refills continuously (the same arithmetic as auth/quota_bucket.h). Keyed by the key's name.
struct QuotaRequest {
  std::string_view key;  // the key's name
  int64_t rpm = 0;       // requests per minute; 0: no request budget
  int64_t tpm = 0;       // tokens per minute; 0: no token budget
  int64_t tokens = 0;    // this request's estimate, debited now (settleQuota corrects it)
};

enum class QuotaVerdict : uint8_t {
  kAdmitted,      // both budgets debited
  kRequestLimit,  // requests per minute exhausted: nothing was debited
  kTokenLimit,    // tokens per minute exhausted: nothing was debited
};

struct QuotaAnswer {
  QuotaVerdict verdict = QuotaVerdict::kAdmitted;
  int64_t remaining_requests = -1;  // after this request; -1: no request budget
  int64_t remaining_tokens = -1;    // -1: no token budget
  TimeNs retry_after = 0;           // refused: when the request would fit
  TimeNs reset_requests = 0;        // until each bucket is full again
  TimeNs reset_tokens = 0;
};

struct QuotaResult {
  bool degraded = true;  // no answer in time: decide locally (this gateway's share)
  QuotaAnswer answer;
};

// One admission on the chosen replica, checked and counted atomically across gateways.
struct AdmitRequest {
  std::string_view model;
  std::string_view replica;
  int64_t max_inflight = 0;      // per replica, across live gateways; 0: count only, no limit
  double rate_per_second = 0;    // model-wide, across gateways; 0: no shared rate limit
  double rate_burst = 1;         // requests the model-wide rate limit lets through at once
  // When above 0, the admission also renews this gateway's heartbeat for this long, so the
  // others count its requests from its very first admission (not only after its first sync).
  TimeNs liveness_ttl = 0;
  // An API key's budgets checked in the same call (one round trip): admitted only if they allow
  // it too, and then debited.
  const QuotaRequest* quota = nullptr;
};

enum class AdmitVerdict : uint8_t {
  kAdmitted,       // counted: call release() when the request ends
  kInflightLimit,  // the replica is at its limit across gateways: nothing was counted
  kRateLimited,    // the model-wide rate is exceeded: nothing was counted
  kDegraded,       // the backend did not answer in time: decide locally; nothing is counted
  kQuotaLimited,   // the key's budget refused (`quota` says which): nothing was counted
};

struct AdmitResult {
  AdmitVerdict verdict = AdmitVerdict::kDegraded;
  int64_t inflight = 0;     // the replica's in-flight count across live gateways after the call
  TimeNs retry_after = 0;   // kRateLimited: when a request would next be let through
  QuotaAnswer quota;        // with AdmitRequest::quota: the key's budgets after the call
};

// In-flight slots of one replica leased to the calling worker (see SharedStateClient::growSlots).
struct SlotRequest {
  std::string_view model;
  std::string_view replica;
  int64_t max_inflight = 0;  // per replica, across live gateways (> 0)
  int64_t wanted = 1;        // slots asked for; fewer may be granted
  TimeNs liveness_ttl = 0;   // as AdmitRequest::liveness_ttl
  // An API key's budgets checked in the same call: slots are leased only if they allow the
  // request too, and then debited.
  const QuotaRequest* quota = nullptr;
};

struct SlotGrant {
  bool degraded = true;  // no answer in time: decide locally; nothing was leased
  int64_t granted = 0;   // slots added to this worker's lease (0: at the limit, or the quota)
  int64_t held = 0;      // this worker's leased slots in shared state after the call
  QuotaAnswer quota;     // with SlotRequest::quota, when the limit left room: the key's budgets
};

// Where a session is pinned. `replica` empty: not pinned.
struct SessionPin {
  bool degraded = false;
  std::string replica;
};

// Which replica owns a server-side resource (batch, file, background response).
struct JobOwner {
  bool degraded = false;
  std::string model;    // empty: unknown id
  std::string replica;
};

class SharedStateClient {
 public:
  virtual ~SharedStateClient() = default;

  // True when the state is shared with other gateways (Redis); false for the memory backend,
  // whose in-flight and rate admission the gateway's own atomics already decide.
  virtual bool distributed() const = 0;

  virtual boost::asio::awaitable<AdmitResult> admit(const AdmitRequest& request) = 0;
  // Undoes one kAdmitted admission. Fire and forget: never waits.
  virtual void release(std::string_view model, std::string_view replica) = 0;

  // Slot leases (admission/inflight_slots.h): leases up to `wanted` more of the replica's
  // in-flight slots to this client's worker, as many as fit under the limit across the live
  // gateways (the others' leases and request-by-request counts included). The default answers
  // `degraded`: a backend that is not shared has nothing to lease.
  virtual boost::asio::awaitable<SlotGrant> growSlots(const SlotRequest& request);
  // Adds `delta` slots to this worker's lease of the replica (negative: gives them back).
  // Fire and forget.
  virtual void changeSlots(std::string_view model, std::string_view replica, int64_t delta);

  // The session's pin, refreshing its sliding TTL.
  virtual boost::asio::awaitable<SessionPin> lookupSession(std::string_view model,
                                                           std::string_view session,
                                                           TimeNs ttl) = 0;
  // Pins the session to `replica` if it is unpinned or still pinned to `expected` (empty:
  // expects unpinned), atomically; answers with the pin in force afterwards, which is another
  // gateway's choice when it won the race.
  virtual boost::asio::awaitable<SessionPin> pinSession(std::string_view model,
                                                        std::string_view session,
                                                        std::string_view expected,
                                                        std::string_view replica,
                                                        TimeNs ttl) = 0;

  // Records which replica owns a resource id. Fire and forget.
  virtual void recordJob(std::string_view job_id, std::string_view model,
                         std::string_view replica, TimeNs ttl) = 0;
  virtual boost::asio::awaitable<JobOwner> lookupJob(std::string_view job_id) = 0;

  // An API key's budgets alone (when no shared admission carries them). The default answers
  // `degraded`: a backend without shared budgets leaves them to each gateway.
  virtual boost::asio::awaitable<QuotaResult> checkQuota(const QuotaRequest& request);
  // Adds `delta_tokens` (negative: refunds) to a key's token budget of `tpm` per minute, once a
  // request's real usage is known. Fire and forget.
  virtual void settleQuota(std::string_view key, int64_t tpm, int64_t delta_tokens);

  virtual const SharedStateStats& stats() const = 0;
};

// One replica as this gateway reports it. The token counters are cumulative since this gateway
// started (the inputs of capacity learning, see fleet/capacity_estimator.h).
struct ReplicaReport {
  std::string model;
  std::string replica;
  int64_t running = 0;
  bool publish_running = true;  // false when the request path keeps this count (in-flight limit)
  // Overwrite this gateway's shared count with `running` even when the request path keeps it:
  // after shared state lost it (a restarted Redis) or when it may have drifted (a release lost
  // with its connection). The sync asks for it only when the count is not moving.
  bool reconcile_running = false;
  int64_t output_tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t prefill_ns = 0;
  int64_t tokenless_requests = 0;
  int64_t tokenless_latency_ns = 0;
  int64_t token_time_ns = 0;  // time per output token: time spent on the timed tokens...
  int64_t timed_tokens = 0;   // ...and their count
  int64_t token_concurrency = 0;  // ...and the concurrency they were produced at
  // Only the model matters: its heartbeat is renewed, no count is written (`replica` is ignored).
  // A sync that publishes only what changed sends one per model.
  bool heartbeat_only = false;
  // The counts equal what this gateway last published: written again only to keep their keys
  // from expiring, not a change that readers of changes must see.
  bool refresh_only = false;
};

// One replica as all gateways see it together.
struct ReplicaGlobalView {
  std::string model;
  std::string replica;
  int64_t others_running = 0;  // summed over the other *live* gateways
  // Summed over every gateway that ever reported (cumulative; may drop when an idle gateway's
  // entry expires, which the capacity estimator treats as a counter reset).
  int64_t output_tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t prefill_ns = 0;
  int64_t tokenless_requests = 0;
  int64_t tokenless_latency_ns = 0;
  int64_t token_time_ns = 0;
  int64_t timed_tokens = 0;
  int64_t token_concurrency = 0;
  int live_gateways = 1;  // gateways with a current heartbeat for this model, this one included
  int gateway_rank = 0;   // this gateway's position among them, ordered by id
};

// Where a reader is in a model's changes (SharedStateSync::readChanges).
struct ChangeCursor {
  int64_t version = -1;        // -1: nothing read yet, answer everything
  std::string live_signature;  // the live set it last saw
};

struct ChangeQuery {
  std::string model;
  ChangeCursor cursor;
};

// What changed in one model since a cursor.
struct ModelChanges {
  std::string model;
  // The live set differs from the cursor's, the cursor was new, or shared state lost its
  // history: `replicas` lists every replica with counts, and any other has none.
  bool full = false;
  int live_gateways = 1;  // this one included
  int gateway_rank = 0;
  std::vector<ReplicaGlobalView> replicas;  // changed since the cursor
  ChangeCursor cursor;                      // pass to the next read
};

// Telemetry sharing (gateway/telemetry_share.h): each gateway appends the signals it scraped as
// one opaque batch and reads the batches the others appended since its cursor.
struct SignalBatch {
  std::string gateway;  // who appended it
  int64_t age_ms = 0;   // how long ago it was appended (backend clock)
  std::string payload;
};

struct SignalExchange {
  // Gateways with a current telemetry heartbeat, this one included, sorted.
  std::vector<std::string> live_gateways;
  std::vector<SignalBatch> batches;  // the others' batches after the cursor, oldest first
  std::string cursor;                // pass to the next exchange
};

// One entry of a coordination set (SharedStateSync::readMarks).
struct Mark {
  std::string key;
  std::string value;
};

class SharedStateSync {
 public:
  virtual ~SharedStateSync() = default;
  virtual bool distributed() const = 0;

  // Coordination for control-plane decisions that every gateway must take the same way (an
  // operator's drain, the scale-down victim). Off the request path; same deadline as publish.
  //
  // Takes the lease `name` for this gateway if it is free or already this gateway's, for `ttl`
  // (renewing it); true if this gateway holds it afterwards, false if another one does, nullopt
  // if the backend did not answer.
  virtual boost::asio::awaitable<std::optional<bool>> holdLease(std::string_view name,
                                                                TimeNs ttl) = 0;
  // Sets `key` in the set `set` to `value` for `ttl` (<= 0: removes it). False if the backend
  // did not answer.
  virtual boost::asio::awaitable<bool> putMark(std::string_view set, std::string_view key,
                                               std::string_view value, TimeNs ttl) = 0;
  // Every unexpired entry of `set`, ordered by key; nullopt if the backend did not answer.
  virtual boost::asio::awaitable<std::optional<std::vector<Mark>>> readMarks(
      std::string_view set) = 0;

  // Heartbeat (valid for `liveness_ttl`) and this gateway's counts, in one pipelined batch.
  // False if the backend did not answer within the deadline.
  virtual boost::asio::awaitable<bool> publish(std::span<const ReplicaReport> reports,
                                               TimeNs liveness_ttl) = 0;
  // Every live gateway's view of the given replicas (same order as `replicas`; model and
  // replica names only are read from them). nullopt if the backend did not answer in time.
  virtual boost::asio::awaitable<std::optional<std::vector<ReplicaGlobalView>>> read(
      std::span<const ReplicaReport> replicas) = 0;
  // Like read(), but per model only the replicas whose counts changed (an admission, a release,
  // a publish that wrote them) since the query's cursor: the cost follows the traffic, not the
  // fleet size. nullopt if the backend did not answer in time.
  virtual boost::asio::awaitable<std::optional<std::vector<ModelChanges>>> readChanges(
      std::span<const ChangeQuery> queries) = 0;
  // A gateway leaving for good (shutdown, its requests finished): removes its heartbeat and its
  // in-flight counts on the given replicas, so nobody counts them for a liveness period more.
  // False if the backend did not answer within the deadline.
  virtual boost::asio::awaitable<bool> retire(std::span<const ReplicaReport> replicas) = 0;

  // One telemetry round trip: renews this gateway's telemetry heartbeat (valid for
  // `liveness_ttl`), appends `payload` unless it is empty, and answers the live set and the
  // others' batches after `cursor` (empty: those of the last second). Batches are kept for
  // kSignalRetention. nullopt if the backend did not answer within the deadline.
  virtual boost::asio::awaitable<std::optional<SignalExchange>> exchangeSignals(
      std::string_view payload, std::string_view cursor, TimeNs liveness_ttl) = 0;

  virtual const SharedStateStats& stats() const = 0;
};

// How long appended signal batches stay readable.
inline constexpr TimeNs kSignalRetention = 10 * kNsPerSec;
// At most this many batches are answered per exchange.
inline constexpr size_t kMaxSignalBatches = 1000;

struct SharedStateSettings {
  enum class Backend : uint8_t { kMemory, kRedis };
  Backend backend = Backend::kMemory;
  std::string address = "127.0.0.1:6379";   // redis: host:port
  std::string password;                      // redis AUTH, optional
  int database = 0;                          // redis SELECT
  TimeNs call_timeout = 5 * kNsPerMs;        // request-path calls (admit, sessions, jobs)
  TimeNs sync_timeout = 200 * kNsPerMs;      // control-plane calls
  TimeNs reconnect_min = 100 * kNsPerMs;     // reconnect backoff, doubling up to the max
  TimeNs reconnect_max = 5 * kNsPerSec;
  std::string key_prefix = "sy";
};

// A backend: hands out one client per worker and one sync for the control plane. The gateway
// id tells this gateway's counts apart from the others'.
class SharedStateBackend {
 public:
  virtual ~SharedStateBackend() = default;
  virtual std::unique_ptr<SharedStateClient> makeClient(boost::asio::any_io_executor executor) = 0;
  virtual std::unique_ptr<SharedStateSync> makeSync(boost::asio::any_io_executor executor) = 0;
  virtual const std::string& gatewayId() const = 0;
};

// `gateway_id` empty: a random one. The memory backend ignores the address.
std::shared_ptr<SharedStateBackend> makeBackend(const SharedStateSettings& settings,
                                                std::string gateway_id = {});

}  // namespace switchyard::state
