// Statistics of a simulation run: latency distributions, outcome counts per GPU type, and the
// per-second series. Distributions keep exact values up to a million samples (percentiles by
// nearest rank, as the load generator computes them) and fold into a log-linear histogram beyond
// (256 sub-buckets per power of two: within 0.4 %), so memory stays bounded on long runs.
// Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"

namespace switchyard::sim {

class Distribution {
 public:
  void add(double value);
  int64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  double max() const { return max_; }
  // The p-th percentile (0..100) by nearest rank; NaN when empty.
  double percentile(double p) const;
  void clear();

 private:
  static constexpr size_t kExactLimit = 1 << 20;
  static constexpr int kSubBits = 8;
  static size_t bucketOf(double value);
  static double valueOf(size_t bucket);
  void fold();

  mutable std::vector<double> exact_;
  mutable bool sorted_ = true;
  mutable int selections_ = 0;     // percentiles selected since the last change
  std::vector<uint64_t> buckets_;  // empty until folded
  double scale_ = 1000;            // histogram resolution: values x scale are bucketed as integers
  int64_t count_ = 0;
  double sum_ = 0;
  double max_ = 0;
};

// Why a request did not get an answer.
enum class Outcome : uint8_t {
  kOk = 0,
  kRateLimited,     // 429: the model-wide rate limit
  kInflightLimit,   // 429: every replica at its in-flight limit
  kNoReplica,       // 503: no replica serves the model
  kUpstreamFailed,  // 502 or a stream cut after it started (replica failed, gateway died)
  kDeadline,        // the client gave up before the answer was complete
  kUnfinished,      // still in flight when the simulation ended
  // The gateway's admission queue (admission: queue fifo or deadline, docs/admission.md):
  kQueueFull,             // 429 queue_full: the gateway's queue was at max_queued
  kQueueTimeout,          // 429 queue_timeout: waited max_wait_ms in the queue
  kDeadlineUnattainable,  // 429 deadline_unattainable: could no longer finish in time
  kCount,
};
const char* outcomeName(Outcome outcome);
// Whether the gateway refused the request (an answer with a 429 and nothing sent upstream).
bool isRefusal(Outcome outcome);

// One group of requests: a GPU type (by the replica that served them) or the whole run.
struct GroupStats {
  std::string label;
  int64_t requests = 0;  // measured requests (arrived after the warm-up) attributed here
  std::array<int64_t, static_cast<size_t>(Outcome::kCount)> outcomes{};
  int64_t good = 0;           // ok and within the SLO
  int64_t output_tokens = 0;  // of the ok requests
  Distribution ttft_ms;
  Distribution tpot_ms;
  Distribution e2e_ms;
  // Engine side, over the measurement window.
  double replica_seconds = 0;  // replicas x seconds alive in the window
  double busy_seconds = 0;
  double generated_tokens = 0;  // every token the engines produced in the window
  double learned_capacity = 0;  // mean decode capacity gateway 0 learned (end of run), tokens/s
  double kv_usage_sum = 0;      // over queue samples
  int64_t kv_samples = 0;

  int64_t ok() const { return outcomes[0]; }
  double busy() const { return replica_seconds > 0 ? busy_seconds / replica_seconds : 0; }
  double goodput() const { return requests ? static_cast<double>(good) / requests : 0; }
};

// One row of the per-second series (one per second and group).
struct SecondRow {
  int64_t second = 0;
  std::string group;
  int64_t arrivals = 0;
  int64_t completed = 0;
  int64_t refused = 0;
  int64_t failed = 0;
  int64_t output_tokens = 0;
  int replicas = 0;
  double busy = 0;         // mean busy fraction of the group's replicas in the second
  double running = 0;      // engine running requests, summed, at the end of the second
  double waiting = 0;      // engine waiting requests, summed
  int max_waiting = 0;     // of any one replica
  double kv_usage = 0;     // mean over replicas
  double inflight = 0;     // gateway-counted requests in flight (all gateways)
  double ttft_p50_ms = 0;  // of the requests that completed in the second
  double ttft_p99_ms = 0;
  double e2e_p99_ms = 0;
  double learned_capacity = 0;  // gateway 0's mean decode estimate over the group, tokens/s
};

}  // namespace switchyard::sim
