// Reader for the `health:` settings (docs/operations.md), shared by the gateway's configuration
// and the simulator's scenario files. Reads the keys present over `settings`; throws ConfigError
// naming the key, with its line, on an unknown key or a bad value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "health/replica_health.h"

namespace switchyard::health {

void parseHealthSettings(const YAML::Node& node, const std::string& where,
                         HealthSettings& settings);

}  // namespace switchyard::health
