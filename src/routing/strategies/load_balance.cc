#include "routing/strategies/load_balance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "fleet/batching_curve.h"
#include "routing/prefix_probe.h"
#include "routing/strategies/load_signals.h"

namespace switchyard::routing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRef = fleet::kReferenceConcurrency;

// A learned value usable as a divisor: positive and finite. One comparison pair, no isfinite():
// NaN fails both comparisons.
bool known(double v) { return v > 0 && v < kInf; }

// What every candidate's score shares, resolved once per decision: the loop then does one
// multiply-add for the load, one for the penalty and a division or two per candidate.
struct Terms {
  double lambda;            // λ: weight of engine-queued requests
  double kv_alpha;          // α: KV-pressure penalty
  double kv_critical_free;  // below this free KV the replica is passed over
  bool utilization;         // the utilization score (a batching curve is known somewhere)
  bool band;                // fastest within a band: the tiebreak is the predicted speed
  bool shape_learned;       // prefill and decode both learned somewhere (shape-aware)
  bool prefix;              // a blend's prefix-cache part has scored: the matches are known
  double blocks_per_queued; // matched blocks that are worth one queued request at a holder
  double fallback_decode;   // capacity of a replica without an estimate: the model's mean, or
                            // 1 when nothing is learned (equal capacities)
  double mean_prefill;
  double mean_slowdown;
};

Terms termsOf(const ScoringContext& context) {
  const fleet::LoadBalanceParams& p = context.model.load_balance;
  const fleet::LearnedMeans means = context.model.runtime->learnedMeans();
  Terms t;
  t.lambda = p.queued_weight;
  t.kv_alpha = p.kv_alpha;
  t.kv_critical_free = p.kv_critical_free;
  // Utilisation needs a batching curve; until one is fitted anywhere (or for tokenless work,
  // or sources without per-token times) requests per unit of capacity is what can be said.
  t.utilization = p.score == fleet::LoadBalanceScore::kUtilization && !std::isnan(means.slowdown);
  t.band = t.utilization && p.fastest_within > 0;
  t.shape_learned = !std::isnan(means.decode) && !std::isnan(means.prefill);
  t.prefix = context.prefix_matched;
  const PrefixProbe* probe = context.prefix;
  t.blocks_per_queued = probe != nullptr && probe->hot_spot_tokens > 0 && probe->block_tokens > 0
                            ? probe->hot_spot_tokens / probe->block_tokens
                            : 0;
  t.fallback_decode = std::isnan(means.decode) ? 1.0 : means.decode;
  t.mean_prefill = means.prefill;
  t.mean_slowdown = means.slowdown;
  return t;
}

// Whether a KV-critical replica is worth its queue for this request (kvFactor, in a prefix-cache
// blend). One whose KV events show it holding the prompt's prefix needs only the blocks past the
// match: with nothing queued the engine takes them as soon as they fit; behind a queue the
// request waits, where anywhere else it prefills the matched tokens again. The match is priced
// like the hot-spot guard's long-match allowance: one queued request per hot_spot_tokens
// matched, the request itself included, so a 6,000-token match waits behind up to two and a
// 1,536-token one behind none. An approximate match is a guess: never exempt.
inline bool holderWorthItsQueue(const CandidateInputs& in, const Terms& t) {
  if (!in.prefix_exact || in.prefix_blocks == 0 || in.waiting < 0) return false;
  if (in.waiting == 0) return true;
  return t.blocks_per_queued > 0 && in.waiting + 1 <= in.prefix_blocks / t.blocks_per_queued;
}

// Writes tiebreak (least GPU+CPU KV usage) and applies the KV guardrail; returns the penalty
// factor, or 0 when the candidate is critical (its score is then +Inf). kBlend: a prefix-cache
// part has scored (Terms::prefix). The scoring loop is compiled once for each, so that plain
// load-balance carries none of the holder's check: inlined into its loop, the check cost it
// 8–13 % (micro_bench's BM_RouteLoadBalance).
template <bool kBlend>
inline double kvFactor(const CandidateInputs& in, const Terms& t, double& tiebreak) {
  tiebreak = in.kv_usage + in.cpu_kv_usage;
  if (1.0 - in.kv_usage < t.kv_critical_free && !(kBlend && holderWorthItsQueue(in, t))) {
    return 0;
  }
  return 1.0 + t.kv_alpha * in.kv_usage * in.kv_usage;
}

