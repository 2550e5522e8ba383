// QuotaBucket: one per-minute budget (a key's requests or its tokens), shared by the worker
// threads of one gateway without a lock.
//
// A bucket holds one minute's worth of `limit` units and refills continuously; it is a GCRA
// with weighted cost kept in one atomic: `tat`, the time at which the bucket is full again.
// Taking `cost` units at `now` moves it to max(tat, now) + cost·T (T = one minute / limit) and is
// allowed while that stays within now + one minute. A cost above the whole budget is taken as
// the whole budget (such a request passes only with a full bucket; its real usage, settled at
// completion, then puts the bucket in debt). settle() adds or refunds units after the fact: a
// request's tokens are estimated at admission and counted from its usage at completion.
//
// `scale` is how many gateways share the budget when each must decide alone (shared state
// unreachable): each unit then costs `scale` units here, so the gateways' shares add up to the
// limit. Same arithmetic as the Redis script (state/redis/redis_scripts.cc) and the memory
// store. Pure: time is passed in; no allocation.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

#include "core/clock.h"

namespace switchyard::auth {

inline constexpr TimeNs kQuotaWindow = 60 * kNsPerSec;

struct QuotaTake {
  bool allowed = true;
  int64_t remaining = 0;   // units left after this take (at the bucket's full rate)
  TimeNs retry_after = 0;  // refused: when the cost would fit
  TimeNs reset = 0;        // until the bucket is full again
};

class QuotaBucket {
 public:
  QuotaTake take(TimeNs now, int64_t limit, int64_t cost, int64_t scale = 1) {
    QuotaTake out;
    if (limit <= 0) return out;
    const double unit = static_cast<double>(kQuotaWindow) / static_cast<double>(limit) *
                        static_cast<double>(std::max<int64_t>(1, scale));
    const auto cost_ns = static_cast<TimeNs>(
        std::min(static_cast<double>(kQuotaWindow), static_cast<double>(std::max<int64_t>(0, cost)) * unit));
    TimeNs tat = tat_.load(std::memory_order_relaxed);
    for (;;) {
      const TimeNs start = std::max(tat, now);
      const TimeNs next = start + cost_ns;
      if (next - now > kQuotaWindow) {
        out.allowed = false;
        out.retry_after = next - now - kQuotaWindow;
        out.remaining = remainingAt(now, start, unit, limit);
        out.reset = start - now;
        return out;
      }
      if (tat_.compare_exchange_weak(tat, next, std::memory_order_relaxed)) {
        out.remaining = remainingAt(now, next, unit, limit);
        out.reset = next - now;
        return out;
      }
    }
  }

  // What a take of nothing would report.
  QuotaTake peek(TimeNs now, int64_t limit) const {
    QuotaTake out;
    if (limit <= 0) return out;
    const double unit = static_cast<double>(kQuotaWindow) / static_cast<double>(limit);
    const TimeNs start = std::max(tat_.load(std::memory_order_relaxed), now);
    out.remaining = remainingAt(now, start, unit, limit);
    out.reset = start - now;
    return out;
  }

  // Adds `delta` units (negative: refunds them). Bounded to an hour of debt either way, so a
  // nonsensical usage figure cannot lock a key out for longer.
  void settle(int64_t limit, int64_t delta) {
    if (limit <= 0 || delta == 0) return;
    const double ns = static_cast<double>(delta) * static_cast<double>(kQuotaWindow) /
                      static_cast<double>(limit);
    const double bound = 60.0 * static_cast<double>(kQuotaWindow);
    tat_.fetch_add(static_cast<TimeNs>(std::clamp(ns, -bound, bound)), std::memory_order_relaxed);
  }

 private:
  static int64_t remainingAt(TimeNs now, TimeNs tat, double unit, int64_t limit) {
    const double room = static_cast<double>(now + kQuotaWindow - tat);
    if (room <= 0) return 0;
    return std::min<int64_t>(limit, static_cast<int64_t>(std::floor(room / unit)));
  }

  std::atomic<TimeNs> tat_{0};
};

}  // namespace switchyard::auth
