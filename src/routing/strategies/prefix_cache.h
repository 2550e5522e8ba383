#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// prefix-cache: prefer the replica that has probably cached the longest prefix of the request's
// prompt (approximate: learned from this worker's own routing, routing/prefix_probe.h).
//   score = 1 − matched_blocks / total_blocks        (0: the whole prompt is cached there)
// Hot-spot guard: with fair_r = (Σ running + 1) × capacity_r ÷ Σ capacity (this request's fair
// share of the in-flight requests by capacity: the learned decode capacity, the candidates' mean
// where unknown, equal where none is known), a candidate with running_r + 1 >
// max(hot_spot_factor × fair_r, 2) + max(0, matched_tokens_r ÷ hot_spot_tokens − 1) scores 1
// whatever it matched, so a popular prefix cannot pile onto one replica; a match longer than
// hot_spot_tokens is worth more queue (its prefill saved, and no other prefix evicted to
// rebuild it elsewhere). A prefix no candidate holds even the first PrefixProbe::home_blocks of
// goes to its home: the first candidate in weighted rendezvous order (by the anchor's hash and the
// replica's name, weighted by PrefixProbe::homeWeight) that the guard would let hold it all,
// alike in every gateway and worker. Auto-blended with load-balance at 5 : 4 (autoBlendScale()).
// Without a probe or with a prompt shorter than a block every candidate scores 0 and load
// decides. Writes CandidateInputs::prefix_blocks (ScoreNote::prefix) so that decision records show
// each candidate's match.
class PrefixCacheStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "prefix-cache"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  // prefix-cache 5 : load-balance 4 by default (AIBrix's weights): a replica holding the prefix
  // wins unless it is the most loaded by more than the prefix's whole advantage; the hot-spot
  // guard bounds how loaded that may be.
  double autoBlendScale() const override { return 0.8; }
};

}  // namespace switchyard::routing
