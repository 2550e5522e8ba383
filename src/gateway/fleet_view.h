// Renders the fleet's live state as JSON for /debug/fleet: every model's replicas with labels,
// gateway-counted load and tokens, and the engine signals with their age. Control thread only.
#pragma once

#include <string>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::gateway {

std::string renderFleetJson(const fleet::FleetSnapshot& snapshot, TimeNs now);

}  // namespace switchyard::gateway
