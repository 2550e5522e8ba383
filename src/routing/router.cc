#include "routing/router.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "profile/slo_profiles.h"
#include "routing/prefix_probe.h"

namespace switchyard::routing {
namespace {

// Min-max normalises finite scores to [0, 1]; +Inf becomes kInfPenalty (above 1, so the value
// alone tells a blend which candidates a component passed over).
void normalise(std::span<double> scores) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (double s : scores) {
    if (std::isfinite(s)) {
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
  }
  const double range = hi - lo;
  for (double& s : scores) {
    if (!std::isfinite(s)) {
      s = kInfPenalty;
    } else {
      s = range > 0 ? (s - lo) / range : 0.0;
    }
  }
}

}  // namespace

std::string_view passOverName(PassOver reason) {
  switch (reason) {
    case PassOver::kNone:
      return "none";
    case PassOver::kKvCritical:
      return "kv_critical";
  }
  return "unknown";
}

std::string_view exclusionName(Exclusion reason) {
  switch (reason) {
    case Exclusion::kNone:
      return "none";
    case Exclusion::kUnhealthy:
      return "unhealthy";
    case Exclusion::kHalfOpenBusy:
      return "half_open_busy";
    case Exclusion::kSaturated:
      return "saturated";
    case Exclusion::kFailedThisRequest:
      return "failed_this_request";
    case Exclusion::kDraining:
      return "draining";
    case Exclusion::kNotReady:
      return "not_ready";
    case Exclusion::kOtherGpu:
      return "other_gpu";
  }
  return "unknown";
}

int pickLowest(std::span<const double> scores, std::span<const double> tiebreak, Rng& rng) {
  int best = -1;
  uint32_t ties = 0;
  const bool has_tiebreak = tiebreak.size() == scores.size();
  for (size_t i = 0; i < scores.size(); ++i) {
    bool better = best < 0 || scores[i] < scores[best];
    bool equal = !better && scores[i] == scores[best];
    if (equal && has_tiebreak && tiebreak[i] != tiebreak[best]) {
      better = tiebreak[i] < tiebreak[best];
      equal = false;
    }
    if (better) {
      best = static_cast<int>(i);
      ties = 1;
    } else if (equal) {
      // Reservoir sampling over the tied minimum: each tie wins with equal probability.
      ++ties;
      if (rng.below(ties) == 0) best = static_cast<int>(i);
    }
  }
  return best;
}

int pickTopK(std::span<const double> scores, uint32_t k, double tolerance, Rng& rng,
             std::span<uint32_t> work, double* cutoff) {
  double lo = std::numeric_limits<double>::infinity();
  for (double s : scores) {
    if (std::isfinite(s)) lo = std::min(lo, s);
  }
  if (!std::isfinite(lo) || k == 0) {
    *cutoff = -std::numeric_limits<double>::infinity();  // no set: nothing was near a minimum
    return pickLowest(scores, {}, rng);
  }
  const double limit = lo + tolerance;
  uint32_t n = 0;
  double edge = lo;  // the highest score in the set
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] <= limit) {
      work[n++] = static_cast<uint32_t>(i);
      edge = std::max(edge, scores[i]);
    }
  }
  if (n > k) {
    std::nth_element(work.begin(), work.begin() + (k - 1), work.begin() + n,
                     [&](uint32_t a, uint32_t b) { return scores[a] < scores[b]; });
    edge = scores[work[k - 1]];
  }
  uint32_t below = 0;
  uint32_t at = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const double s = scores[work[j]];
    below += s < edge;
    at += s == edge;
  }
  // A uniform place among the min(n, K); the places the replicas below the edge do not fill
  // go to one of the tied replicas at the edge, uniformly.
  const uint32_t places = std::min(n, k);
  uint32_t r = rng.below(places);
  const bool from_below = r < below;
  if (!from_below) r = rng.below(at);
  *cutoff = edge;
  for (uint32_t j = 0; j < n; ++j) {
    const double s = scores[work[j]];
    if ((from_below ? s < edge : s == edge) && r-- == 0) return static_cast<int>(work[j]);
  }
  return static_cast<int>(work[0]);  // unreachable: r < below or r < at
}

int pickWithinBand(std::span<const double> scores, double band, std::span<const double> tiebreak,
                   Rng& rng, double* cutoff) {
  double lo = std::numeric_limits<double>::infinity();
  for (double s : scores) lo = std::min(lo, s);  // +Inf never wins a min against a finite
  if (!std::isfinite(lo)) {
    *cutoff = -std::numeric_limits<double>::infinity();
    return pickLowest(scores, tiebreak, rng);
  }
  const double limit = lo + band;
  *cutoff = limit;
  int best = -1;
  uint32_t ties = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!(scores[i] <= limit)) continue;
    if (best < 0 || tiebreak[i] < tiebreak[best]) {
      best = static_cast<int>(i);
      ties = 1;
    } else if (tiebreak[i] == tiebreak[best] && rng.below(++ties) == 0) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

