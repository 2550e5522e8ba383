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
// Cost preference among replicas that meet the SLO: GPU types whose cost per request is within
// this factor of the cheapest are one tier (spread or packed by headroom alone); each further
// factor is a tier further down. Tiers are kTierStep apart, wider than the headroom term (0..1).
constexpr double kCostBand = 1.1;
constexpr double kTierStep = 2;
constexpr double kMaxTier = 100;  // kMaxTier × kTierStep stays far below kMissPenalty
// A reserved GPU type kept free for the shapes only it serves ranks after every cost tier of
// the other types: (kMaxTier + 1) × kTierStep, still below kMissPenalty.
constexpr double kReservedTier = kMaxTier + 1;

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

// How long the prompts already sent to `replica` and not yet answered with a first token keep
// a new request's prefill waiting (the engine prefills admitted requests first), at the replica's
// learned prefill rate, else the model's; 0 when none are pending or no rate is known.
double pendingPrefillSeconds(const fleet::ReplicaState& replica, double mean_prefill_rate) {
  const int64_t pending =
      replica.counters().prefill_pending_tokens.load(std::memory_order_relaxed);
  if (pending <= 0) return 0;
  const double own = replica.capacity().prefill;
  const double rate = std::isfinite(own) ? own : mean_prefill_rate;
  return rate > 0 ? static_cast<double>(pending) / rate : 0;
}

// The request on `replica` with `n` streams in flight (this one included), from the profile's
// prediction `p` at that load, its first token delayed by `waiting_prefill` seconds.
Predicted predictOn(const profile::Prediction& p, const fleet::ReplicaState& replica,
                    const profile::Slo& objective, double output, double n,
                    double waiting_prefill) {
  if (!p.valid) return {};
  double tpot = p.tpot_tail;
  const double learned = learnedTimePerToken(replica.capacity(), n);
  if (learned > 0 && p.tpot > 0)
    tpot *= std::clamp(learned / p.tpot, kMinCorrection, kMaxCorrection);
  const double ttft = p.ttft_tail + waiting_prefill;
  const double e2e = ttft + std::max(0.0, output - 1) * tpot;
  return {true, ttft, tpot, violation(objective, ttft, tpot, e2e)};
}

// What serving this shape costs on `profile`: its price per replica-hour over the requests per
// hour it serves within the SLO (infinite where the profile promises no rate).
double costPerRequest(const profile::GpuProfile& profile, double prompt, double output) {
  const double rate = profile.maxRate(prompt, output);
  return rate > 0 ? profile.cost / (3600 * rate) : INFINITY;
}

// The cost tier of `cost` against the cheapest candidate that meets the SLO.
double costTier(double cost, double cheapest) {
  if (!(cheapest > 0) || !std::isfinite(cheapest)) return 0;
  if (!std::isfinite(cost)) return kMaxTier;
  return std::min(kMaxTier, std::floor(std::log(cost / cheapest) / std::log(kCostBand) + 1e-9));
}

// One decision's profile lookups: the candidates of a GPU type share its profile, and loads
// repeat (requests in flight are small integers), so each (profile, load) is interpolated once
// and each profile's cost per request once. A decision over a few GPU types then costs a few
// interpolations plus one correction per candidate. On the stack; no allocation.
class ProfileMemo {
 public:
  ProfileMemo(double prompt, double output) : prompt_(prompt), output_(output) {}

  profile::Prediction at(const profile::GpuProfile& profile, int64_t n) {
    Entry* e = entry(profile);
    if (e == nullptr || n < 1 || n > kLoads) {
      return profile.predict(prompt_, output_, static_cast<double>(n));
    }
    const uint64_t bit = uint64_t{1} << (n - 1);
    if (!(e->known & bit)) {
      e->at[n - 1].p = profile.predict(prompt_, output_, static_cast<double>(n));
      e->known |= bit;
    }
    return e->at[n - 1].p;
  }
  double cost(const profile::GpuProfile& profile) {
    Entry* e = entry(profile);
    if (e == nullptr) return costPerRequest(profile, prompt_, output_);
    if (e->cost < 0) e->cost = costPerRequest(profile, prompt_, output_);
    return e->cost;
  }

