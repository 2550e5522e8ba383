// OutputLengthEstimator: how many output tokens a model's requests produce, by prompt size,
// learned from completions. For requests that give no max_tokens, admission and SLO routing need
// an output length to predict a request's execution time.
//
// Prompts fall in log2 buckets of tokens (1, 2-3, 4-7, ... up to 2^kBuckets); each bucket keeps
// an exponentially weighted mean of the completions' output tokens (weight kAlpha per
// completion). Workers update it with relaxed loads and stores: two completions racing may lose
// one's contribution, which an EWMA shrugs off; no lock, no allocation.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace switchyard::fleet {

class OutputLengthEstimator {
 public:
  static constexpr int kBuckets = 20;
  static constexpr double kAlpha = 0.05;

  // The mean output of requests with about this many prompt tokens; `fallback` while nothing
  // was learned for the bucket nor the model.
  double estimate(double prompt_tokens, double fallback) const {
    const double v = buckets_[bucketOf(prompt_tokens)].load(std::memory_order_relaxed);
    if (v > 0) return v;
    const double all = overall_.load(std::memory_order_relaxed);
    return all > 0 ? all : fallback;
  }
  void observe(double prompt_tokens, double output_tokens) {
    if (!(output_tokens > 0)) return;
    update(buckets_[bucketOf(prompt_tokens)], output_tokens);
    update(overall_, output_tokens);
  }

 private:
  static int bucketOf(double prompt_tokens) {
    if (!(prompt_tokens >= 1)) return 0;
    const auto t = static_cast<uint64_t>(prompt_tokens);
    const int b = static_cast<int>(std::bit_width(t)) - 1;
    return b < kBuckets ? b : kBuckets - 1;
  }
  static void update(std::atomic<double>& slot, double x) {
    const double v = slot.load(std::memory_order_relaxed);
    slot.store(v > 0 ? v + kAlpha * (x - v) : x, std::memory_order_relaxed);
  }

  std::array<std::atomic<double>, kBuckets> buckets_{};
  std::atomic<double> overall_{0};
};

}  // namespace switchyard::fleet