namespace {

// The filters, in order, for one replica: writes its row and counts it; true for a candidate.
class Filters {
 public:
  Filters(const fleet::ModelEntry& model, const RouteRequest& request, Decision& decision)
      : model_(model), request_(request), decision_(decision),
        max_inflight_(model.limits.max_inflight_per_replica) {}

  [[gnu::always_inline]] bool pass(uint32_t i, CandidateRow& row) {
    row = CandidateRow{i, Exclusion::kNone, 0};
    const fleet::ReplicaState& replica = model_.stateAt(i);
    // The in-flight count is read only where a filter needs it: the scorers read it anyway.
    if (!request_.tried.empty() &&
        std::find(request_.tried.begin(), request_.tried.end(), static_cast<int>(i)) !=
            request_.tried.end()) {
      row.excluded = Exclusion::kFailedThisRequest;
      return false;
    }
    if (!request_.gpu.empty() && model_.replicas[i].gpu != request_.gpu) {
      row.excluded = Exclusion::kOtherGpu;
      ++decision_.other_gpu;
      return false;
    }
    // One byte says whether the replica's lifecycle or health can exclude it: a replica in
    // good standing costs one load here.
    const uint8_t gate = replica.routingGate();
    if (gate & fleet::kLifecycleFlags) {
      row.excluded = (gate & fleet::kDrainingFlags) ? Exclusion::kDraining
                                                    : Exclusion::kNotReady;
      ++decision_.unavailable;
    } else if (max_inflight_ > 0 && replica.globalRunning() >= max_inflight_) {
      row.excluded = Exclusion::kSaturated;
      ++decision_.saturated;
    } else if (gate == 0) {
      return true;
    } else if (const fleet::HealthState health = replica.health();
               health == fleet::HealthState::kExcluded) {
      row.excluded = Exclusion::kUnhealthy;
      ++unhealthy_;
    } else if (health == fleet::HealthState::kHalfOpen && replica.globalRunning() > 0) {
      row.excluded = Exclusion::kHalfOpenBusy;
      ++unhealthy_;
    } else {
      return true;
    }
    return false;
  }
  uint32_t unhealthy() const { return unhealthy_; }

 private:
  const fleet::ModelEntry& model_;
  const RouteRequest& request_;
  Decision& decision_;
  const int64_t max_inflight_;
  uint32_t unhealthy_ = 0;
};

// Every replica, in fleet order: rows[i] is replica i, so a candidate's row is its replica index.
uint32_t filterFleet(const fleet::ModelEntry& model, const RouteRequest& request,
                     Decision& decision, RoutingScratch& scratch) {
  const auto n = static_cast<uint32_t>(model.replicas.size());
  scratch.rows.resize(n);
  Filters filters(model, request, decision);
  for (uint32_t i = 0; i < n; ++i) {
    if (filters.pass(i, scratch.rows[i])) scratch.candidates.push_back(i);
  }
  return filters.unhealthy();
}

// A sample is drawn and fetched this many replicas at a time.
constexpr uint32_t kPrefetchBatch = 32;

// `k` replicas drawn uniformly without replacement (Floyd's algorithm), plus the preferred one
// when there is one, so that a session's pin is honoured whatever the draw.
uint32_t filterSample(const fleet::ModelEntry& model, const RouteRequest& request, uint32_t k,
                      Rng& rng, Decision& decision, RoutingScratch& scratch) {
  const auto n = static_cast<uint32_t>(model.replicas.size());
  if (scratch.stamp.size() < n) scratch.stamp.resize(n, 0);
  if (++scratch.epoch == 0) {  // wrapped: old stamps could read as current
    std::fill(scratch.stamp.begin(), scratch.stamp.end(), 0);
    scratch.epoch = 1;
  }
  const uint32_t epoch = scratch.epoch;
  scratch.rows.clear();
  Filters filters(model, request, decision);
  auto filter = [&](uint32_t i) {
    const auto row = static_cast<uint32_t>(scratch.rows.size());
    if (filters.pass(i, scratch.rows.emplace_back())) {
      scratch.candidates.push_back(i);
      scratch.candidate_rows.push_back(row);
    }
  };
  if (request.preferred >= 0 && static_cast<uint32_t>(request.preferred) < n) {
    scratch.stamp[request.preferred] = epoch;
    filter(static_cast<uint32_t>(request.preferred));
  }
  // Draw the sample (the stamps mark what is drawn) a batch at a time, fetch every drawn
  // replica's state, then filter the batch: a sample's reads overlap instead of
  // missing the cache one after another. Rows keep the draw's order.
  uint32_t drawn[kPrefetchBatch];
  uint32_t m = 0;
  auto flush = [&] {
    for (uint32_t d = 0; d < m; ++d) model.stateAt(drawn[d]).prefetchForRouting();
    for (uint32_t d = 0; d < m; ++d) filter(drawn[d]);
    m = 0;
  };
  for (uint32_t j = n - k; j < n; ++j) {
    const uint32_t t = rng.below(j + 1);
    const uint32_t i = scratch.stamp[t] == epoch ? j : t;
    if (scratch.stamp[i] == epoch) continue;  // the preferred replica, drawn again
    scratch.stamp[i] = epoch;
    drawn[m++] = i;
    if (m == kPrefetchBatch) flush();
  }
  flush();
  decision.sampled = static_cast<uint32_t>(scratch.rows.size());
  return filters.unhealthy();
}

}  // namespace

