// CapacityEstimator: learns how much output one replica can sustain, from the gateway's own
// counters, independently of how much traffic the router happens to send it.
//
// Why not the observed output rate: a replica's output tokens/s is the traffic it was given. A
// router that divides load by that rate sends less to a replica that got less, which then shows
// an even lower rate (measured: an L20 learned 223 tokens/s where it sustains ~994). The estimate
// must not scale with the replica's share of the traffic.
//
// What is measured instead: the replica's *speed per stream* at the concurrency it was kept at.
// A continuous-batching engine's decode step takes roughly t(n) = a + b·n for n streams (weights
// read once per step, plus KV reads and compute per stream), and every stream gets one token per
// step, so the time per output token at concurrency n is t(n) and the throughput n / t(n). The
// gateway knows both sides of that: the time per token of its completed responses
// (token_time_ns / timed_tokens: after the first byte for streams, whole latency otherwise) and the
// replica's in-flight count (sampled on every refresh, across gateways). Every refresh with new
// tokens is one sample (n_j, t_j), weighted by its tokens. Over the window (default ~60 s) a
// weighted least-squares line t(n) = t̄ + b·(n − n̄) is fitted; the slope is shrunk towards 0
// when the window's concurrency barely varied (ridge with one stream² of prior variance per
// unit of weight, so a narrow spread cannot produce a wild extrapolation) and clamped to
// [0, t̄/n̄] (time per token does not fall with load, and a = t(0) ≥ 0). Then
//   decode = n_ref / t(n_ref)                       output tokens/s at the reference concurrency
// n_ref (kReferenceConcurrency, 64: the usual vLLM batch). With a flat slope this is n_ref ×
// the replica's per-stream speed; with a fitted slope it is the throughput the replica would
// sustain at n_ref streams. Either way a replica given less traffic is not learned as slower:
// its per-stream speed is, if anything, better. More load makes per-token time grow, so the
// feedback that remains is negative (stabilising). The curve's shape is kept too, as
//   slowdown = b / a                     (t(n) = a·(1 + slowdown·n); load-balance's utilisation)
// capped at 1 (the time per token doubling by the first extra stream).
// The window's value is smoothed with an EWMA (time constant default 10 s); the first one is taken
// as it is.
//   tokenless work (embeddings): completed requests / s of request latency (inverse latency)
//   prefill = prompt tokens / s of time-to-first-byte          (streamed requests)
//   no time per token in the counters (a source that does not sum them): the window's output
//   tokens/s, the seed's rule, as the only speed signal available.
// A refresh in which nothing completed carries no information about speed (the replica was idle,
// not slow): the previous estimate is kept rather than decayed. A counter that goes backwards (a
// summed source lost a contributor) restarts the window and keeps the estimate.
// Pure: time and concurrency are passed in. Not thread-safe. observe() costs O(1) amortised.
#pragma once

#include <cstdint>
#include <limits>

#include <boost/circular_buffer.hpp>

#include "core/clock.h"
#include "fleet/replica_state.h"

namespace switchyard::fleet {

struct CapacitySettings {
  TimeNs window = 60 * kNsPerSec;
  TimeNs time_constant = 10 * kNsPerSec;
};

// Cumulative counters (since start, or summed over gateways: every field is additive).
struct CapacityCounters {
  int64_t output_tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t prefill_ns = 0;
  int64_t tokenless_requests = 0;
  int64_t tokenless_latency_ns = 0;
  int64_t token_time_ns = 0;  // time spent producing timed_tokens (see ReplicaCounters)
  int64_t timed_tokens = 0;
  int64_t token_concurrency = 0;  // Σ timed tokens × (start + end concurrency); see ReplicaCounters

  static CapacityCounters of(const ReplicaCounters& c);
};

class CapacityEstimator {
 public:
  explicit CapacityEstimator(CapacitySettings settings = {})
      : settings_(settings), samples_(kInitialSamples) {}

  // `concurrency`: requests in flight on the replica now (all gateways); NaN when unknown, in
  // which case the slope is not fitted and the per-stream speed alone is used.
  void observe(TimeNs now, const CapacityCounters& cumulative, double concurrency);
  void observe(TimeNs now, const CapacityCounters& cumulative) {
    observe(now, cumulative, kNaN);
  }
  const LearnedCapacity& learned() const { return learned_; }

  // The last window's fit, for /debug and tests: mean concurrency, mean seconds per token, slope
  // (seconds per token per extra stream). NaN before the first fit.
  struct Fit {
    double mean_concurrency;
    double seconds_per_token;
    double slope;
  };
  const Fit& fit() const { return fit_; }

 private:
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // One refresh interval's point of the fit: concurrency n and seconds per token t, weighted by
  // its timed tokens w (0: the interval timed none and is not a point).
  struct Point {
    double w = 0, n = 0, t = 0;
    bool unknown_n = false;
  };
  struct Sample {
    TimeNs at;
    CapacityCounters counters;
    double concurrency;  // NaN unknown
  };
  // The window's points summed, kept as samples come and go so a refresh costs O(1); re-summed
  // exactly once the window has turned over, so rounding cannot accumulate. The sums are of
  // deviations from the first point summed (n0, t0): equal concurrencies give an exactly flat
  // fit, and nearly equal ones do not lose their spread to cancellation.
  struct PointSums {
    int64_t points = 0;
    int64_t unknown_n = 0;
    double n0 = 0, t0 = 0;
    double w = 0, dn = 0, dt = 0, dnn = 0, dnt = 0;  // Σw, Σw·(n−n0), Σw·(t−t0), …
    void add(const Point& p, double sign);
  };
  static Point pointBetween(const Sample& a, const Sample& b);
  void dropOldest();
  void append(const Sample& sample);
  void resum();
  void smooth(double& estimate, double rate, TimeNs dt);
  // Decode capacity and slowdown from the window's per-token times; decode NaN when the window
  // has none, slowdown NaN when the concurrencies are unknown.
  struct CurvePoint {
    double decode;
    double slowdown;
  };
  CurvePoint decodeFromTokenTimes();

  CapacitySettings settings_;
  // Oldest first, spanning at most the window; a ring that grows to the window's length once, so
  // a refresh allocates nothing.
  boost::circular_buffer<Sample> samples_;
  // A minute of one-second refreshes (the defaults) without regrowing: fleets have thousands of
  // estimators refreshed in step, and growing them together leaves the heap full of holes.
  static constexpr size_t kInitialSamples = 64;
  PointSums sums_;
  size_t dropped_since_resum_ = 0;
  LearnedCapacity learned_;
  Fit fit_{kNaN, kNaN, kNaN};
  TimeNs last_update_ = -1;
};

}  // namespace switchyard::fleet
