// Configuration of what several gateway instances share: the shared-state backend, session
// affinity and async-job routing (docs/configuration.md, "Several gateways").
#pragma once

#include <string>

#include "admission/inflight_slots.h"
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
  // In-flight slot leases (admission/inflight_slots.h): slots of a replica's in-flight limit each
  // worker leases ahead of its requests, admitting within them without a call to shared state.
  // 0: every request is admitted in shared state. Models with a shared rate limit
  // (requests_per_second_per_replica) admit request by request whatever this says.
  int64_t inflight_slots_ahead = 16;
  // Not a key: this gateway's worker count, set at start (slot leases are per worker).
  int worker_count = 1;
};

// Whether the model's in-flight limit is admitted through leased slots (no call per request)
// rather than request by request in shared state: the same answer on the request path and in the
// sync, which then publishes this gateway's in-flight counts as it does for unlimited models.
// A limit too small to lease anything ahead even for a gateway alone (under 8 per worker) is
// admitted request by request: leasing would cost the same calls and count less exactly.
inline bool leasesInflightSlots(const SharedStateConfig& config, int64_t max_inflight,
                                double requests_per_second) {
  return config.settings.backend == state::SharedStateSettings::Backend::kRedis &&
         max_inflight > 0 && requests_per_second <= 0 &&
         admission::InflightSlots::lead(max_inflight, 1, config.worker_count,
                                        config.inflight_slots_ahead) > 0;
}

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