Decision route(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model,
               const RouteRequest& request, Rng& rng, RoutingScratch& scratch) {
  Decision decision;
  decision.strategy = request.spec->text;
  const size_t n = model.replicas.size();
  decision.ready = static_cast<uint32_t>(n);
  scratch.candidates.clear();
  scratch.candidate_rows.clear();
  // Candidate sampling: a random subset stands for the fleet, so the cost of a decision does not
  // grow with it. Not for explanations (every replica's score is wanted) nor round-robin.
  bool sample = model.candidate_sample > 0 && n > model.candidate_sample && !request.dry_run;
  for (const StrategyComponent& part : request.spec->parts()) {
    sample &= part.strategy->samplesCandidates();
  }
  uint32_t unhealthy = 0;
  if (sample) {
    unhealthy = filterSample(model, request, model.candidate_sample, rng, decision, scratch);
    if (scratch.candidates.empty()) {
      // The whole sample is filtered out: the fleet may still have candidates. Decide on all
      // of it, as without sampling (the health fallback included).
      decision.saturated = 0;
      decision.unavailable = 0;
      decision.other_gpu = 0;
      decision.sampled = 0;
      unhealthy = filterFleet(model, request, decision, scratch);
    }
  } else {
    unhealthy = filterFleet(model, request, decision, scratch);
  }
  if (scratch.candidates.empty() && unhealthy > 0) {  // only after a pass over the fleet
    decision.health_fallback = true;
    for (uint32_t i = 0; i < scratch.rows.size(); ++i) {
      Exclusion& why = scratch.rows[i].excluded;
      if (why == Exclusion::kUnhealthy || why == Exclusion::kHalfOpenBusy) {
        why = Exclusion::kNone;
        scratch.candidates.push_back(i);
      }
    }
  }
  // The row of each candidate: its replica index, unless the rows are a sample's.
  const std::span<const uint32_t> candidate_rows =
      decision.sampled > 0 ? std::span<const uint32_t>(scratch.candidate_rows)
                           : std::span<const uint32_t>(scratch.candidates);
  decision.rows = scratch.rows;
  const size_t m = scratch.candidates.size();
  decision.candidates = static_cast<uint32_t>(m);
  if (m == 0) return decision;
  if (const CandidateRow* pinned = decision.rowOf(request.preferred);
      pinned != nullptr && pinned->excluded == Exclusion::kNone && !decision.health_fallback) {
    decision.chosen = request.preferred;
    decision.affinity = true;
    return decision;
  }

  // The effective components: the request's, plus load-balance when auto-blended.
  std::array<StrategyComponent, StrategySpec::kMaxComponents + 1> parts;
  size_t count = 0;
  bool wants_blend = false;
  bool has_load_balance = false;
  double blend_scale = 1.0;
  for (const StrategyComponent& part : request.spec->parts()) {
    parts[count++] = part;
    wants_blend |= part.strategy->autoBlendsLoadBalance();
    if (part.strategy->autoBlendsLoadBalance()) {
      blend_scale = std::min(blend_scale, part.strategy->autoBlendScale());
    }
    has_load_balance |= part.strategy->name() == "load-balance";
  }
  if (wants_blend && !has_load_balance && snapshot.auto_blend_load_balance_weight > 0) {
    parts[count++] = {findStrategy("load-balance"),
                      snapshot.auto_blend_load_balance_weight * blend_scale};
  }

  scratch.inputs.resize(m);
  ScoringContext context{snapshot, model,           request.now,    rng,
                         request.shape, scratch.inputs, request.dry_run, request.prefix};
  scratch.tiebreak.assign(m, 0.0);
  ScoreNote alone;  // the note of a strategy used alone: it may ask for the top-K picker
  bool eased = false;  // the inputs table holds slow start's synthetic loads
  bool predicted = false;  // ... and SLO routing's predicted latencies
  bool prefix = false;     // ... and prefix-cache routing's match lengths
  if (count == 1) {
    scratch.scores.resize(m);  // a strategy writes every score
    alone = parts[0].strategy->score(context, scratch.candidates, scratch.scores,
                                     scratch.tiebreak);
    decision.relaxed = alone.relaxed;
    eased = alone.eased;
    predicted = alone.predicted;
    prefix = alone.prefix;
    decision.slo_fallback = alone.fallback;
  } else {
    scratch.scores.assign(m, 0.0);
    // Which candidates a component passed over (+Inf, its note says why): normalised, their
    // score is only a penalty, so their rows are marked.
    scratch.passed_over.assign(m, PassOver::kNone);
    scratch.component.resize(m);
    scratch.component_tiebreak.resize(m);
    for (size_t c = 0; c < count; ++c) {
      std::fill(scratch.component_tiebreak.begin(), scratch.component_tiebreak.end(), 0.0);
      const ScoreNote note = parts[c].strategy->score(context, scratch.candidates,
                                                      scratch.component,
                                                      scratch.component_tiebreak);
      decision.relaxed |= note.relaxed;
      eased |= note.eased;
      predicted |= note.predicted;
      prefix |= note.prefix;
      decision.slo_fallback |= note.fallback;
      context.prefix_matched = prefix;  // later components may read the matches
      normalise(scratch.component);
      for (size_t i = 0; i < m; ++i) {
        if (scratch.component[i] == kInfPenalty) scratch.passed_over[i] = note.pass_over;
        scratch.scores[i] += parts[c].weight * scratch.component[i];
        scratch.tiebreak[i] += scratch.component_tiebreak[i];
      }
    }
  }
  // The candidates' rows get their scores and predictions, and are marked when the picker chose
  // among the scores up to a cutoff (the top-K and band pickers record that set): one pass,
  // after the pick.
  const bool blended = count > 1;
  const auto record = [&](double cutoff) {
    const bool has_cutoff = cutoff > -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < m; ++i) {
      CandidateRow& row = scratch.rows[candidate_rows[i]];
      row.score = scratch.scores[i];
      // Alone, a strategy's +Inf is the score itself (read as "pass over"); in a blend only the
      // mark keeps it.
      if (blended) row.passed_over = scratch.passed_over[i];
      if (eased) row.synthetic_load = scratch.inputs[i].synthetic_load;
      if (predicted) {
        row.predicted_ttft = static_cast<float>(scratch.inputs[i].predicted_ttft);
        row.predicted_tpot = static_cast<float>(scratch.inputs[i].predicted_tpot);
        row.cost_per_request = static_cast<float>(scratch.inputs[i].cost_per_request);
      }
      if (prefix) {
        row.prefix_blocks = static_cast<int32_t>(scratch.inputs[i].prefix_blocks);
        row.prefix_exact = scratch.inputs[i].prefix_exact;
        row.prefix_home = scratch.inputs[i].prefix_home;
      }
      if (has_cutoff && row.score <= cutoff) {
        row.in_pick_set = true;
        ++decision.pick_set;
      }
    }
  };
  if (prefix && request.prefix != nullptr) {
    decision.prefix_total_blocks = request.prefix->total_blocks;
    decision.prefix_block_tokens = request.prefix->block_tokens;
  }
  if ((predicted || decision.slo_fallback) && model.slo != nullptr) {
    decision.slo = &model.slo->objective;
  }
  if (alone.hold) {
    // Every candidate would miss the SLO: nothing is chosen, the request waits at the gateway.
    record(-std::numeric_limits<double>::infinity());
    decision.hold = true;
    return decision;
  }
  int picked = -1;
  double cutoff = -std::numeric_limits<double>::infinity();
  if (alone.top_k > 0) {
    scratch.pick_order.resize(m);
    picked = pickTopK(scratch.scores, alone.top_k, alone.tolerance, rng, scratch.pick_order,
                      &cutoff);
  } else if (alone.band > 0) {
    picked = pickWithinBand(scratch.scores, alone.band, scratch.tiebreak, rng, &cutoff);
  } else {
    picked = pickLowest(scratch.scores, scratch.tiebreak, rng);
  }
  record(cutoff);
  decision.chosen = static_cast<int>(scratch.candidates[picked]);
  return decision;
}

}  // namespace switchyard::routing
