#include "routing/strategies/load_balance.h"

#include <cmath>
#include <limits>

#include "routing/strategies/load_signals.h"

namespace switchyard::routing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool known(double v) { return std::isfinite(v) && v > 0; }

// Applies the KV penalty and guardrail to the load terms already in `scores`, writes the
// tie-break, and relaxes the guardrail when it would exclude every candidate.
ScoreNote applyKvPressure(const ScoringContext& context, std::span<double> scores,
                          std::span<double> tiebreak) {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  bool any_finite = false;
  for (size_t i = 0; i < scores.size(); ++i) {
    const CandidateInputs& in = context.inputs[i];
    tiebreak[i] = in.kv_usage + in.cpu_kv_usage;
    if (1.0 - in.kv_usage < p.kv_critical_free) {
      scores[i] = kInf;
      continue;
    }
    scores[i] *= 1.0 + p.kv_alpha * in.kv_usage * in.kv_usage;
    any_finite = true;
  }
  if (any_finite || scores.empty()) return {};
  // Every replica is KV-critical: the request still goes somewhere, to the most headroom.
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = context.inputs[i].kv_usage;
  return ScoreNote{true};
}

}  // namespace

ScoreNote LoadBalanceStrategy::score(const ScoringContext& context,
                                     std::span<const uint32_t> candidates,
                                     std::span<double> scores,
                                     std::span<double> tiebreak) const {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  const internal::CandidateAggregates agg = internal::gatherInputs(context, candidates);
  const double mean = std::isnan(agg.mean_decode) ? 1.0 : agg.mean_decode;  // nothing learned:
                                                                            // equal capacities
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CandidateInputs& in = context.inputs[i];
    scores[i] = (in.running + p.queued_weight * in.waiting + 1.0) /
                (known(in.decode) ? in.decode : mean);
  }
  return applyKvPressure(context, scores, tiebreak);
}

ScoreNote ShapeAwareLoadBalanceStrategy::score(const ScoringContext& context,
                                               std::span<const uint32_t> candidates,
                                               std::span<double> scores,
                                               std::span<double> tiebreak) const {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  const internal::CandidateAggregates agg = internal::gatherInputs(context, candidates);
  const bool learned = !std::isnan(agg.mean_decode) && !std::isnan(agg.mean_prefill);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CandidateInputs& in = context.inputs[i];
    const double load = in.running + p.queued_weight * in.waiting;
    if (!learned || in.tokenless) {
      const double decode = known(in.decode) ? in.decode
                            : std::isnan(agg.mean_decode) ? 1.0 : agg.mean_decode;
      scores[i] = (load + 1.0) / decode;
      continue;
    }
    const double decode = known(in.decode) ? in.decode : agg.mean_decode;
    const double prefill = known(in.prefill) ? in.prefill : agg.mean_prefill;
    // The replica's average request so far, from its own counters.
    const fleet::ReplicaCounters& c = context.model.replicas[candidates[i]].state->counters();
    const double requests = std::max<double>(
        1.0, static_cast<double>(c.requests_total.load(std::memory_order_relaxed)));
    const double mean_prompt =
        static_cast<double>(c.input_tokens_total.load(std::memory_order_relaxed)) / requests;
    const double mean_output = std::max(
        1.0, static_cast<double>(c.output_tokens_total.load(std::memory_order_relaxed)) / requests);
    const double typical_cost = mean_prompt / prefill + mean_output / decode;
    const double prompt =
        context.shape.prompt_tokens >= 0 ? context.shape.prompt_tokens : mean_prompt;
    const double output = context.shape.max_tokens > 0 ? context.shape.max_tokens : mean_output;
    scores[i] = load * typical_cost + prompt / prefill + output / decode;
  }
  return applyKvPressure(context, scores, tiebreak);
}

}  // namespace switchyard::routing
