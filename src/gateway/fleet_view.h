// Renders the fleet's live state as JSON for /debug/fleet: every model's replicas with labels,
// gateway-counted load and tokens, and the engine signals with their age. Control thread only.
#pragma once

#include <string>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::gateway {

// `extra` (when not empty) is inserted as further top-level members, e.g.
// `"discovery":{...}` (without a leading comma).
std::string renderFleetJson(const fleet::FleetSnapshot& snapshot, TimeNs now,
                            std::string_view extra = {});

}  // namespace switchyard::gateway
