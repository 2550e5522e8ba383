// ReplicaState: the long-lived, mutable record of one engine replica.
//
// It outlives fleet snapshots: a config reload that keeps a replica keeps its ReplicaState, so
// counters and in-flight accounting carry over. Hot-path workers change the counters with
// relaxed atomics (each group on its own cache line); the telemetry scraper on the control thread
// writes the engine signals. Readers may see signal fields from two consecutive scrapes mixed,
// which is harmless for routing. Held by shared_ptr so a request in flight keeps its replica alive
// across a reload that removes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "fleet/engine_signals.h"

namespace switchyard::fleet {

// Three cache lines, grouped by who reads them together: the first has what routing, admission
// and the health manager's tick read (a fleet of thousands is ticked ten times a second), the
// second the rest of what capacity learning reads, the third what is read rarely.
struct alignas(64) ReplicaCounters {
  // Line 0.
  std::atomic<int64_t> running{0};  // requests this gateway has in flight on the replica
  // Prompt tokens of this gateway's streamed requests on the replica that have not yet produced
  // their first byte: prefill queued or running there, which a newcomer's prefill waits behind
  // (SLO routing adds it to the predicted TTFT, deadline admission to the predicted execution).
  // Added when the request is sent, taken back at its first body byte or when the attempt ends
  // without one.
  std::atomic<int64_t> prefill_pending_tokens{0};
  std::atomic<int64_t> requests_total{0};  // requests routed to the replica
  // Request outcomes for health: failures the replica is responsible for (connect errors, resets,
  // 5xx, timeouts, truncated streams); client errors (4xx) are successes here.
  std::atomic<int64_t> outcome_successes_total{0};
  std::atomic<int64_t> outcome_failures_total{0};
  std::atomic<int64_t> consecutive_failures{0};
  // Speed per output token of successful responses (after the first byte for streams), for
  // spotting a degraded replica among peers of the same GPU type.
  std::atomic<int64_t> token_time_ns_total{0};
  std::atomic<int64_t> timed_tokens_total{0};
  // Line 1: the rest of capacity learning's inputs, added when a request completes.
  std::atomic<int64_t> output_tokens_total{0};
  std::atomic<int64_t> prefill_tokens_total{0};  // prompt tokens of streamed requests...
  std::atomic<int64_t> prefill_ns_total{0};      // ...and their time to first byte
  std::atomic<int64_t> tokenless_requests_total{0};  // work units completed with no output tokens
  std::atomic<int64_t> tokenless_latency_ns_total{0};  // (embeddings): their latency
  // The concurrency the timed tokens were produced at: Σ timed tokens × (requests in flight on
  // the replica across gateways when the response started + when it ended), i.e. twice the
  // token-weighted mean concurrency times the tokens. Pairs each response's speed with its own
  // load for the batching-curve fit.
  std::atomic<int64_t> token_concurrency_total{0};
  std::atomic<int64_t> input_tokens_total{0};
  std::atomic<int64_t> upstream_errors_total{0};
  // Line 2.
  // Of `running`: requests still waiting for shared state to lease them a slot (growSlots). The
  // sync publishes running without them: one that is refused never reaches the replica, and the
  // other gateways must not turn requests away for it meanwhile.
  std::atomic<int64_t> awaiting_slot{0};
  // Health transitions (control thread): exclusions and returns to healthy.
  std::atomic<int64_t> health_exclusions_total{0};
  std::atomic<int64_t> health_recoveries_total{0};
  // What a replica would take with it if it were removed (scale-down's victim choice): requests
  // that followed a session's pin to it, and async resources created on it.
  std::atomic<int64_t> affinity_requests_total{0};
  std::atomic<int64_t> jobs_created_total{0};
  // Bumped each time shared state was given this gateway's whole `running` count for the replica
  // (after a reconnect, or when quiet): requests admitted locally while shared state was away
  // are in shared state's count from then on and must be released there too.
  std::atomic<int64_t> shared_count_epoch{0};
};

// A replica's routing health (docs/operations.md). Written by the control thread's health
// manager, read by the routing filters on every request.
enum class HealthState : uint8_t {
  kHealthy = 0,
  kExcluded = 1,  // out of rotation until its backoff ends
  kHalfOpen = 2,  // backoff over: one trial request at a time, plus probes
};

// Why a replica is excluded (the last reason wins).
enum class HealthReason : uint8_t {
  kNone = 0,
  kRequestFailures,  // repeated upstream failures, confirmed by a probe (or overwhelming)
  kProbeFailures,    // background probes failed
  kLoadOutlier,      // load far above the fleet's, relative to its capacity
  kSlowOutlier,      // time per output token far above its same-GPU peers' (degraded GPU)
  kHalfOpenFailure,  // the trial request or probe after a backoff failed
};

// Why a replica takes no new requests although it is in the fleet (bits; 0: it may be routed
// to). Discovery writes the first three from the Pod on every fleet change; an operator's drain
// (POST /admin/drain, shared between gateways) writes kDrainRequested. Requests in flight finish,
// a session pinned to the replica re-pins on its next request, async jobs stay reachable while
// the replica is in the fleet.
enum LifecycleFlag : uint8_t {
  kNotReady = 1,        // the Pod is not Ready (excluded at once; back under slow start)
  kTerminating = 2,     // the Pod has a deletionTimestamp: it is going away
  kDrainLabel = 4,      // the Pod carries aibrix.ai/draining=true
  kDrainRequested = 8,  // an operator (or drain-wait) asked for a drain
};
inline constexpr uint8_t kDiscoveryFlags = kNotReady | kTerminating | kDrainLabel;
inline constexpr uint8_t kDrainingFlags = kTerminating | kDrainLabel | kDrainRequested;
inline constexpr uint8_t kLifecycleFlags = kNotReady | kDrainingFlags;

// "active", "draining" (any draining bit) or "not_ready", for views and metrics.
std::string_view lifecycleName(uint8_t flags);
// The set bits as a JSON array of names: ["terminating","drain_label"].
void appendLifecycleReasons(std::string& out, uint8_t flags);

// The concurrency (streams in flight) at which a replica's decode capacity is stated, and the
// reference of its utilisation: the usual vLLM batch a gateway aims for.
inline constexpr double kReferenceConcurrency = 64;

// What the capacity estimator has learned about a replica; NaN while unknown.
struct LearnedCapacity {
  double decode = std::numeric_limits<double>::quiet_NaN();   // output tokens/s, or requests/s
                                                              // for tokenless (embedding) work
  double prefill = std::numeric_limits<double>::quiet_NaN();  // prompt tokens/s
  bool tokenless = false;  // `decode` is inverse request latency, not tokens/s
  // Shape of the batching curve: time per token t(n) = t(0)·(1 + slowdown·n) with n streams in
  // flight (1/slowdown is the concurrency at which the time per token doubles). 0: flat. NaN
  // until a fit over known concurrencies exists.
  double slowdown = std::numeric_limits<double>::quiet_NaN();
};

class ReplicaState {
 public:
  ReplicaState(std::string name, std::string host, uint16_t port)
      : name_(std::move(name)),
        host_(std::move(host)),
        port_(port),
        name_hash_(hashName(name_)) {}
  ReplicaState(const ReplicaState&) = delete;
  ReplicaState& operator=(const ReplicaState&) = delete;

