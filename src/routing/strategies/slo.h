#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// SLO routing (docs/routing.md, "SLO routing"): route to the replicas predicted to meet the
// request's SLO, from the profile of each replica's GPU type (profile/slo_profiles.h).
//
// Per candidate, with n = its requests in flight across gateways plus this one:
//   predicted TTFT, TPOT (at the objective's percentile) = profile.predict(prompt, output, n),
//   TPOT corrected by what the gateway learned of that replica: the time per token of its
//   batching curve at n (fleet/capacity_estimator.h), bounded to [½, 2]× the profile's;
//   TTFT delayed by the prefill of the prompts this gateway sent there that have no first token
//   yet (ReplicaCounters::prefill_pending_tokens at the learned prefill rate): each profile cell
//   was measured with its shape alone, so it cannot see a 4k-token prompt queued ahead;
//   violation v = max over the objective's kinds of predicted ÷ objective (v <= 1 meets it).
// The prompt is estimated from the body; the output is the request's max_tokens, else what the
// model's requests of that prompt size produced (learned from completions), else 256.
// Replicas predicted to meet the SLO score v (slo-least-load: the most headroom first) or 1 − v
// (slo-pack-load: the fullest that still meets it, consolidating), plus 2 × their cost tier: the
// cost per request of the shape on the replica's GPU type (profile cost ÷ the profile's highest
// rate within the SLO at that shape) against the cheapest that meets the SLO, in bands of 10 %
// (tier 0 = within 10 % of the cheapest). So among the types that can serve a request in time
// the cheapest for its shape is filled first and the dearer ones are kept for the shapes only
// they serve in time, as the optimizer sized them. Those predicted to miss it score 1000 + v,
// so they are chosen only when nobody meets it, the least violation first.
// slo-least-load-pulling (and `slo`) scores like slo-least-load but, when no candidate meets the
// SLO now and some would serving it alone, asks the gateway to hold the request in its queue
// until one does (ScoreNote::hold); a request nobody would serve in time even alone goes now.
// Without a profile for some candidate's GPU type the decision is load-balance's, recorded as a
// fallback. Ties: fewer requests in flight (pack: more). Allocation-free.
enum class SloVariant : uint8_t { kPackLoad, kLeastLoad, kLeastLoadPulling };

class SloStrategy final : public Strategy {
 public:
  SloStrategy(std::string_view name, SloVariant variant) : name_(name), variant_(variant) {}
  std::string_view name() const override { return name_; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }

 private:
  std::string_view name_;
  SloVariant variant_;
};

}  // namespace switchyard::routing
