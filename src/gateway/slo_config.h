// `models[].slo:` — what SLO routing holds a model's requests to, and how each GPU type serves
// them (docs/routing.md, "SLO routing"):
//
//   slo:
//     objective: tpot=50ms     # Slo::parse syntax (ttft, tpot, e2e; several with commas);
//                              # default: the first profile's own SLO
//     percentile: 99           # 0 (mean), 50, 90, 99; default 99
//     profiles:                # per GPU type, as the replicas' `gpu` label names it
//       A10: /etc/switchyard/profiles/a10.json   # a profile file with measured steps
//       L20: emulated                             # the engine model's, like gen-profile --emulated
//
// Config load only: reads files and may run the engine model (1-2 s per GPU type on an idle
// machine, cached across reloads). Throws ConfigError naming the key.
#pragma once

#include <memory>
#include <string>

#include "profile/slo_profiles.h"

namespace YAML {
class Node;
}

namespace switchyard::gateway {

std::shared_ptr<const profile::SloProfiles> parseSloProfiles(const YAML::Node& node,
                                                             const std::string& where,
                                                             const std::string& model_name);

}  // namespace switchyard::gateway
