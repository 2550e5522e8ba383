// AtomicGcra: a lock-free rate limiter (generic cell rate algorithm) shared by worker threads.
//
// One atomic "theoretical arrival time" and a CAS per admitted request: no lock, no timer, no
// refill thread. configure() may be called from another thread at any time (the control plane
// rescales model-wide limits as replicas come and go); a rate of 0 means unlimited.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/clock.h"

namespace switchyard {

class AtomicGcra {
 public:
  // `rate` requests per second with bursts of up to `burst` requests; rate <= 0: unlimited.
  void configure(double rate, double burst) {
    if (!(rate > 0)) {
      interval_.store(0, std::memory_order_relaxed);
      return;
    }
    const TimeNs interval = std::max<TimeNs>(1, static_cast<TimeNs>(kNsPerSec / rate));
    interval_.store(interval, std::memory_order_relaxed);
    tolerance_.store(static_cast<TimeNs>(std::max(0.0, burst - 1.0) * static_cast<double>(interval)),
                     std::memory_order_relaxed);
  }

  // Admits one request at `now`: returns 0, or how long until one would be admitted.
  TimeNs tryAcquire(TimeNs now) {
    const TimeNs interval = interval_.load(std::memory_order_relaxed);
    if (interval <= 0) return 0;
    const TimeNs tolerance = tolerance_.load(std::memory_order_relaxed);
    TimeNs tat = tat_.load(std::memory_order_relaxed);
    for (;;) {
      const TimeNs start = std::max(tat, now);
      if (start - now > tolerance) return start - now - tolerance;
      if (tat_.compare_exchange_weak(tat, start + interval, std::memory_order_relaxed)) return 0;
    }
  }

  double rate() const {
    const TimeNs interval = interval_.load(std::memory_order_relaxed);
    return interval > 0 ? static_cast<double>(kNsPerSec) / static_cast<double>(interval) : 0.0;
  }

 private:
  std::atomic<TimeNs> tat_{0};
  std::atomic<TimeNs> interval_{0};
  std::atomic<TimeNs> tolerance_{0};
};

}  // namespace switchyard
