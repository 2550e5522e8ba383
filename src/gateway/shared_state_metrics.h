// /metrics families of the shared state: call counts, degraded answers (the gateway decided
// locally), reconnects, call latency, live gateways per model, and each replica's in-flight
// count across gateways. Appended to the registry's exposition by the admin endpoint.
#pragma once

#include <span>
#include <string>

#include "fleet/fleet_snapshot.h"
#include "gateway/shared_state_sync.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

void appendSharedStateMetrics(std::string& out, std::string_view backend,
                              std::span<const state::SharedStateStats* const> request_clients,
                              const GatewayStateSync& sync, const fleet::FleetSnapshot& snapshot);

}  // namespace switchyard::gateway
