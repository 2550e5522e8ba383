// OptimizerPanel: what the GPU-mix optimizer (`switchyard optimize`) currently recommends, for the
// gateway's dashboard. With `load_monitor.optimizer_url` set, the gateway fetches the optimizer's
// /debug/optimizer every two seconds (control plane, one request at a time) and serves the last
// answer at its own /debug/optimizer; the dashboard draws it as a panel. The browser never talks
// to the optimizer: it may not reach it, and no cross-origin rules are needed. Control thread
// only, except json(), which the admin server may call from any thread.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/clock.h"
#include "gateway/periodic_cycle.h"
#include "http/control_client.h"

namespace switchyard::gateway {

class OptimizerPanel {
 public:
  // `url`: http://HOST:PORT (checked at config load); empty: no optimizer, nothing fetched.
  OptimizerPanel(boost::asio::io_context& io, std::string url);
  ~OptimizerPanel();
  void start();
  void stop();

  // {"optimizer_url": ..., "fetched_unix_ms": ..., "error": ..., "optimizer": {...} | null}.
  std::string json() const;

 private:
  boost::asio::awaitable<void> fetch();

  std::string url_;
  std::unique_ptr<http::ControlHttpClient> client_;
  std::shared_ptr<bool> alive_;
  PeriodicCycle cycle_;
  mutable std::mutex mutex_;
  std::string last_;   // the optimizer's last /debug/optimizer (valid JSON), or empty
  std::string error_;  // why the last fetch failed; empty after a success
  int64_t fetched_unix_ms_ = 0;
};

}  // namespace switchyard::gateway
