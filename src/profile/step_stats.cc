#include "profile/step_stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace switchyard::profile {
namespace {

Latency summarize(std::vector<double>& values) {
  Latency l;
  if (values.empty()) return l;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  l.mean = sum / static_cast<double>(values.size());
  auto rank = [&](double p) {
    const double r = std::ceil(p / 100.0 * static_cast<double>(values.size()));
    const size_t i = static_cast<size_t>(std::clamp(r, 1.0, double(values.size()))) - 1;
    return values[i];
  };
  l.p50 = rank(50);
  l.p90 = rank(90);
  l.p99 = rank(99);
  return l;
}

// (n − 1) events over the time from the first to the last: a rate that does not depend on
// where a window's edges fall.
double spreadRate(std::vector<int64_t>& times) {
  if (times.size() < 2) return 0;
  std::sort(times.begin(), times.end());
  const double span = static_cast<double>(times.back() - times.front()) / 1e9;
  return span > 0 ? static_cast<double>(times.size() - 1) / span : 0;
}

}  // namespace

Step summarizeStep(std::span<const RequestTiming> requests, double offered_rps) {
  Step step;
  step.offered_rps = offered_rps;
  if (requests.empty()) return step;
  std::vector<int64_t> arrivals;
  arrivals.reserve(requests.size());
  for (const RequestTiming& r : requests) arrivals.push_back(r.arrival);
  std::sort(arrivals.begin(), arrivals.end());
  const int64_t from = arrivals[arrivals.size() / 5];
  const int64_t to = arrivals.back();
  int64_t run_end = to;
  for (const RequestTiming& r : requests) run_end = std::max(run_end, r.finished);

  std::vector<double> ttft, tpot, e2e;
  std::vector<int64_t> window_arrivals, window_finishes;
  int64_t window_tokens = 0;
  double busy_ns = 0;
  for (const RequestTiming& r : requests) {
    const bool in_window = r.arrival >= from && r.arrival <= to;
    if (in_window) window_arrivals.push_back(r.arrival);
    if (r.failed) {
      if (in_window) ++step.failed;
      continue;
    }
    const int64_t end = r.finished >= 0 ? r.finished : run_end;
    busy_ns +=
        static_cast<double>(std::max<int64_t>(0, std::min(end, to) - std::max(r.arrival, from)));
    if (!in_window) continue;
    // A request that never finished counts as finishing when the run ended: late.
    window_finishes.push_back(end);
    if (r.finished < 0) continue;
    ++step.requests;
    window_tokens += r.output_tokens;
    e2e.push_back(static_cast<double>(r.finished - r.arrival) / 1e9);
    if (r.first_token >= 0) {
      ttft.push_back(static_cast<double>(r.first_token - r.arrival) / 1e9);
      tpot.push_back(r.output_tokens > 1 ? static_cast<double>(r.finished - r.first_token) / 1e9 /
                                               (r.output_tokens - 1)
                                         : 0.0);
    }
  }
  const double seconds = static_cast<double>(to - from) / 1e9;
  step.arrival_rps = spreadRate(window_arrivals);
  step.achieved_rps = spreadRate(window_finishes);
  if (step.requests > 0) {
    step.output_tokens_per_s =
        step.achieved_rps * static_cast<double>(window_tokens) / step.requests;
  }
  if (seconds > 0) step.mean_concurrency = busy_ns / 1e9 / seconds;
  step.ttft = summarize(ttft);
  step.tpot = summarize(tpot);
  step.e2e = summarize(e2e);
  return step;
}

}  // namespace switchyard::profile
