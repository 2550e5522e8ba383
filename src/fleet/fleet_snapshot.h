// FleetSnapshot: an immutable view of the fleet that hot-path workers route against.
//
// Built by the FleetRegistry on the control thread whenever the fleet changes (discovery, reload),
// and published whole; workers hold a shared_ptr to the one they use, so nothing in it changes
// under them. Only the ReplicaState objects it points at carry live, atomic counters.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/gcra.h"
#include "fleet/output_length_estimator.h"
#include "fleet/replica_state.h"

namespace switchyard::profile {
struct GpuProfile;
struct SloProfiles;
}  // namespace switchyard::profile

namespace switchyard::fleet {

// Knobs of the load-balance score (docs/routing.md); resolved per model at config load.
// What load-balance divides load by (docs/routing.md, "load-balance").
enum class LoadBalanceScore : uint8_t {
  kUtilization,          // predicted output rate with this request ÷ learned capacity
  kRequestsPerCapacity,  // (running + 1) ÷ learned capacity: requests per token/s
};

struct LoadBalanceParams {
  double queued_weight = 0.0;     // λ: weight of engine-queued requests
  double kv_alpha = 2.0;          // α: strength of the KV-pressure penalty
  double kv_critical_free = 0.10;  // below this free-KV fraction a replica scores +Inf
  LoadBalanceScore score = LoadBalanceScore::kUtilization;
  // Utilisation score only: among the replicas whose score is within this of the lowest, the one
  // predicted to serve the request fastest wins (0: the lowest score wins).
  double fastest_within = 0.03;
};

// Knobs of least-request-top-k (docs/routing.md); resolved per model at config load.
struct TopKParams {
  uint32_t k = 3;                   // the random pick is among at most this many replicas...
  double tolerance_requests = 2;    // ...whose load is within max(this,
  double tolerance_fraction = 0.1;  // this x the minimum load) of the minimum
};

// Slow start (routing/slow_start.h): how a replica that just became ready is eased in.
struct SlowStartParams {
  TimeNs ramp = 30 * kNsPerSec;  // synthetic load decays to 0 over this window; 0 disables
  double aggression = 1.0;       // ramp shape: progress^(1/aggression); 1 is linear
};

// Where a discovered replica comes from (empty for static replicas).
struct PodIdentity {
  std::string name;        // the Pod's name
  std::string namespace_;  // its namespace
  std::string deployment;  // the Deployment that owns it (via its ReplicaSet), if any
  bool empty() const { return name.empty(); }
};

// What happens to a request that finds every replica of its model at its in-flight limit
// (docs/admission.md); resolved per model at config load.
enum class QueueMode : uint8_t {
  kOff,       // answer 429 at once
  kFifo,      // wait in the gateway's queue, first come first served, bounded by count and age
  kDeadline,  // the same queue, but admit, queue or refuse by whether the request can still
              // start and finish within its deadline
};

struct AdmissionParams {
  QueueMode queue = QueueMode::kOff;
  uint32_t max_queued = 1024;            // per model, per worker
  uint32_t max_queued_per_client = 256;  // per model, per worker: no client can fill the queue
  TimeNs max_wait = 60 * kNsPerSec;      // a request waits no longer than this
  TimeNs recheck = 50 * kNsPerMs;        // queued requests re-check at least this often
  TimeNs default_deadline = 0;           // for requests that give none; 0: none
};

struct ReplicaEntry {
  std::shared_ptr<ReplicaState> state;
  // e.g. gpu: A100, engine: vllm; a discovered replica carries every label of its Pod, plus
  // `gpu` and `engine` as discovery resolved them.
  std::map<std::string, std::string> labels;
  std::string_view gpu;                       // labels["gpu"], or "unknown"
  PodIdentity pod;
};

// Means of what the capacity estimator learned over a model's replicas that have an estimate;
// NaN while none has. The stand-in for a replica with no estimate yet, and the centre its
// batching curve is shrunk toward (docs/routing.md).
struct LearnedMeans {
  double decode = EngineSignals::kUnknown;
  double prefill = EngineSignals::kUnknown;
  double slowdown = EngineSignals::kUnknown;
};

// Per-model state that must persist across snapshots and is shared by the workers.
struct ModelRuntime {
  // The model's LearnedMeans, written by the control plane after each capacity refresh and fleet
  // change (refreshLearnedMeans in fleet_registry.h), so a decision reads three numbers instead of
  // averaging its candidates first: scoring then takes one pass.
  LearnedMeans learnedMeans() const {
    return {mean_decode.load(std::memory_order_relaxed),
            mean_prefill.load(std::memory_order_relaxed),
            mean_slowdown.load(std::memory_order_relaxed)};
  }
  void storeLearnedMeans(const LearnedMeans& means) {
    mean_decode.store(means.decode, std::memory_order_relaxed);
    mean_prefill.store(means.prefill, std::memory_order_relaxed);
    mean_slowdown.store(means.slowdown, std::memory_order_relaxed);
  }
  alignas(64) std::atomic<double> mean_decode{EngineSignals::kUnknown};
  std::atomic<double> mean_prefill{EngineSignals::kUnknown};
  std::atomic<double> mean_slowdown{EngineSignals::kUnknown};

