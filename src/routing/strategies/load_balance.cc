#include "routing/strategies/load_balance.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  // Nothing learned anywhere: equal capacities, the score is load × KV penalty.
  const double fallback = std::isnan(agg.mean_decode) ? 1.0 : agg.mean_decode;
  const double lambda = p.queued_weight;
  const KvRule kv{p.kv_alpha, p.kv_critical_free};
  bool any_finite = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CandidateInputs& in = context.inputs[i];
    const double penalty = kvFactor(in, kv, tiebreak[i]);
    if (penalty == 0) {
      scores[i] = kInf;
      continue;
    }
    // λ = 0 skips the queue entirely (and an unknown queue cannot turn the score into NaN).
    const double load = in.running + 1.0 + (lambda > 0 ? lambda * in.waiting : 0.0);
    scores[i] = load * penalty / (known(in.decode) ? in.decode : fallback);
    any_finite = true;
  }
  if (any_finite || candidates.empty()) return {};
  return relaxToHeadroom(context, scores);
}

ScoreNote ShapeAwareLoadBalanceStrategy::score(const ScoringContext& context,
                                               std::span<const uint32_t> candidates,
                                               std::span<double> scores,
                                               std::span<double> tiebreak) const {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  const internal::CandidateAggregates agg = internal::gatherInputs(context, candidates);
  const bool learned = !std::isnan(agg.mean_decode) && !std::isnan(agg.mean_prefill);
  const double fallback = std::isnan(agg.mean_decode) ? 1.0 : agg.mean_decode;
  const double lambda = p.queued_weight;
  const KvRule kv{p.kv_alpha, p.kv_critical_free};
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
    if (!learned || in.tokenless) {
      scores[i] = (load + 1.0) * penalty / (known(in.decode) ? in.decode : fallback);
      continue;
    }
    const double inv_decode = 1.0 / (known(in.decode) ? in.decode : agg.mean_decode);
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
    // (load × typical cost + this request's cost) in replica-seconds.
    scores[i] = (load * mean_prompt + prompt) * inv_prefill * penalty +
                (load * mean_output + output) * inv_decode * penalty;
  }
  if (any_finite || candidates.empty()) return {};
  return relaxToHeadroom(context, scores);
}

}  // namespace switchyard::routing
