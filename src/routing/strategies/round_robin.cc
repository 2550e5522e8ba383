#include "routing/strategies/round_robin.h"

namespace switchyard::routing {

ScoreNote RoundRobinStrategy::score(const ScoringContext& context,
                                    std::span<const uint32_t> candidate_indices,
                                    std::span<double> scores, std::span<double>) const {
  const size_t n = candidate_indices.size();
  if (n == 0) return {};
  std::atomic<uint64_t>& cursor = context.model.runtime->next;
  const uint64_t turn = context.dry_run ? cursor.load(std::memory_order_relaxed)
                                        : cursor.fetch_add(1, std::memory_order_relaxed);
  const size_t start = turn % n;
  for (size_t i = 0; i < n; ++i) {
    scores[i] = static_cast<double>((i + n - start) % n);
  }
  return {};
}

}  // namespace switchyard::routing
