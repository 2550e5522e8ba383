// RetryBudget: bounds retries to a fraction of recent requests, so that retrying cannot multiply
// the load on a fleet that is failing as a whole. Each request deposits `ratio` of a token, a
// floor of `min_per_second` tokens accrues with time, and the balance is capped; a retry spends
// one token. One per worker thread (no sharing, no atomics).
#pragma once

#include <algorithm>

#include "core/clock.h"

namespace switchyard::admission {

class RetryBudget {
 public:
  RetryBudget(double ratio = 0.2, double min_per_second = 5, double cap = 50)
      : ratio_(ratio), min_per_second_(min_per_second), cap_(cap), tokens_(cap) {}

  void onRequest(TimeNs now) {
    refill(now);
    tokens_ = std::min(cap_, tokens_ + ratio_);
  }
  bool canSpend(TimeNs now) {
    refill(now);
    return tokens_ >= 1.0;
  }
  bool trySpend(TimeNs now) {
    refill(now);
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }
  double balance() const { return tokens_; }

 private:
  void refill(TimeNs now) {
    if (last_ > 0 && now > last_) {
      tokens_ = std::min(cap_, tokens_ + min_per_second_ * static_cast<double>(now - last_) /
                                             static_cast<double>(kNsPerSec));
    }
    last_ = now;
  }

  double ratio_;
  double min_per_second_;
  double cap_;
  double tokens_;
  TimeNs last_ = 0;
};

}  // namespace switchyard::admission
