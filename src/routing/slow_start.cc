#include "routing/slow_start.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace switchyard::routing {
namespace {
bool known(double v) { return std::isfinite(v) && v > 0; }

// Mean of one learned capacity over the established candidates that have it; NaN if none.
double establishedMean(std::span<const CandidateInputs> inputs, double CandidateInputs::*field) {
  double sum = 0;
  int n = 0;
  for (const CandidateInputs& in : inputs) {
    if (in.warmth < 1.0 || !known(in.*field)) continue;
    sum += in.*field;
    ++n;
  }
  return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
}
}  // namespace

double slowStartProgress(TimeNs ready_since, TimeNs now, const fleet::SlowStartParams& params) {
  if (ready_since == fleet::ReplicaState::kEstablished || params.ramp <= 0) return 1.0;
  const TimeNs elapsed = now - ready_since;
  if (elapsed >= params.ramp) return 1.0;
  if (elapsed <= 0) return 0.0;  // marked ready after this decision's clock reading
  return static_cast<double>(elapsed) / static_cast<double>(params.ramp);
}

double slowStartTrust(double progress, double aggression) {
  if (progress >= 1.0) return 1.0;
  if (progress <= 0.0) return 0.0;
  return aggression == 1.0 ? progress : std::pow(progress, 1.0 / aggression);
}

SlowStartSummary computeSlowStart(const ScoringContext& context,
                                  std::span<const uint32_t> candidates) {
  const fleet::SlowStartParams& params = context.model.slow_start;
  SlowStartSummary summary;
  double established_sum = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateInputs& in = context.inputs[i];
    const TimeNs since = context.model.replicas[candidates[i]].state->readySince();
    in.warmth = slowStartProgress(since, context.now, params);
    in.synthetic_load = 0;
    if (in.warmth < 1.0) {
      ++summary.warming;
    } else {
      established_sum += in.running;
    }
  }
  const size_t established = candidates.size() - summary.warming;
  if (summary.warming == 0 || established == 0) return summary;
  summary.established_load = established_sum / static_cast<double>(established);
  for (size_t i = 0; i < candidates.size(); ++i) {
    CandidateInputs& in = context.inputs[i];
    if (in.warmth < 1.0) {
      in.synthetic_load =
          summary.established_load * (1.0 - slowStartTrust(in.warmth, params.aggression));
    }
  }
  return summary;
}

namespace internal {

void easeInWarming(const ScoringContext& context, std::span<const uint32_t> candidates) {
  if (computeSlowStart(context, candidates).warming == 0) return;
  const std::span<CandidateInputs> inputs = context.inputs.first(candidates.size());
  const double decode_mean = establishedMean(inputs, &CandidateInputs::decode);
  const double prefill_mean = establishedMean(inputs, &CandidateInputs::prefill);
  const double aggression = context.model.slow_start.aggression;
  for (CandidateInputs& in : inputs) {
    if (in.warmth >= 1.0) continue;
    in.running += in.synthetic_load;
    const double trust = slowStartTrust(in.warmth, aggression);
    if (!std::isnan(decode_mean) && known(in.decode)) {
      in.decode = trust * in.decode + (1.0 - trust) * decode_mean;
    }
    if (!std::isnan(prefill_mean) && known(in.prefill)) {
      in.prefill = trust * in.prefill + (1.0 - trust) * prefill_mean;
    }
  }
}

}  // namespace internal
}  // namespace switchyard::routing
