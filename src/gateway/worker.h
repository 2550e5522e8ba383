// Worker: one hot-path thread with its own io_context, listening socket (SO_REUSEPORT), upstream
// connection pool, request inspector, routing scratch and random source. Workers share nothing
// but the FleetRegistry (read through a per-worker snapshot cache) and the replicas' atomic
// counters. Beast is confined to worker.cc.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>

#include "fleet/fleet_registry.h"
#include "gateway/request_queue.h"
#include "gateway/config.h"
#include "observe/observer.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

class SecurityPlane;

class Worker {
 public:
  // Binds the listening socket at construction (throws on failure), so the caller knows the
  // port before any thread starts.
  // `observer` (owned by the control plane, outlives the worker) records this worker's metrics,
  // decisions and spans. `shared_state` gives the worker its own client (in-flight and rate
  // admission across gateways, session pins, async-job owners).
  // `directory` (owned by the gateway, filled with every worker before any runs) lets a slot freed
  // here wake a request queued on another worker.
  // `security` (owned by the control plane, outlives the worker): API keys, the client
  // listener's TLS, the client limits.
  Worker(int index, const GatewayConfig& config, const fleet::FleetRegistry& registry,
         const boost::asio::ip::tcp::endpoint& listen, observe::WorkerObserver& observer,
         state::SharedStateBackend& shared_state, const WorkerDirectory& directory,
         SecurityPlane& security);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  uint16_t port() const;
  // Runs the event loop on the calling thread until stop().
  void run();
  // Any thread: stop accepting; connections close after their current request.
  void beginShutdown();
  // Any thread: abandon everything and make run() return.
  void stop();
  // Any thread: requests currently being handled by this worker.
  int64_t inflight() const;
  // The worker's io_context and queue, for the gateway's WorkerDirectory.
  boost::asio::io_context& context();
  RequestQueue& queue();
  // Any thread: this worker's shared-state call counters (for /metrics).
  const state::SharedStateStats& sharedStateStats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::gateway
