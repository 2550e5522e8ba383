#include "optimizer/load_window.h"

#include <algorithm>
#include <map>

#include "observe/load_shape.h"

namespace switchyard::optimizer {

std::vector<PlannedCell> planLoad(const std::vector<observe::LoadInterval>& intervals,
                                  int64_t window_s, LoadSummary* summary) {
  std::map<int64_t, observe::LoadInterval> merged;
  for (const observe::LoadInterval& i : intervals) {
    auto [it, inserted] = merged.try_emplace(i.start, i);
    if (!inserted) it->second.merge(i);
  }
  LoadSummary s;
  std::vector<PlannedCell> out;
  if (merged.empty()) {
    if (summary) *summary = s;
    return out;
  }
  const observe::LoadInterval& newest = merged.rbegin()->second;
  const int64_t end = newest.start + newest.interval_s;
  const int64_t from = end - std::max<int64_t>(window_s, newest.interval_s);
  s.newest_start = newest.start;
  s.queued = newest.queued;
  int64_t covered_from = end;
  std::map<std::pair<int, int>, std::pair<double, double>> counts;  // (window, current)
  for (const auto& [start, interval] : merged) {
    if (start < from) continue;
    ++s.intervals;
    covered_from = std::min(covered_from, start);
    s.failed += interval.failed;
    s.rejected += interval.rejected;
    const double scale = interval.completed > 0 ? static_cast<double>(interval.demand()) /
                                                      static_cast<double>(interval.completed)
                                                : 0.0;
    const bool is_newest = start == newest.start;
    if (is_newest) s.current_rps = static_cast<double>(interval.demand()) / interval.interval_s;
    s.window_rps += static_cast<double>(interval.demand());
    for (const observe::ShapeCount& c : interval.cells) {
      auto& entry = counts[{c.prompt_bucket, c.output_bucket}];
      entry.first += static_cast<double>(c.count) * scale;
      if (is_newest) entry.second += static_cast<double>(c.count) * scale / interval.interval_s;
    }
  }
  s.window_seconds = static_cast<double>(end - covered_from);
  s.window_rps /= std::max(1.0, s.window_seconds);
  for (const auto& [key, value] : counts) {
    PlannedCell p;
    p.prompt_bucket = key.first;
    p.output_bucket = key.second;
    p.window_rps = value.first / std::max(1.0, s.window_seconds);
    p.current_rps = value.second;
    p.cell.prompt_tokens = observe::bucketTokens(key.first);
    p.cell.output_tokens = observe::bucketTokens(key.second);
    p.cell.rps = std::max(p.window_rps, p.current_rps);
    out.push_back(p);
  }
  if (summary) *summary = s;
  return out;
}

}  // namespace switchyard::optimizer
