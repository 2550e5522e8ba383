// Metrics: per-worker counter and histogram shards, summed into Prometheus text at scrape time.
//
// Every hot-path worker owns one WorkerMetrics shard. A counter in a shard has exactly one writer
// (its worker), so it is a relaxed load + store, never a contended read-modify-write; the admin
// scrape (control thread) reads all shards with relaxed loads and sums them. Counters whose
// labels name a model or replica live in blocks resolved when the worker's fleet snapshot changes
// (bind()), so a request only follows pointers: no lookups, no allocation, no locks per request.
//
// Series identity: (model name, replica name) pairs get a stable slot from the MetricsRegistry the
// first time any worker binds a snapshot that contains them; slots are never reused, so counters
// survive a config reload that keeps a replica and stay monotonic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::observe {

// Why the gateway answered 429. Health/limits code counts these with countRejected().
enum class LimitKind : uint8_t {
  kModelRate = 0,       // model-wide request rate limit
  kUserRate,            // per-user (or per-key) rate limit
  kReplicaInflight,     // every replica at its in-flight limit
  kGatewayInflight,     // the gateway's own in-flight limit
  kTokenRate,           // token budget
  kOther,
  kDeadline,            // the request cannot start and finish within its deadline
  kQueueFull,           // the gateway's queue for the model (or this client's part) is full
  kQueueTimeout,        // waited in the queue for max_wait without a slot
  kSloBreached,         // held for the SLO (slo-least-load-pulling) until it could not be met
  kCount,
};
std::string_view limitName(LimitKind kind);

// How an upstream attempt failed.
enum class UpstreamErrorKind : uint8_t {
  kConnect = 0,  // connection refused / unreachable / connect timeout
  kReset,        // the connection broke (before the head or mid-stream)
  k5xx,          // the engine answered a 5xx status
  kTimeout,      // no first byte, or an idle gap, within the configured timeout
  kCount,
};
std::string_view upstreamErrorName(UpstreamErrorKind kind);

// Where a request was when its client went away (the gateway then dropped it, and closed the
// upstream request so the engine aborts it).
enum class CancelStage : uint8_t {
  kNone = 0,
  kQueued,            // waiting in the gateway's queue: no GPU work was started
  kWaitingFirstByte,  // sent to the engine, no response byte yet
  kStreaming,         // the response was being relayed
  kCount,
};
std::string_view cancelStageName(CancelStage stage);