// Every candidate was KV-critical: the request still goes somewhere, to the most headroom.
ScoreNote relaxToHeadroom(const ScoringContext& context, std::span<double> scores) {
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = context.inputs[i].kv_usage;
  ScoreNote note;
  note.relaxed = true;
  note.eased = true;
  return note;
}

// Scores every candidate with `one(inputs, replica, tiebreak)`. When every candidate is plain
// (fresh telemetry, a queue signal if λ reads it, not warming up) each replica is read into
// registers and scored at once: one pass, nothing written but the scores. Otherwise
// gatherInputs first applies the rules that need every candidate (stale and missing values
// take the worst fresh ones; slow start) and the candidates are scored from its table.
template <class ScoreOne>
ScoreNote scoreCandidates(const ScoringContext& context, std::span<const uint32_t> candidates,
                          std::span<double> scores, std::span<double> tiebreak,
                          const Terms& terms, ScoreOne one) {
  const TimeNs now = context.now;
  const TimeNs max_age = context.snapshot.signal_max_age;
  // Whether any score is finite is asked after the loop: a flag updated inside it would chain
  // every iteration to the previous one's division.
  const auto any_finite = [&scores] {
    return std::any_of(scores.begin(), scores.end(), [](double s) { return s < kInf; });
  };
  bool plain = true;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const fleet::ReplicaState& replica = context.model.stateAt(candidates[i]);
    CandidateInputs in;
    internal::readCandidate(replica, now, max_age, in);
    if (terms.prefix) {
      in.prefix_blocks = context.inputs[i].prefix_blocks;
      in.prefix_exact = context.inputs[i].prefix_exact;
    }
    if (!in.fresh || (terms.lambda > 0 && in.waiting < 0) ||
        replica.readySince() != fleet::ReplicaState::kEstablished) {
      plain = false;
      break;
    }
    scores[i] = one(in, replica, tiebreak[i]);
  }
  // Not plain, or every candidate critical (relaxing reads the gathered table).
  const bool gathered = !plain || !any_finite();
  if (gathered) {
    internal::gatherInputs(context, candidates);
    for (size_t i = 0; i < candidates.size(); ++i) {
      scores[i] = one(context.inputs[i], context.model.stateAt(candidates[i]), tiebreak[i]);
    }
  }
  if (gathered && !candidates.empty() && !any_finite()) return relaxToHeadroom(context, scores);
  ScoreNote note;
  note.pass_over = PassOver::kKvCritical;  // the only +Inf it gives
  note.eased = gathered;
  if (terms.band) note.band = context.model.load_balance.fastest_within;
  return note;
}

// load-balance's score of one candidate (load_balance.h).
template <bool kBlend>
inline double loadBalanceScore(const CandidateInputs& in, const Terms& t, double& tiebreak) {
  const double penalty = kvFactor<kBlend>(in, t, tiebreak);
  if (penalty == 0) return kInf;
  // λ = 0 skips the queue entirely (and an unknown queue cannot turn the score into NaN).
  const double load = in.running + 1.0 + (t.lambda > 0 ? t.lambda * in.waiting : 0.0);
  const double decode = known(in.decode) ? in.decode : t.fallback_decode;
  if (!t.utilization) return load * penalty / decode;
  // Output rate with this request, (running + 1) / t(running + 1), over the rate at the
  // reference concurrency, t(n) = t(0)·(1 + s·n): t(0) cancels, the curve's shape remains.
  const double s = fleet::shrunkSlowdown(in.slowdown, t.mean_slowdown);
  const double at_ref = 1.0 + s * kRef;              // t(n_ref) / t(0)
  const double with = 1.0 + s * (in.running + 1.0);  // t(running + 1) / t(0)
  if (!t.band) return load * penalty * at_ref / (kRef * with);
  // The band picker's key: this request's predicted time per token here, t(running + 1)
  // = (n_ref / capacity) · with / at_ref. Both over one denominator: one division, the
  // costliest step of the score.
  const double inv = 1.0 / (kRef * with * decode * at_ref);
  tiebreak = kRef * with * with * inv;
  return load * penalty * at_ref * at_ref * decode * inv;
}

