#include "routing/strategies/slo.h"

#include <algorithm>
#include <cmath>

#include "profile/slo_profiles.h"

namespace switchyard::routing {
namespace {

// Output tokens planned for a request that gives no max_tokens and whose model learned nothing.
constexpr double kDefaultOutputTokens = 256;
// Bounds of the learned correction of a profile's time per token.
constexpr double kMinCorrection = 0.5;
constexpr double kMaxCorrection = 2.0;
// Added to the score of a replica predicted to miss the SLO: far above any that meets it.
constexpr double kMissPenalty = 1000;

// The replica's own time per token at n streams from its learned batching curve; NaN unknown.
double learnedTimePerToken(const fleet::LearnedCapacity& learned, double n) {
  if (!(learned.decode > 0) || learned.tokenless || !(learned.slowdown >= 0)) return NAN;
  const double ref = fleet::kReferenceConcurrency;
  return ref / learned.decode * (1 + learned.slowdown * n) / (1 + learned.slowdown * ref);
}

// How far the prediction is from the objective: the largest predicted ÷ objective over the kinds
// the objective sets (<= 1 meets it).
double violation(const profile::Slo& objective, double ttft, double tpot, double e2e) {
  double v = 0;
  if (objective.ttft > 0) v = std::max(v, ttft / objective.ttft);
  if (objective.tpot > 0) v = std::max(v, tpot / objective.tpot);
  if (objective.e2e > 0) v = std::max(v, e2e / objective.e2e);
  return v;
}

struct Predicted {
  bool valid = false;
  double ttft = 0;  // at the objective's percentile, seconds
  double tpot = 0;  // ...corrected by the replica's learned curve
  double v = 0;     // violation: <= 1 meets the objective
};

// The request on `replica` with `n` streams in flight (this one included), from `profile`.
Predicted predictOn(const profile::GpuProfile& profile, const fleet::ReplicaState& replica,
                    const profile::Slo& objective, double prompt, double output, double n) {
  const profile::Prediction p = profile.predict(prompt, output, n);
  if (!p.valid) return {};
  double tpot = p.tpot_tail;
  const double learned = learnedTimePerToken(replica.capacity(), n);
  if (learned > 0 && p.tpot > 0)
    tpot *= std::clamp(learned / p.tpot, kMinCorrection, kMaxCorrection);
  const double e2e = p.ttft_tail + std::max(0.0, output - 1) * tpot;
  return {true, p.ttft_tail, tpot, violation(objective, p.ttft_tail, tpot, e2e)};
}

}  // namespace

ScoreNote SloStrategy::score(const ScoringContext& context, std::span<const uint32_t> candidates,
                             std::span<double> scores, std::span<double> tiebreak) const {
  const fleet::ModelEntry& model = context.model;
  ScoreNote note;
  bool profiled = model.slo != nullptr && model.replica_profiles.size() == model.replicas.size();
  for (size_t i = 0; profiled && i < candidates.size(); ++i) {
    profiled = model.replica_profiles[candidates[i]] != nullptr;
  }
  if (!profiled) {
    // Not every GPU type has a profile: load-balance decides, and the record says so.
    note = findStrategy("load-balance")->score(context, candidates, scores, tiebreak);
    note.fallback = true;
    return note;
  }
  const profile::Slo& objective = model.slo->objective;
  const double prompt = std::max(1.0, context.shape.prompt_tokens);
  const double output = context.shape.max_tokens > 0
                            ? context.shape.max_tokens
                            : model.runtime->output_lengths.estimate(prompt, kDefaultOutputTokens);
  const bool pack = variant_ == SloVariant::kPackLoad;
  bool any_meets = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const fleet::ReplicaState& replica = *model.replicas[candidates[i]].state;
    const double running = static_cast<double>(replica.globalRunning());
    const double n = running + 1;
    const Predicted p =
        predictOn(*model.replica_profiles[candidates[i]], replica, objective, prompt, output, n);
    CandidateInputs& in = context.inputs[i];
    if (!p.valid) {
      // Outside what the profile measured: no promise either way; ranked after any that meets.
      in.predicted_ttft = -1;
      in.predicted_tpot = -1;
      scores[i] = kMissPenalty + n;
      tiebreak[i] = pack ? -running : running;
      continue;
    }
    in.predicted_ttft = p.ttft;
    in.predicted_tpot = p.tpot;
    const bool meets = p.v <= 1;
    any_meets |= meets;
    scores[i] = meets ? (pack ? 1 - p.v : p.v) : kMissPenalty + p.v;
    tiebreak[i] = pack ? -running : running;
  }
  note.predicted = true;
  if (variant_ != SloVariant::kLeastLoadPulling || any_meets || context.dry_run) return note;
  // Holding helps only if waiting can: a request no replica would serve in time even alone goes
  // now, to the least violation.
  for (size_t i = 0; i < candidates.size() && !note.hold; ++i) {
    const fleet::ReplicaState& replica = *model.replicas[candidates[i]].state;
    const Predicted alone =
        predictOn(*model.replica_profiles[candidates[i]], replica, objective, prompt, output, 1);
    note.hold = alone.valid && alone.v <= 1;
  }
  return note;
}

}  // namespace switchyard::routing
