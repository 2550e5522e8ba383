// GatewayLoadMonitor: the control-plane half of request monitoring. At every interval boundary
// (wall clock, a multiple of `interval` in unix seconds, as AIBrix aligns its traces) it sums
// the workers' shape counters per model (observe/load_recorder.h), subtracts the previous sums,
// and closes one LoadInterval per model that saw traffic: cells, completed, failed, rejected,
// and queued (requests this gateway had in flight at the boundary).
//
// Closed intervals are kept in memory for `retention` (served at /debug/load for the optimizer
// to poll) and, with `redis` set, published from a small thread of their own (never the control
// thread: Redis may be slow) in Switchyard's layout (HSET sy:{model}:load:<start> <gateway-id>
// JSON, expiring after `retention`, so the optimizer sums every gateway's) and/or AIBrix's
// (aibrix:<model>_request_trace_<start>, merged across gateways by a script).
// Config: `load_monitor:` (docs/configuration.md). Control thread only, except the publisher.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "fleet/fleet_registry.h"
#include "gateway/load_monitor_config.h"
#include "observe/load_interval.h"
#include "observe/load_recorder.h"

namespace switchyard::observe {
class Observability;
}

namespace switchyard::gateway {

class LoadPublisher;

class GatewayLoadMonitor {
 public:
  GatewayLoadMonitor(boost::asio::io_context& io, observe::Observability& observe,
                     const fleet::FleetRegistry& registry, LoadMonitorConfig config,
                     std::string gateway_id);
  ~GatewayLoadMonitor();
  void start();
  void stop();

  // Closes the intervals ending at `boundary` (unix seconds) now; the timer calls it, tests may.
  void closeInterval(int64_t boundary);
  // /debug/load: the kept intervals of `model` (all models when empty) that start at or after
  // `since`, oldest first, as a JSON array.
  std::string recentJson(std::string_view model, int64_t since) const;
  uint64_t intervalsClosed() const { return closed_; }
  uint64_t publishFailures() const;

 private:
  void schedule();

  boost::asio::io_context& io_;
  observe::Observability& observe_;
  const fleet::FleetRegistry& registry_;
  LoadMonitorConfig config_;
  std::string gateway_id_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;
  std::map<std::string, observe::LoadTotals, std::less<>> previous_;
  std::deque<observe::LoadInterval> recent_;
  uint64_t closed_ = 0;
  std::unique_ptr<LoadPublisher> publisher_;
};

}  // namespace switchyard::gateway
