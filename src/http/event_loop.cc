#include "http/event_loop.h"

namespace switchyard::http {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int64_t kReportEveryNs = 1'000'000;
}  // namespace

void runEventLoop(boost::asio::io_context& io, std::chrono::nanoseconds spin,
                  const std::function<void(int64_t)>& spun) {
  if (spin <= std::chrono::nanoseconds::zero()) {
    io.run();
    return;
  }
  int64_t unreported_ns = 0;
  const auto report = [&] {
    if (spun && unreported_ns > 0) spun(unreported_ns);
    unreported_ns = 0;
  };
  // Sleep until something happens, then poll until the window passes without work.
  while (io.run_one() > 0) {
    Clock::time_point idle_since = Clock::now();
    for (;;) {
      const Clock::time_point before = Clock::now();
      if (io.poll() > 0) {
        unreported_ns += std::chrono::nanoseconds(before - idle_since).count();
        if (unreported_ns >= kReportEveryNs) report();
        idle_since = Clock::now();
        continue;
      }
      if (io.stopped() || before - idle_since >= spin) {
        unreported_ns += std::chrono::nanoseconds(before - idle_since).count();
        break;
      }
    }
    report();
    if (io.stopped()) return;
  }
  report();
}

}  // namespace switchyard::http