  alignas(64) std::atomic<uint64_t> next{0};  // round-robin cursor
  alignas(64) std::atomic<int32_t> routable_replicas{0};  // not excluded by health
  AtomicGcra rate;  // this gateway's share: per-replica RPS x routable replicas / live gateways
  // Output tokens by prompt size, learned from completions (admission's execution estimate).
  OutputLengthEstimator output_lengths;
  // The gateway's queue for this model (gateway/request_queue.h): requests waiting, and which
  // workers have some (bit per worker), so a worker that frees a slot wakes one.
  alignas(64) std::atomic<int32_t> queued{0};
  std::atomic<uint64_t> queued_workers{0};
  // Requests of the model completed per second on this gateway, smoothed (refreshCompletionRate):
  // how fast the queue drains.
  std::atomic<double> completion_rate{0};
  // Control thread only (refreshCompletionRate): the completions counted at the last refresh.
  int64_t completions_seen = -1;
  TimeNs completions_seen_at = 0;
  std::atomic<int32_t> live_gateways{1};  // gateways sharing the model (shared-state sync)
  std::atomic<int32_t> gateway_rank{0};   // this gateway's position among them (by id)
};

// Per-model protection (docs/operations.md); 0 means unlimited.
struct ModelLimits {
  double requests_per_second_per_replica = 0;
  int64_t max_inflight_per_replica = 0;
};

// Upstream timeouts, per model (long generations want long first-byte timeouts).
struct UpstreamTimeouts {
  TimeNs connect = 3 * kNsPerSec;
  TimeNs first_byte = 600 * kNsPerSec;
  TimeNs idle = 120 * kNsPerSec;
};

struct ModelEntry {
  std::string name;
  std::string routing_strategy;  // per-model default; empty means the gateway default
  LoadBalanceParams load_balance;
  TopKParams top_k;
  SlowStartParams slow_start;
  // Candidate sampling (docs/routing.md): when above 0 and below the replica count, a decision
  // filters and scores this many replicas drawn at random instead of the whole fleet.
  uint32_t candidate_sample = 0;
  ModelLimits limits;
  AdmissionParams admission;
  UpstreamTimeouts timeouts;
  std::vector<ReplicaEntry> replicas;
  // replicas[i].state.get(), dense (indexStates): a sampled decision finds a drawn replica's
  // state in this array instead of in its entry, three cache lines that are rarely warm.
  std::vector<ReplicaState*> states;
  std::shared_ptr<ModelRuntime> runtime;
  // SLO routing (routing/strategies/slo.h): the objective and a profile per GPU type, and each
  // replica's profile (by its gpu label; nullptr when its type has none). Empty without `slo:`.
  std::shared_ptr<const profile::SloProfiles> slo;
  std::vector<const profile::GpuProfile*> replica_profiles;

  void indexStates() {
    states.clear();
    for (const ReplicaEntry& replica : replicas) states.push_back(replica.state.get());
  }
  // Replica i's state, from the dense array: a model built by hand calls indexStates() first.
  const ReplicaState& stateAt(size_t i) const {
    assert(states.size() == replicas.size());
    return *states[i];
  }

  // Index of the replica named `name` ("host:port"), -1 if none. Linear: used once per request
  // that names a replica (a session's pin), never in the scoring loop.
  int replicaIndex(std::string_view name) const {
    if (name.empty()) return -1;
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i].state->name() == name) return static_cast<int>(i);
    }
    return -1;
  }
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct FleetSnapshot {
  uint64_t version = 0;
  TimeNs signal_max_age = 0;  // engine signals older than this are unknown
  std::string default_strategy;  // used when neither the request nor the model names one
  double auto_blend_load_balance_weight = 1.0;  // load-balance blended behind other strategies
  std::vector<ModelEntry> models;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> model_index;

  const ModelEntry* findModel(std::string_view name) const {
    auto it = model_index.find(name);
    return it == model_index.end() ? nullptr : &models[it->second];
  }
};

}  // namespace switchyard::fleet