  const std::string& name() const { return name_; }  // "host:port" for static replicas
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  // A hash of name() that every gateway computes alike (FNV-1a), for choices several gateways
  // must agree on without talking (e.g. admission shares while shared state is away).
  uint64_t nameHash() const { return name_hash_; }
  // How the gateway reaches it: over TLS (an https:// replica), and with which Authorization
  // value ("" none). Set once by the registry before the replica is published; immutable after
  // (a change of either makes the registry create a new record).
  void setUpstreamAccess(bool tls, std::string authorization) {
    tls_ = tls;
    authorization_ = std::move(authorization);
  }
  bool upstreamTls() const { return tls_; }
  const std::string& authorization() const { return authorization_; }

  ReplicaCounters& counters() { return counters_; }
  const ReplicaCounters& counters() const { return counters_; }

  // Requests in flight on the replica across every live gateway: this gateway's own count plus
  // the others' as last read from shared state (0 with one gateway). Routing and the in-flight
  // filter read this, so each gateway sees the replica's global load.
  int64_t globalRunning() const {
    return counters_.running.load(std::memory_order_relaxed) +
           remote_running_.load(std::memory_order_relaxed);
  }
  // The line a scrape's result is stored in (storeSignals), for a control plane that stores
  // many replicas' in a row.
  void prefetchSignals() const { __builtin_prefetch(&engine_running_, 1); }
  // Asks the CPU for the cache lines a routing decision reads (the in-flight count, the signals
  // and gate, the learned capacity), so that a sampled decision's replicas are fetched together
  // rather than one after another.
  void prefetchForRouting() const {
    __builtin_prefetch(&counters_.running);
    __builtin_prefetch(&engine_running_);
    __builtin_prefetch(&decode_capacity_);
  }
  // Asks for the lines a response's first byte and completion update (the in-flight count and
  // outcomes, capacity learning's inputs, the other gateways' in-flight count), for a driver
  // that knows a completion is coming before it handles it (the fleet simulator).
  void prefetchForCompletion() const {
    __builtin_prefetch(&counters_.running, 1);
    __builtin_prefetch(&counters_.output_tokens_total, 1);
    __builtin_prefetch(&remote_running_);
  }
  // Control thread (shared-state sync): the other live gateways' in-flight count.
  void storeRemoteRunning(int64_t running) {
    remote_running_.store(running, std::memory_order_relaxed);
  }
  int64_t remoteRunning() const { return remote_running_.load(std::memory_order_relaxed); }