// load-balance-shape-aware's score of one candidate (load_balance.h).
template <bool kBlend>
inline double shapeAwareScore(const CandidateInputs& in, const fleet::ReplicaState& replica,
                              const Terms& t, const RequestShape& shape, double& tiebreak) {
  // No shape to price: load-balance's score.
  if (!t.shape_learned || in.tokenless) return loadBalanceScore<kBlend>(in, t, tiebreak);
  const double penalty = kvFactor<kBlend>(in, t, tiebreak);
  if (penalty == 0) return kInf;
  const double load = in.running + (t.lambda > 0 ? t.lambda * in.waiting : 0.0);
  const double decode = known(in.decode) ? in.decode : t.fallback_decode;
  const double s = t.utilization ? fleet::shrunkSlowdown(in.slowdown, t.mean_slowdown) : 0;
  const double at_ref = 1.0 + s * kRef;              // t(n_ref) / t(0)
  const double with = 1.0 + s * (in.running + 1.0);  // t(running + 1) / t(0)
  const double inv_decode = 1.0 / decode;
  const double inv_prefill = 1.0 / (known(in.prefill) ? in.prefill : t.mean_prefill);
  // The replica's average request so far, from its own counters.
  const fleet::ReplicaCounters& c = replica.counters();
  const double inv_requests =
      1.0 / std::max<double>(
                1.0, static_cast<double>(c.requests_total.load(std::memory_order_relaxed)));
  const double mean_prompt =
      static_cast<double>(c.input_tokens_total.load(std::memory_order_relaxed)) * inv_requests;
  const double mean_output = std::max(
      1.0,
      static_cast<double>(c.output_tokens_total.load(std::memory_order_relaxed)) * inv_requests);
  const double prompt = shape.prompt_tokens >= 0 ? shape.prompt_tokens : mean_prompt;
  const double output = shape.max_tokens > 0 ? shape.max_tokens : mean_output;
  const double typical_cost = mean_prompt * inv_prefill + mean_output * inv_decode;
  const double cost = prompt * inv_prefill + output * inv_decode;
  // (load × typical cost + this request's cost) in replica-seconds.
  if (!t.utilization) return (load * typical_cost + cost) * penalty;
  // Utilisation, with this request counted at its size relative to the replica's typical one,
  // each priced at this replica's own prefill and decode rates: a request heavy in what this
  // replica is relatively slow at weighs more here.
  // The band picker's key: this request's predicted time here, prefill plus its output
  // tokens at t(running + 1) = (n_ref / decode) · with / at_ref.
  if (t.band) tiebreak = prompt * inv_prefill + output * kRef * with * inv_decode / at_ref;
  return (load + cost / typical_cost) * penalty * at_ref / (kRef * with);
}

}  // namespace

ScoreNote LoadBalanceStrategy::score(const ScoringContext& context,
                                     std::span<const uint32_t> candidates,
                                     std::span<double> scores,
                                     std::span<double> tiebreak) const {
  const Terms terms = termsOf(context);
  const auto score_with = [&](auto blend) {
    return scoreCandidates(context, candidates, scores, tiebreak, terms,
                           [&terms](const CandidateInputs& in, const fleet::ReplicaState&,
                                    double& tiebreak_out) {
                             return loadBalanceScore<decltype(blend)::value>(in, terms,
                                                                             tiebreak_out);
                           });
  };
  return terms.prefix ? score_with(std::true_type{}) : score_with(std::false_type{});
}
ScoreNote ShapeAwareLoadBalanceStrategy::score(const ScoringContext& context,
                                               std::span<const uint32_t> candidates,
                                               std::span<double> scores,
                                               std::span<double> tiebreak) const {
  const Terms terms = termsOf(context);
  const RequestShape shape = context.shape;
  const auto score_with = [&](auto blend) {
    return scoreCandidates(context, candidates, scores, tiebreak, terms,
                           [&terms, shape](const CandidateInputs& in,
                                           const fleet::ReplicaState& replica,
                                           double& tiebreak_out) {
                             return shapeAwareScore<decltype(blend)::value>(
                                 in, replica, terms, shape, tiebreak_out);
                           });
  };
  return terms.prefix ? score_with(std::true_type{}) : score_with(std::false_type{});
}

}  // namespace switchyard::routing
