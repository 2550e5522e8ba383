// Readers for the per-model routing knobs (docs/configuration.md): `load_balance:`,
// `least_request_top_k:`, `slow_start:` and `candidate_sample:`, shared by the gateway's
// configuration and the simulator's scenario files so both accept the same keys with the same
// rules. Each reads the keys present over the values it is given (absent keys keep their value)
// and throws ConfigError naming the key, with its line, on an unknown key or a bad value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "fleet/fleet_snapshot.h"

namespace switchyard::fleet {

LoadBalanceScore parseLoadBalanceScore(const std::string& value, const std::string& where);
void parseLoadBalance(const YAML::Node& node, const std::string& where, LoadBalanceParams& params);
void parseTopK(const YAML::Node& node, const std::string& where, TopKParams& params);
void parseSlowStart(const YAML::Node& node, const std::string& where, SlowStartParams& params);
// A candidate sample size: 0 (off) or a whole number from 2 (one would be a random pick).
uint32_t candidateSampleValue(double k, const std::string& where);
uint32_t parseCandidateSample(const YAML::Node& node, const std::string& where);

}  // namespace switchyard::fleet
