// `admission:` (globally, and per model under `models[].admission:`, key by key over the global
// values): the gateway's queue and request deadlines (docs/admission.md). Read by the gateway's
// config and by the simulator's scenario files (`gateways.admission`). Config load only.
#pragma once

#include <string>

#include "fleet/fleet_snapshot.h"

namespace YAML {
class Node;
}

namespace switchyard::admission {

// Throws ConfigError naming `where` + the offending key, with the node's line.
void parseAdmission(const YAML::Node& node, const std::string& where,
                    fleet::AdmissionParams& params);

}  // namespace switchyard::admission
