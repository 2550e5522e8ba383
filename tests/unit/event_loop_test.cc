#include "http/event_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace switchyard::http {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// One loop over a first handler that arms a timer for `delay`: whether it fired, the polling
// reported, and the loop's wall time.
struct TimerRun {
  bool fired = false;
  int64_t spun_ns = 0;
  int64_t elapsed_ns = 0;
};
TimerRun runWithATimer(milliseconds delay, milliseconds window) {
  asio::io_context io(1);
  asio::steady_timer timer(io);
  TimerRun run;
  asio::post(io, [&] {
    timer.expires_after(delay);
    timer.async_wait([&run](boost::system::error_code ec) { run.fired = !ec; });
  });
  const auto started = std::chrono::steady_clock::now();
  runEventLoop(io, window, [&run](int64_t ns) { run.spun_ns += ns; });
  run.elapsed_ns = nanoseconds(std::chrono::steady_clock::now() - started).count();
  return run;
}

TEST(EventLoopTest, WithoutASpinWindowItRunsEveryHandlerAndReturnsWhenOutOfWork) {
  asio::io_context io(1);
  int ran = 0;
  for (int i = 0; i < 3; ++i) asio::post(io, [&] { ++ran; });
  int64_t spun = 0;
  runEventLoop(io, nanoseconds(0), [&](int64_t ns) { spun += ns; });
  EXPECT_EQ(ran, 3);
  EXPECT_EQ(spun, 0);
  EXPECT_TRUE(io.stopped());
}

TEST(EventLoopTest, WorkThatArrivesWithinTheWindowIsFoundByPollingAndTheWaitIsCounted) {
  const TimerRun run = runWithATimer(milliseconds(20), milliseconds(200));
  EXPECT_TRUE(run.fired);
  // The thread polled from the first handler until the timer was due: about 20 ms. A thread
  // that slept instead would report none; the margin is for a loaded machine, where the
  // thread can be descheduled in the middle of the poll that finds the timer.
  EXPECT_GE(run.spun_ns, nanoseconds(milliseconds(10)).count());
  EXPECT_LE(run.spun_ns, run.elapsed_ns);
}

TEST(EventLoopTest, ItSleepsOnceTheWindowPassesWithoutWork) {
  const TimerRun run = runWithATimer(milliseconds(300), milliseconds(1));
  EXPECT_TRUE(run.fired);
  // One window of polling, then a sleep until the timer: far less than the 300 ms waited.
  EXPECT_GE(run.spun_ns, nanoseconds(milliseconds(1)).count());
  EXPECT_LT(run.spun_ns, nanoseconds(milliseconds(150)).count());
}

TEST(EventLoopTest, StopFromAnotherThreadEndsTheLoopWhetherPollingOrAsleep) {
  for (const auto window : {milliseconds(0), milliseconds(1), milliseconds(5'000)}) {
    asio::io_context io(1);
    auto guard = asio::make_work_guard(io);  // never out of work: only stop() ends it
    std::atomic<int> ran{0};
    std::thread loop([&] { runEventLoop(io, window); });
    asio::post(io, [&] { ran.fetch_add(1); });
    while (ran.load() == 0) std::this_thread::sleep_for(milliseconds(1));
    io.stop();
    loop.join();
    EXPECT_TRUE(io.stopped()) << window.count();
  }
}

}  // namespace
}  // namespace switchyard::http