  // Control thread: record the outcome of one telemetry scrape.
  void storeSignals(const EngineSignals& signals, TimeNs read_at);
  void markScrapeFailed(TimeNs at);

  // Any thread: the last signals if they were read successfully no longer ago than `max_age`,
  // else all-unknown. `age` receives the age of the last successful read (-1 if never), `fresh`
  // whether the signals were usable.
  // Inline: read for every candidate of every load-aware decision.
  EngineSignals signals(TimeNs now, TimeNs max_age, TimeNs* age = nullptr,
                        bool* fresh = nullptr) const {
    const bool valid = signals_valid_.load(std::memory_order_acquire);
    const TimeNs read_at = signals_read_at_.load(std::memory_order_relaxed);
    if (age) *age = read_at < 0 ? -1 : now - read_at;
    const bool usable = valid && read_at >= 0 && now - read_at <= max_age;
    if (fresh) *fresh = usable;
    if (!usable) return EngineSignals{};
    EngineSignals out;
    out.running = engine_running_.load(std::memory_order_relaxed);
    out.waiting = engine_waiting_.load(std::memory_order_relaxed);
    out.kv_usage = kv_usage_.load(std::memory_order_relaxed);
    out.cpu_kv_usage = cpu_kv_usage_.load(std::memory_order_relaxed);
    return out;
  }
  TimeNs lastScrapeFailureAt() const { return scrape_failed_at_.load(std::memory_order_relaxed); }
  // The KV cache's size in tokens as the engine last reported it (EngineSignals::
  // kv_capacity_tokens), kept across scrapes that do not say; NaN while never reported.
  double kvCapacityTokens() const { return kv_capacity_tokens_.load(std::memory_order_relaxed); }
  // When the signals were last read successfully (-1: never), and whether they are usable.
  TimeNs signalsReadAt() const { return signals_read_at_.load(std::memory_order_relaxed); }
  bool signalsValid() const { return signals_valid_.load(std::memory_order_acquire); }
  // Whether a scrape has ever completed, successfully or not (readiness).
  bool everScraped() const {
    return signals_read_at_.load(std::memory_order_relaxed) >= 0 || lastScrapeFailureAt() >= 0;
  }

  // Control thread writes the health verdict; the routing filters read it.
  void storeHealth(HealthState state, HealthReason reason) {
    health_reason_.store(reason, std::memory_order_relaxed);
    health_.store(state, std::memory_order_release);
    refreshGate();
  }
  HealthState health() const { return health_.load(std::memory_order_acquire); }

  // Slow start (routing/slow_start.h): when the replica last became ready for traffic, i.e.
  // joined a running fleet (registry) or came back from a health exclusion (health manager),
  // both on the control thread. kEstablished: serving since the gateway started, no ramp. Kept
  // beside health_ because the routing filters already read that cache line.
  static constexpr TimeNs kEstablished = std::numeric_limits<TimeNs>::min();
  void markReady(TimeNs at) { ready_since_.store(at, std::memory_order_relaxed); }
  TimeNs readySince() const { return ready_since_.load(std::memory_order_relaxed); }
  HealthReason healthReason() const { return health_reason_.load(std::memory_order_relaxed); }

