#include "routing/strategies/load_balance.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fleet/batching_curve.h"
#include "routing/strategies/load_signals.h"

namespace switchyard::routing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();


// A learned value usable as a divisor: positive and finite. One comparison pair, no isfinite():
// NaN fails both comparisons.
bool known(double v) { return v > 0 && v < kInf; }

// The per-decision constants, resolved once before the candidate loop: the loop then does one
// multiply-add for the load, one for the penalty and a single division per candidate.
struct KvRule {
  double alpha;
  double critical_free;
};

// Every candidate was KV-critical: the request still goes somewhere, to the most headroom.
ScoreNote relaxToHeadroom(const ScoringContext& context, std::span<double> scores) {
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = context.inputs[i].kv_usage;
  return ScoreNote{true};
}

// Writes tiebreak[i] and applies the KV guardrail; returns the penalty factor, or 0 when the
// candidate is critical (its score is then +Inf).
inline double kvFactor(const CandidateInputs& in, const KvRule& kv, double& tiebreak) {
  tiebreak = in.kv_usage + in.cpu_kv_usage;
  if (1.0 - in.kv_usage < kv.critical_free) return 0;
  return 1.0 + kv.alpha * in.kv_usage * in.kv_usage;
}

}  // namespace

ScoreNote LoadBalanceStrategy::score(const ScoringContext& context,
                                     std::span<const uint32_t> candidates,
                                     std::span<double> scores,
                                     std::span<double> tiebreak) const {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  const internal::CandidateAggregates agg = internal::gatherInputs(context, candidates);
  const double lambda = p.queued_weight;
  const KvRule kv{p.kv_alpha, p.kv_critical_free};
  // Utilisation needs a batching curve; until one is fitted anywhere (or for tokenless work,
  // or sources without per-token times) requests per unit of capacity is what can be said.
  const bool utilization =
      p.score == fleet::LoadBalanceScore::kUtilization && !std::isnan(agg.mean_slowdown);
  const bool band = utilization && p.fastest_within > 0;
  // Nothing learned anywhere: equal capacities, the score is load × KV penalty.
  const double fallback = std::isnan(agg.mean_decode) ? 1.0 : agg.mean_decode;
  constexpr double kRef = fleet::kReferenceConcurrency;
  bool any_finite = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CandidateInputs& in = context.inputs[i];
    const double penalty = kvFactor(in, kv, tiebreak[i]);
    if (penalty == 0) {
      scores[i] = kInf;
      continue;
    }
    any_finite = true;
    // λ = 0 skips the queue entirely (and an unknown queue cannot turn the score into NaN).
    const double load = in.running + 1.0 + (lambda > 0 ? lambda * in.waiting : 0.0);
    if (utilization) {
      // Output rate with this request, (running + 1) / t(running + 1), over the rate at the
      // reference concurrency, t(n) = t(0)·(1 + s·n): t(0) cancels, the curve's shape remains.
      const double s = fleet::shrunkSlowdown(in.slowdown, agg.mean_slowdown);
      const double at_ref = 1.0 + s * kRef;        // t(n_ref) / t(0)
      const double with = 1.0 + s * (in.running + 1.0);  // t(running + 1) / t(0)
      scores[i] = load * penalty * at_ref / (kRef * with);
      // The band picker's key: this request's predicted time per token here, t(running + 1)
      // = (n_ref / capacity) · with / at_ref.
      if (band) tiebreak[i] = with / ((known(in.decode) ? in.decode : fallback) * at_ref);
    } else {
      scores[i] = load * penalty / (known(in.decode) ? in.decode : fallback);
    }
  }
  if (any_finite || candidates.empty()) {
    ScoreNote note;
    if (band) note.band = p.fastest_within;
    return note;
  }
  return relaxToHeadroom(context, scores);
}

ScoreNote ShapeAwareLoadBalanceStrategy::score(const ScoringContext& context,
                                               std::span<const uint32_t> candidates,
                                               std::span<double> scores,
                                               std::span<double> tiebreak) const {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  const internal::CandidateAggregates agg = internal::gatherInputs(context, candidates);
  const bool learned = !std::isnan(agg.mean_decode) && !std::isnan(agg.mean_prefill);
  const bool utilization =
      p.score == fleet::LoadBalanceScore::kUtilization && !std::isnan(agg.mean_slowdown);
  const bool band = utilization && p.fastest_within > 0;
  const double fallback = std::isnan(agg.mean_decode) ? 1.0 : agg.mean_decode;
  const double lambda = p.queued_weight;
  const KvRule kv{p.kv_alpha, p.kv_critical_free};
  constexpr double kRef = fleet::kReferenceConcurrency;
  bool any_finite = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CandidateInputs& in = context.inputs[i];
    const double penalty = kvFactor(in, kv, tiebreak[i]);
    if (penalty == 0) {
      scores[i] = kInf;
      continue;
    }
    any_finite = true;
    const double load = in.running + (lambda > 0 ? lambda * in.waiting : 0.0);
    const double decode = known(in.decode) ? in.decode : fallback;
    const double s = utilization ? fleet::shrunkSlowdown(in.slowdown, agg.mean_slowdown) : 0;
    const double at_ref = 1.0 + s * kRef;                 // t(n_ref) / t(0)
    const double with = 1.0 + s * (in.running + 1.0);     // t(running + 1) / t(0)
    if (!learned || in.tokenless) {  // no shape to price: load-balance's score
      scores[i] = utilization ? (load + 1.0) * penalty * at_ref / (kRef * with)
                              : (load + 1.0) * penalty / decode;
      if (band) tiebreak[i] = with / (decode * at_ref);
      continue;
    }
    const double inv_decode = 1.0 / decode;
    const double inv_prefill = 1.0 / (known(in.prefill) ? in.prefill : agg.mean_prefill);
    // The replica's average request so far, from its own counters.
    const fleet::ReplicaCounters& c = context.model.replicas[candidates[i]].state->counters();
    const double inv_requests =
        1.0 / std::max<double>(
                  1.0, static_cast<double>(c.requests_total.load(std::memory_order_relaxed)));
    const double mean_prompt =
        static_cast<double>(c.input_tokens_total.load(std::memory_order_relaxed)) * inv_requests;
    const double mean_output = std::max(
        1.0,
        static_cast<double>(c.output_tokens_total.load(std::memory_order_relaxed)) * inv_requests);
    const double prompt =
        context.shape.prompt_tokens >= 0 ? context.shape.prompt_tokens : mean_prompt;
    const double output = context.shape.max_tokens > 0 ? context.shape.max_tokens : mean_output;
    const double typical_cost = mean_prompt * inv_prefill + mean_output * inv_decode;
    const double cost = prompt * inv_prefill + output * inv_decode;
    if (!utilization) {
      // (load × typical cost + this request's cost) in replica-seconds.
      scores[i] = (load * typical_cost + cost) * penalty;
      continue;
    }
    // Utilisation, with this request counted at its size relative to the replica's typical one,
    // each priced at this replica's own prefill and decode rates: a request heavy in what this
    // replica is relatively slow at weighs more here.
    scores[i] = (load + cost / typical_cost) * penalty * at_ref / (kRef * with);
    // The band picker's key: this request's predicted time here, prefill plus its output
    // tokens at t(running + 1) = (n_ref / decode) · with / at_ref.
    if (band) tiebreak[i] = prompt * inv_prefill + output * kRef * with * inv_decode / at_ref;
  }
  if (any_finite || candidates.empty()) {
    ScoreNote note;
    if (band) note.band = p.fastest_within;
    return note;
  }
  return relaxToHeadroom(context, scores);
}

}  // namespace switchyard::routing