 private:
  static constexpr int kProfiles = 8;  // GPU types per model beyond this are not memoised
  static constexpr int kLoads = 64;    // loads 1..kLoads (one bit each in `known`)
  union Slot {  // left uninitialised until its bit in `known` is set: no per-decision zeroing
    Slot() {}
    profile::Prediction p;
  };
  struct Entry {
    const profile::GpuProfile* profile = nullptr;
    double cost = -1;
    uint64_t known = 0;
    Slot at[kLoads];
  };
  Entry* entry(const profile::GpuProfile& profile) {
    for (int i = 0; i < used_; ++i) {
      if (entries_[i].profile == &profile) return &entries_[i];
    }
    if (used_ == kProfiles) return nullptr;
    entries_[used_].profile = &profile;
    return &entries_[used_++];
  }

  double prompt_;
  double output_;
  int used_ = 0;
  Entry entries_[kProfiles];
};

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
  ProfileMemo memo(prompt, output);
  const double mean_prefill = model.runtime ? model.runtime->learnedMeans().prefill : NAN;
  bool any_meets = false;
  bool spare = false;  // an unreserved GPU type among the candidates serves this shape in time
  double cheapest = INFINITY;  // cost per request of the cheapest candidate meeting the SLO
  for (size_t i = 0; i < candidates.size(); ++i) {
    const fleet::ReplicaState& replica = *model.replicas[candidates[i]].state;
    const int64_t in_flight = replica.globalRunning();
    const double running = static_cast<double>(in_flight);
    const double n = running + 1;
    const profile::GpuProfile& profile = *model.replica_profiles[candidates[i]];
    const Predicted p = predictOn(memo.at(profile, in_flight + 1), replica, objective, output, n,
                                  pendingPrefillSeconds(replica, mean_prefill));
    CandidateInputs& in = context.inputs[i];
    tiebreak[i] = pack ? -running : running;
    in.cost_per_request = memo.cost(profile);
    spare |= std::isfinite(in.cost_per_request) && !model.slo->isReserved(profile);
    if (!p.valid) {
      // Outside what the profile measured: no promise either way; ranked after any that meets.
      in.predicted_ttft = -1;
      in.predicted_tpot = -1;
      scores[i] = kMissPenalty + n;
      continue;
    }
    in.predicted_ttft = p.ttft;
    in.predicted_tpot = p.tpot;
    const bool meets = p.v <= 1;
    any_meets |= meets;
    if (meets) cheapest = std::min(cheapest, in.cost_per_request);
    scores[i] = meets ? (pack ? 1 - p.v : p.v) : kMissPenalty + p.v;
  }
  // Among those that meet it, the cheapest GPU type for this shape first, so the dearer types
  // stay free for the shapes only they can serve in time (the optimizer's assignment of cells
  // to types); headroom (or packing) decides within a tier. A type reserved for shapes no other
  // type serves in time ranks after the others for a shape another type serves: work the
  // others can do in time stays off it, keeping its batches for the shapes that need it (and
  // its streams out of their prefills' way), until the others would miss the SLO.
  for (size_t i = 0; any_meets && i < candidates.size(); ++i) {
    if (scores[i] < kMissPenalty) {
      const bool keep_free =
          spare && model.slo->isReserved(*model.replica_profiles[candidates[i]]);
      scores[i] += kTierStep * (costTier(context.inputs[i].cost_per_request, cheapest) +
                                (keep_free ? kReservedTier : 0));
    }
  }
  note.predicted = true;
  if (variant_ != SloVariant::kLeastLoadPulling || any_meets || context.dry_run) return note;
  // Holding helps only if waiting can: a request no replica would serve in time even alone goes
  // now, to the least violation.
  for (size_t i = 0; i < candidates.size() && !note.hold; ++i) {
    const fleet::ReplicaState& replica = *model.replicas[candidates[i]].state;
    const profile::Prediction at_one = memo.at(*model.replica_profiles[candidates[i]], 1);
    const Predicted alone = predictOn(at_one, replica, objective, output, 1, 0);
    note.hold = alone.valid && alone.v <= 1;
  }
  return note;
}

}  // namespace switchyard::routing
