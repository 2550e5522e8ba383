#include "routing/strategies/prefix_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fleet/scrape_schedule.h"
#include "routing/prefix_probe.h"

namespace switchyard::routing {
namespace {

// A replica with fewer requests than this in flight (this one included) is never guarded: at low
// load a fair share is a fraction of a request, and breaking a prefix's locality for one
// request in flight would cost more than it balances.
constexpr double kGuardFloor = 2;

// The hot-spot guard over one decision's candidates: each one's fair share of the requests in
// flight (this one included) in proportion to its capacity. The constructor fills the
// candidates' `running` and `decode` inputs.
class HotSpotGuard {
 public:
  HotSpotGuard(const ScoringContext& context, std::span<const uint32_t> candidates,
               const PrefixProbe& probe)
      : inputs_(context.inputs.data()) {
    const fleet::ReplicaEntry* replicas = context.model.replicas.data();
    const size_t m = candidates.size();
    double capacity_sum = 0;
    int known = 0;
    for (size_t i = 0; i < m; ++i) {
      const fleet::ReplicaState& replica = *replicas[candidates[i]].state;
      const double decode = replica.capacity().decode;
      inputs_[i].running = static_cast<double>(replica.globalRunning());
      inputs_[i].decode = decode;
      running_sum_ += inputs_[i].running;
      if (decode > 0) {
        capacity_sum += decode;
        ++known;
      }
    }
    const double fallback_capacity = known > 0 ? capacity_sum / known : 1.0;
    for (size_t i = 0; i < m; ++i) {
      if (!(inputs_[i].decode > 0)) inputs_[i].decode = fallback_capacity;
      total_capacity_ += inputs_[i].decode;
    }
    on_ = probe.hot_spot_factor > 0 && m > 1;
    blocks_per_allowance_ =
        probe.hot_spot_tokens > 0 ? probe.hot_spot_tokens / probe.block_tokens : 0;
  }

  // Whether candidate i, holding `matched` blocks, is above `factor` × its fair share.
  bool hot(size_t i, double matched, double factor) const {
    if (!on_) return false;
    const double fair = (running_sum_ + 1) * inputs_[i].decode / total_capacity_;
    // Matches up to hot_spot_tokens (chat histories, system prompts) are guarded as they were
    // without an allowance; it is long shared contexts that thrash when moved.
    const double allowance =
        blocks_per_allowance_ > 0 ? std::max(0.0, matched / blocks_per_allowance_ - 1) : 0;
    return inputs_[i].running + 1 > std::max(factor * fair, kGuardFloor) + allowance;
  }

 private:
  CandidateInputs* inputs_;
  double running_sum_ = 0;
  double total_capacity_ = 0;
  double blocks_per_allowance_ = 0;
  bool on_ = false;
};

// The home of a prefix no candidate is known to hold: the first candidate in rendezvous order
// not above its fair share of the requests in flight (the guard at factor 1, with the whole
// prompt's allowance: a home draws new prefixes whatever the load half says, so it must not draw
// more than its share). The order is weighted rendezvous hashing: each candidate draws
// u = mixHash(anchor ^ name hash) in (0, 1) and ranks by weight ÷ −ln u, so it is first for a
// share of the prefixes proportional to its weight (its KV cache), and every gateway and worker
// ranks alike: those that have not seen this prefix either send it to the same replica, and an
// overflow to the next in the same order. -1: every candidate is above its share.
int pickHome(const ScoringContext& context, std::span<const uint32_t> candidates,
             const PrefixProbe& probe, const HotSpotGuard& guard) {
  const double factor = std::min(1.0, probe.hot_spot_factor);
  const double whole = probe.total_blocks;
  int home = -1;
  double best = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const fleet::ReplicaEntry& replica = context.model.replicas[candidates[i]];
    const uint64_t draw = fleet::mixHash(probe.home_anchor ^ replica.state->nameHash());
    const double u = (static_cast<double>(draw >> 11) + 0.5) * 0x1.0p-53;
    const double rank = probe.homeWeight(context.model.name, replica) / -std::log(u);
    if ((home < 0 || rank > best) && !guard.hot(i, whole, factor)) {
      home = static_cast<int>(i);
      best = rank;
    }
  }
  return home;
}

}  // namespace

ScoreNote PrefixCacheStrategy::score(const ScoringContext& context,
                                     std::span<const uint32_t> candidates, std::span<double> scores,
                                     std::span<double> tiebreak) const {
  (void)tiebreak;
  ScoreNote note;
  const PrefixProbe* probe = context.prefix;
  const size_t m = candidates.size();
  if (probe == nullptr) {
    std::fill(scores.begin(), scores.end(), 0.0);
    return note;
  }
  note.prefix = true;
  CandidateInputs* inputs = context.inputs.data();
  for (size_t i = 0; i < m; ++i) {
    inputs[i].prefix_blocks = 0;
    inputs[i].prefix_exact = false;
    inputs[i].prefix_home = false;
  }
  if (probe->total_blocks == 0) {
    std::fill(scores.begin(), scores.end(), 0.0);
    return note;
  }
  const HotSpotGuard guard(context, candidates, *probe);
  const double total = probe->total_blocks;
  uint32_t longest = 0;
  for (size_t i = 0; i < m; ++i) {
    const PrefixMatch found = probe->match(*context.model.replicas[candidates[i]].state);
    inputs[i].prefix_blocks = found.blocks;
    inputs[i].prefix_exact = found.exact;
    longest = std::max(longest, found.blocks);
    scores[i] =
        guard.hot(i, found.blocks, probe->hot_spot_factor) ? 1.0 : 1.0 - found.blocks / total;
  }
  // A prefix no candidate holds even the first home_blocks of goes to its home.
  if (probe->home_blocks == 0 || longest >= std::min(probe->home_blocks, probe->total_blocks)) {
    return note;
  }
  if (const int home = pickHome(context, candidates, *probe, guard); home >= 0) {
    scores[static_cast<size_t>(home)] = 0;
    inputs[static_cast<size_t>(home)].prefix_home = true;
  }
  return note;
}

}  // namespace switchyard::routing
