#include "gateway/periodic_cycle.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>

namespace switchyard::gateway {

namespace asio = boost::asio;

PeriodicCycle::PeriodicCycle(asio::io_context& io, std::string name, TimeNs interval,
                             Cycle cycle)
    : io_(io),
      name_(std::move(name)),
      interval_(interval),
      cycle_(std::move(cycle)),
      timer_(io),
      state_(std::make_shared<State>()) {}

PeriodicCycle::~PeriodicCycle() { stop(); }

void PeriodicCycle::start() { schedule(); }

void PeriodicCycle::stop() {
  state_->alive = false;
  timer_.cancel();
}

void PeriodicCycle::schedule() {
  if (!state_->alive) return;
  timer_.expires_after(std::chrono::nanoseconds(interval_));
  timer_.async_wait([this, state = state_](const boost::system::error_code& ec) {
    if (ec || !state->alive) return;
    runNow();
    schedule();
  });
}

void PeriodicCycle::runNow() {
  if (!state_->alive || state_->running) return;
  state_->running = true;
  asio::co_spawn(io_, cycle_(), [name = name_, state = state_](std::exception_ptr e) {
    state->running = false;
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("{}: cycle failed: {}", name, ex.what());
    }
  });
}

}  // namespace switchyard::gateway