  // Lifecycle (LifecycleFlag bits; 0: routable). Read by the routing filters on every request
  // (same cache line as health_); written on the control thread only, so the read-modify-write
  // below needs no compare-exchange.
  uint8_t lifecycle() const { return lifecycle_.load(std::memory_order_relaxed); }
  bool draining() const { return (lifecycle() & kDrainingFlags) != 0; }
  // Control thread: replaces the bits in `mask` with `bits`; returns the previous flags.
  uint8_t storeLifecycle(uint8_t mask, uint8_t bits) {
    const uint8_t before = lifecycle_.load(std::memory_order_relaxed);
    lifecycle_.store(static_cast<uint8_t>((before & ~mask) | (bits & mask)),
                     std::memory_order_relaxed);
    refreshGate();
    return before;
  }

  // The routing filters' one read for a replica in good standing: 0 when neither its lifecycle
  // nor its health can exclude it; else its lifecycle bits, plus kGateUnhealthy when its health
  // is not kHealthy (then health() tells which). Kept by storeHealth and storeLifecycle, both on
  // the control thread.
  static constexpr uint8_t kGateUnhealthy = 0x80;
  uint8_t routingGate() const { return gate_.load(std::memory_order_acquire); }

  // Workers: record one request outcome.
  void recordSuccess() {
    counters_.outcome_successes_total.fetch_add(1, std::memory_order_relaxed);
    if (counters_.consecutive_failures.load(std::memory_order_relaxed) != 0) {
      counters_.consecutive_failures.store(0, std::memory_order_relaxed);
    }
  }
  void recordFailure() {
    counters_.outcome_failures_total.fetch_add(1, std::memory_order_relaxed);
    counters_.consecutive_failures.fetch_add(1, std::memory_order_relaxed);
  }

  // Control thread writes what the capacity estimator learned; workers read it when scoring.
  void storeCapacity(const LearnedCapacity& capacity) {
    decode_capacity_.store(capacity.decode, std::memory_order_relaxed);
    prefill_capacity_.store(capacity.prefill, std::memory_order_relaxed);
    capacity_tokenless_.store(capacity.tokenless, std::memory_order_relaxed);
    slowdown_.store(capacity.slowdown, std::memory_order_relaxed);
  }
  LearnedCapacity capacity() const {
    return {decode_capacity_.load(std::memory_order_relaxed),
            prefill_capacity_.load(std::memory_order_relaxed),
            capacity_tokenless_.load(std::memory_order_relaxed),
            slowdown_.load(std::memory_order_relaxed)};
  }

 private:
  void refreshGate() {
    const bool unhealthy = health_.load(std::memory_order_relaxed) != HealthState::kHealthy;
    gate_.store(static_cast<uint8_t>(lifecycle_.load(std::memory_order_relaxed) |
                                     (unhealthy ? kGateUnhealthy : 0)),
                std::memory_order_release);
  }
  static uint64_t hashName(const std::string& name) {
    uint64_t h = 14695981039346656037ull;
    for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
  }

  const std::string name_;
  const std::string host_;
  const uint16_t port_;
  const uint64_t name_hash_;
  bool tls_ = false;
  std::string authorization_;

  ReplicaCounters counters_;

  // Cache lines grouped by writer and read together when scoring: engine signals and health
  // (scraper and health manager), then what the control plane learns and syncs slowly.
  alignas(64) std::atomic<double> engine_running_{EngineSignals::kUnknown};
  std::atomic<double> engine_waiting_{EngineSignals::kUnknown};
  std::atomic<double> kv_usage_{EngineSignals::kUnknown};
  std::atomic<double> cpu_kv_usage_{EngineSignals::kUnknown};
  std::atomic<double> kv_capacity_tokens_{EngineSignals::kUnknown};
  std::atomic<TimeNs> signals_read_at_{-1};
  std::atomic<bool> signals_valid_{false};
  std::atomic<HealthState> health_{HealthState::kHealthy};
  std::atomic<HealthReason> health_reason_{HealthReason::kNone};
  std::atomic<uint8_t> lifecycle_{0};
  std::atomic<uint8_t> gate_{0};  // routingGate()
  std::atomic<TimeNs> scrape_failed_at_{-1};

  alignas(64) std::atomic<double> decode_capacity_{EngineSignals::kUnknown};
  std::atomic<double> prefill_capacity_{EngineSignals::kUnknown};
  std::atomic<double> slowdown_{EngineSignals::kUnknown};
  std::atomic<int64_t> remote_running_{0};
  std::atomic<TimeNs> ready_since_{kEstablished};
  std::atomic<bool> capacity_tokenless_{false};
};

}  // namespace switchyard::fleet
