// Configuration of what several gateway instances share: the shared-state backend, session
// affinity and async-job routing (docs/configuration.md, "Several gateways").
#pragma once

#include <string>

#include "core/clock.h"
#include "state/shared_state.h"

namespace YAML {
class Node;
}

namespace switchyard::gateway {

struct SharedStateConfig {
  state::SharedStateSettings settings;   // backend, address, deadlines
  TimeNs sync_interval = 200 * kNsPerMs;  // publish own counts, read the others'
  TimeNs liveness_ttl = 3 * kNsPerSec;    // a gateway silent this long stops counting
  // This gateway's name in shared state; empty: a random one per start. A stable id (e.g. the
  // pod name) lets a restarted gateway clear the counts its previous run left at its first sync
  // instead of leaving them counted for a liveness period.
  std::string gateway_id;
};

struct SessionAffinityConfig {
  bool enabled = true;
  std::string header = "x-session-id";  // lower case
  TimeNs ttl = 3600 * kNsPerSec;        // sliding: every request of the session renews it
};

struct AsyncJobsConfig {
  bool enabled = true;
  TimeNs ttl = 7 * 24 * 3600 * kNsPerSec;  // how long a resource id keeps its owner
  // Model for creation requests that name none (multipart file uploads, batches); empty: the
  // only model if there is exactly one.
  std::string default_model;
};

void parseSharedState(const YAML::Node& node, SharedStateConfig& config);
void parseSessionAffinity(const YAML::Node& node, SessionAffinityConfig& config);
void parseAsyncJobs(const YAML::Node& node, AsyncJobsConfig& config);

// SWITCHYARD_SHARED_STATE_BACKEND, SWITCHYARD_REDIS_ADDRESS (implies backend redis),
// SWITCHYARD_GATEWAY_ID, and the
// AIBrix gateway's REDIS_HOST, REDIS_PORT, REDIS_PASSWORD (address and password only).
void applySharedStateEnvironment(SharedStateConfig& config);

}  // namespace switchyard::gateway
