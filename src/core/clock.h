// Injected time: components take a Clock so tests can drive a manual one instead of sleeping.
// SteadyClock is thread-safe and free; ManualClock is for single-threaded tests or guarded use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace switchyard {

using TimeNs = int64_t;  // nanoseconds on a monotonic timeline

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeNs now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  TimeNs now() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static const SteadyClock& instance() {
    static const SteadyClock clock;
    return clock;
  }
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeNs start = 0) : now_(start) {}
  TimeNs now() const override { return now_.load(std::memory_order_relaxed); }
  void advance(TimeNs delta) { now_.fetch_add(delta, std::memory_order_relaxed); }
  void set(TimeNs t) { now_.store(t, std::memory_order_relaxed); }

 private:
  std::atomic<TimeNs> now_;
};

constexpr TimeNs kNsPerMs = 1'000'000;
constexpr TimeNs kNsPerSec = 1'000'000'000;

}  // namespace switchyard