// A counter with one writer. add() is a plain load + store: only the owning worker calls it.
class Counter {
 public:
  void add(uint64_t n = 1) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Bucket bounds in nanoseconds (exposed in seconds). Fixed per kind, so shards sum bucket-wise.
struct Buckets {
  std::span<const int64_t> bounds_ns;
};
inline constexpr int64_t kRoutingBoundsNs[] = {1'000,   2'500,   5'000,   10'000,    25'000,
                                               50'000,  100'000, 250'000, 1'000'000, 10'000'000};
inline constexpr int64_t kLatencyBoundsNs[] = {
    5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,
    250'000'000, 500'000'000,   1'000'000'000, 2'500'000'000, 5'000'000'000,
    10'000'000'000, 30'000'000'000, 60'000'000'000};
inline constexpr int64_t kTokenGapBoundsNs[] = {1'000'000,   2'500'000,   5'000'000, 10'000'000,
                                                25'000'000,  50'000'000,  100'000'000,
                                                250'000'000, 500'000'000, 1'000'000'000};

// A single-writer histogram over fixed bounds: counts per bucket (non-cumulative) and a sum.
template <size_t N>
class Histogram {
 public:
  explicit Histogram(const int64_t (&bounds)[N]) : bounds_(bounds) {}
  void observe(int64_t ns) {
    size_t i = 0;
    while (i < N && ns > bounds_[i]) ++i;
    counts_[i].add();
    sum_ns_.add(static_cast<uint64_t>(ns < 0 ? 0 : ns));
  }
  const int64_t* bounds() const { return bounds_; }
  static constexpr size_t size() { return N; }
  uint64_t count(size_t bucket) const { return counts_[bucket].get(); }  // bucket <= N
  uint64_t sumNs() const { return sum_ns_.get(); }

 private:
  const int64_t* bounds_;
  std::array<Counter, N + 1> counts_;  // the last one is +Inf
  Counter sum_ns_;
};

using RoutingHistogram = Histogram<std::size(kRoutingBoundsNs)>;
using LatencyHistogram = Histogram<std::size(kLatencyBoundsNs)>;
using TokenGapHistogram = Histogram<std::size(kTokenGapBoundsNs)>;

// Status classes used as the `code` label: 2xx, 3xx, 4xx, 5xx, and "other" (no response).
inline constexpr size_t kStatusClasses = 5;
inline size_t statusClass(unsigned status) {
  return status >= 200 && status < 600 ? status / 100 - 2 : 4;
}
std::string_view statusClassName(size_t status_class);

// Strategy labels: the first kStrategySlots - 1 distinct strategy texts a worker sees get their own
// label value; later ones share "other", which bounds the cardinality blends could create.
inline constexpr size_t kStrategySlots = 16;
inline constexpr size_t kExclusionReasons = 16;  // routing::Exclusion codes 0..15

// One worker's counters for one (model, replica) series.
struct ReplicaBlock {
  std::array<std::array<Counter, kStatusClasses>, kStrategySlots> requests;
  Counter selections;
  std::array<Counter, kExclusionReasons> exclusions;
  std::array<Counter, static_cast<size_t>(UpstreamErrorKind::kCount)> upstream_errors;
  Counter input_tokens;
  Counter output_tokens;
  LatencyHistogram ttft{kLatencyBoundsNs};
  TokenGapHistogram tpot{kTokenGapBoundsNs};
  LatencyHistogram e2e{kLatencyBoundsNs};
};

// One worker's counters for one model (outcomes that reached no replica, routing, failovers).
struct ModelBlock {
  std::array<std::array<Counter, kStatusClasses>, kStrategySlots> unrouted;  // replica=""
  RoutingHistogram routing{kRoutingBoundsNs};
  Counter failovers;  // another replica was tried after one failed before responding
  Counter demand;     // requests that asked for the model: admitted, queued or refused
  LatencyHistogram queue_wait{kLatencyBoundsNs};  // time spent in the gateway's queue
  std::array<Counter, static_cast<size_t>(CancelStage::kCount)> client_cancelled;
};

class MetricsRegistry;

// One worker's shard. Owner-thread methods are marked; scrape-side access goes through
// MetricsRegistry::render().
class WorkerMetrics {
 public:
  explicit WorkerMetrics(MetricsRegistry& registry) : registry_(registry) {}
  WorkerMetrics(const WorkerMetrics&) = delete;
  WorkerMetrics& operator=(const WorkerMetrics&) = delete;

  // Owner thread: resolves blocks for every model and replica of `snapshot` when its version
  // differs from the last bound one (allocates only then). Cheap when unchanged.
  void bind(const fleet::FleetSnapshot& snapshot);
  // Owner thread, after bind(): the blocks of model `m` / its replica `r` in the bound snapshot.
  ModelBlock& model(size_t m) { return *bound_[m].model; }
  ReplicaBlock& replica(size_t m, size_t r) { return *bound_[m].replicas[r]; }
  uint32_t replicaSlot(size_t m, size_t r) const { return bound_[m].replica_slots[r]; }
  uint32_t modelSlot(size_t m) const { return bound_[m].model_slot; }
  std::span<const uint32_t> replicaSlots(size_t m) const { return bound_[m].replica_slots; }
  // Owner thread: the label slot of a strategy text (interned; "other" when the table is full).
  uint32_t strategySlot(std::string_view text);

  // Owner thread: worker-wide counters.
  void countUnknownModel(unsigned status) { unknown_model_[statusClass(status)].add(); }
  void countRejected(LimitKind kind) { rejected_[static_cast<size_t>(kind)].add(); }
  void countSpansDropped(uint64_t n = 1) { spans_dropped_.add(n); }
  void countDecisionsRecorded() { decisions_recorded_.add(); }
  void countBusyPoll(int64_t ns) { busy_poll_ns_.add(static_cast<uint64_t>(ns)); }

 private:
  friend class MetricsRegistry;
  struct Bound {
    ModelBlock* model = nullptr;
    uint32_t model_slot = 0;
    std::vector<ReplicaBlock*> replicas;
    std::vector<uint32_t> replica_slots;
  };

  MetricsRegistry& registry_;
  uint64_t bound_version_ = UINT64_MAX;
  std::vector<Bound> bound_;
  // Blocks by slot; the vectors change only in bind() under blocks_mutex_, which the scrape also
  // takes. Blocks themselves never move or die while the process lives.
  std::mutex blocks_mutex_;
  std::vector<std::unique_ptr<ModelBlock>> model_blocks_;
  std::vector<std::unique_ptr<ReplicaBlock>> replica_blocks_;
  // Strategy names: written by the owner before publishing the count (release).
  std::array<std::string, kStrategySlots> strategy_names_;
  std::atomic<uint32_t> strategy_count_{0};
  std::array<Counter, kStatusClasses> unknown_model_;
  std::array<Counter, static_cast<size_t>(LimitKind::kCount)> rejected_;
  Counter spans_dropped_;
  Counter decisions_recorded_;
  Counter busy_poll_ns_;  // polled without finding work (busy_poll_us)
};

// Values only the control plane knows, passed to render().
struct ControlPlaneStats {
  uint64_t scrapes_total = 0;
  uint64_t scrape_failures_total = 0;
  uint64_t spans_exported_total = 0;
  uint64_t spans_dropped_total = 0;     // by the exporter (collector down, batch rejected)
  uint64_t export_failures_total = 0;
  uint64_t snapshot_version = 0;
  uint64_t workers = 0;  // hot-path worker threads
};

class MetricsRegistry {
 public:
  explicit MetricsRegistry(size_t workers);
  WorkerMetrics& worker(size_t i) { return *workers_[i]; }
  size_t workerCount() const { return workers_.size(); }

  // Any thread (takes the slot mutex): stable slot ids for label values.
  uint32_t modelSlot(std::string_view model);
  uint32_t replicaSlot(std::string_view model, std::string_view replica);
  // Any thread: label values of a slot (copies; for rendering and the decision log).
  std::string modelName(uint32_t slot) const;
  std::pair<std::string, std::string> replicaName(uint32_t slot) const;

  // Control thread: the Prometheus text exposition (format 0.0.4) of every metric: shard sums plus
  // gauges computed now from `snapshot` (in-flight, engine signals, capacity, imbalance).
  std::string render(const fleet::FleetSnapshot& snapshot, TimeNs now,
                     const ControlPlaneStats& stats);

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> models_;
  std::map<std::string, uint32_t, std::less<>> model_index_;
  std::vector<std::pair<std::string, std::string>> replicas_;  // (model, replica)
  std::map<std::pair<std::string, std::string>, uint32_t> replica_index_;
  std::vector<std::unique_ptr<WorkerMetrics>> workers_;
};

// Load imbalance of one model: max over replicas of (in-flight ÷ learned capacity) divided by
// the mean; 1 when balanced or idle. Replicas without a learned capacity count in-flight alone
// when no replica has one (then it is max/mean of in-flight). Exposed for tests.
double loadImbalance(const fleet::ModelEntry& model);

}  // namespace switchyard::observe
