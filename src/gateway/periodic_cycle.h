// PeriodicCycle: runs a control-plane coroutine every `interval`, one at a time (a tick that
// finds the previous cycle still running is skipped), logging what it throws. runNow() starts a
// cycle at once unless one is running. The owner calls stop() before it dies: a pending tick or
// a cycle's completion then touches nothing. Control thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>

#include "core/clock.h"

namespace switchyard::gateway {

class PeriodicCycle {
 public:
  using Cycle = std::function<boost::asio::awaitable<void>()>;
  PeriodicCycle(boost::asio::io_context& io, std::string name, TimeNs interval, Cycle cycle);
  ~PeriodicCycle();
  PeriodicCycle(const PeriodicCycle&) = delete;
  PeriodicCycle& operator=(const PeriodicCycle&) = delete;

  void start();
  void stop();
  void runNow();
  bool running() const { return state_->running; }

 private:
  struct State {
    bool alive = true;
    bool running = false;
  };
  void schedule();

  boost::asio::io_context& io_;
  std::string name_;
  TimeNs interval_;
  Cycle cycle_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::gateway
