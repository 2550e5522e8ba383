#include "sim/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace switchyard::sim {

const char* outcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kRateLimited:
      return "rate_limited";
    case Outcome::kInflightLimit:
      return "inflight_limit";
    case Outcome::kNoReplica:
      return "no_replica";
    case Outcome::kUpstreamFailed:
      return "upstream_failed";
    case Outcome::kDeadline:
      return "deadline";
    case Outcome::kUnfinished:
      return "unfinished";
    case Outcome::kQueueFull:
      return "queue_full";
    case Outcome::kQueueTimeout:
      return "queue_timeout";
    case Outcome::kDeadlineUnattainable:
      return "deadline_unattainable";
    case Outcome::kCount:
      break;
  }
  return "unknown";
}

bool isRefusal(Outcome outcome) {
  return outcome == Outcome::kRateLimited || outcome == Outcome::kInflightLimit ||
         outcome == Outcome::kQueueFull || outcome == Outcome::kQueueTimeout ||
         outcome == Outcome::kDeadlineUnattainable;
}

size_t Distribution::bucketOf(double value) {
  const auto v = static_cast<uint64_t>(std::max(0.0, value));
  constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  if (v < kSub) return static_cast<size_t>(v);
  const int exponent = 63 - __builtin_clzll(v) - kSubBits;  // v >> exponent is in [kSub, 2kSub)
  return static_cast<size_t>((exponent + 1) * kSub + ((v >> exponent) - kSub));
}

double Distribution::valueOf(size_t bucket) {
  constexpr size_t kSub = size_t{1} << kSubBits;
  if (bucket < kSub) return static_cast<double>(bucket);
  const size_t exponent = bucket / kSub - 1;
  const size_t mantissa = bucket % kSub + kSub;
  // The middle of the bucket's range [m << e, (m + 1) << e).
  return (static_cast<double>(mantissa) + 0.5) * std::ldexp(1.0, static_cast<int>(exponent));
}

void Distribution::add(double value) {
  if (!std::isfinite(value)) return;
  ++count_;
  sum_ += value;
  max_ = count_ == 1 ? value : std::max(max_, value);
  if (buckets_.empty()) {
    // A distribution past 64 Ki values will likely reach the limit: grow to it in one step
    // instead of doubling, whose copies and freshly zeroed pages were ~4 % of a long run.
    if (exact_.size() == exact_.capacity() && exact_.size() >= (size_t{1} << 16)) {
      exact_.reserve(kExactLimit);
    }
    exact_.push_back(value);
    sorted_ = false;
    selections_ = 0;
    if (exact_.size() >= kExactLimit) fold();
    return;
  }
  const size_t b = bucketOf(value * scale_);
  if (b >= buckets_.size()) buckets_.resize(b + 1, 0);
  ++buckets_[b];
}

void Distribution::fold() {
  buckets_.assign(bucketOf(1.0) + 1, 0);
  for (double v : exact_) {
    const size_t b = bucketOf(v * scale_);
    if (b >= buckets_.size()) buckets_.resize(b + 1, 0);
    ++buckets_[b];
  }
  exact_.clear();
  exact_.shrink_to_fit();
}

double Distribution::percentile(double p) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  // Nearest rank: the smallest value with at least p % of the samples at or below it.
  const auto rank =
      static_cast<int64_t>(std::max(1.0, std::ceil(p / 100.0 * static_cast<double>(count_))));
  if (buckets_.empty()) {
    const auto index = static_cast<size_t>(std::min<int64_t>(rank, count_) - 1);
    // A selection costs O(n), a sort O(n log n): select for the first few percentiles asked
    // (the per-second series asks two or three), sort when more are.
    if (!sorted_ && ++selections_ <= 3) {
      std::nth_element(exact_.begin(), exact_.begin() + static_cast<ptrdiff_t>(index),
                       exact_.end());
      return exact_[index];
    }
    if (!sorted_) {
      std::sort(exact_.begin(), exact_.end());
      sorted_ = true;
    }
    return exact_[index];
  }
  int64_t seen = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += static_cast<int64_t>(buckets_[b]);
    if (seen >= rank) return std::min(max_, valueOf(b) / scale_);
  }
  return max_;
}

void Distribution::clear() {
  // Keeps the exact values' buffer: the per-second distributions are cleared every simulated
  // second, and growing them again from nothing cost reallocations and fresh pages each time.
  exact_.clear();
  sorted_ = true;
  selections_ = 0;
  buckets_.clear();
  buckets_.shrink_to_fit();
  scale_ = 1000;
  count_ = 0;
  sum_ = 0;
  max_ = 0;
}

}  // namespace switchyard::sim
