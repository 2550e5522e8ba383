#include "routing/strategies/prefix_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "routing/prefix_probe.h"

namespace switchyard::routing {
namespace {

// A replica with fewer requests than this in flight (this one included) is never guarded: at low
// load a fair share is a fraction of a request, and breaking a prefix's locality for one
// request in flight would cost more than it balances.
constexpr double kGuardFloor = 2;

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
  const fleet::ReplicaEntry* replicas = context.model.replicas.data();
  CandidateInputs* inputs = context.inputs.data();
  if (probe->total_blocks == 0) {
    for (size_t i = 0; i < m; ++i) {
      scores[i] = 0;
      inputs[i].prefix_blocks = 0;
      inputs[i].prefix_exact = false;
    }
    return note;
  }
  // The hot-spot guard: each candidate's fair share of the in-flight requests (this one
  // included) in proportion to its capacity.
  double capacity_sum = 0;
  double running_sum = 0;
  int known = 0;
  for (size_t i = 0; i < m; ++i) {
    const fleet::ReplicaState& replica = *replicas[candidates[i]].state;
    const double decode = replica.capacity().decode;
    inputs[i].running = static_cast<double>(replica.globalRunning());
    inputs[i].decode = decode;
    running_sum += inputs[i].running;
    if (decode > 0) {
      capacity_sum += decode;
      ++known;
    }
  }
  const double fallback_capacity = known > 0 ? capacity_sum / known : 1.0;
  double total_capacity = 0;
  for (size_t i = 0; i < m; ++i) {
    if (!(inputs[i].decode > 0)) inputs[i].decode = fallback_capacity;
    total_capacity += inputs[i].decode;
  }
  const bool guard = probe->hot_spot_factor > 0 && m > 1;
  const double total = probe->total_blocks;
  const double blocks_per_allowance =
      probe->hot_spot_tokens > 0 ? probe->hot_spot_tokens / probe->block_tokens : 0;
  for (size_t i = 0; i < m; ++i) {
    const PrefixMatch found = probe->match(*replicas[candidates[i]].state);
    const uint32_t matched = found.blocks;
    inputs[i].prefix_blocks = matched;
    inputs[i].prefix_exact = found.exact;
    const double fair = (running_sum + 1) * inputs[i].decode / total_capacity;
    // Matches up to hot_spot_tokens (chat histories, system prompts) are guarded as they were
    // without an allowance; it is long shared contexts that thrash when moved.
    const double allowance =
        blocks_per_allowance > 0 ? std::max(0.0, matched / blocks_per_allowance - 1) : 0;
    const bool hot = guard && inputs[i].running + 1 >
                                  std::max(probe->hot_spot_factor * fair, kGuardFloor) + allowance;
    scores[i] = hot ? 1.0 : 1.0 - matched / total;
  }
  return note;
}

}  // namespace switchyard::routing
