// `admission:` (globally, and per model under `models[].admission:`, key by key over the global
// values): the gateway's queue and request deadlines (docs/admission.md). Config load only.
#pragma once

#include <string>

#include "fleet/fleet_snapshot.h"

namespace YAML {
class Node;
}

namespace switchyard::gateway {

// Throws ConfigError naming `where` + the offending key.
void parseAdmission(const YAML::Node& node, const std::string& where,
                    fleet::AdmissionParams& params);

}  // namespace switchyard::gateway
