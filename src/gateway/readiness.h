// Readiness (`/readyz`), apart from liveness (`/healthz`): whether this gateway should be sent
// traffic yet. Ready once the config is loaded and the listeners are bound (both true before the
// admin listener answers at all), shared state has been synced once — or has not answered
// within `shared_state_timeout` and the gateway runs on local decisions, which it says — and
// every replica has been scraped once (successfully or not) or `telemetry_timeout` has passed;
// with Kubernetes discovery, every watched namespace has been listed once (or
// `discovery_timeout` has passed: it then serves the static fleet and says so).
//
// Latched: once ready, the gateway stays ready until shutdown, when it answers not ready so a
// load balancer stops sending new connections. A Redis outage later on does not make it
// unready: taking every gateway out of rotation at once would turn a degradation into an outage.
// Control thread only.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::gateway {

struct ReadinessSettings {
  TimeNs shared_state_timeout = 5 * kNsPerSec;
  TimeNs telemetry_timeout = 3 * kNsPerSec;
  TimeNs discovery_timeout = 10 * kNsPerSec;
};

struct ReadinessInputs {
  bool shutting_down = false;
  bool shared_state_distributed = false;
  bool shared_state_synced = false;
  const fleet::FleetSnapshot* snapshot = nullptr;
  TimeNs now = 0;
  bool discovery_configured = false;  // Kubernetes discovery
  bool discovery_synced = false;      // ... has listed every watched namespace once
};

class Readiness {
 public:
  Readiness(ReadinessSettings settings, TimeNs started) : settings_(settings), started_(started) {}

  struct Verdict {
    bool ready = false;
    std::vector<std::string> waiting_for;  // why not ready yet
    std::vector<std::string> degraded;     // ready, but not as it should be
  };
  Verdict evaluate(const ReadinessInputs& inputs);
  // `/readyz`'s body for a verdict.
  static std::string toJson(const Verdict& verdict, bool shutting_down);

 private:
  ReadinessSettings settings_;
  TimeNs started_;
  bool latched_ = false;
  std::vector<std::string> latched_degraded_;
};

}  // namespace switchyard::gateway
