#include "fleet/routing_knobs_config.h"

#include <cmath>

#include "core/yaml_values.h"

namespace switchyard::fleet {

LoadBalanceScore parseLoadBalanceScore(const std::string& value, const std::string& where) {
  if (value == "utilization") return LoadBalanceScore::kUtilization;
  if (value == "requests-per-capacity") return LoadBalanceScore::kRequestsPerCapacity;
  throw ConfigError(where + ": must be utilization or requests-per-capacity, not \"" + value +
                    "\"");
}

void parseLoadBalance(const YAML::Node& node, const std::string& where, LoadBalanceParams& params) {
  readFields(
      node, where,
      {
          {"queued_weight",
           [&](const auto& v, const auto& k) { params.queued_weight = number(v, k, 0, 1e6); }},
          {"kv_pressure_alpha",
           [&](const auto& v, const auto& k) { params.kv_alpha = number(v, k, 0, 1e6); }},
          {"kv_critical_free",
           [&](const auto& v, const auto& k) { params.kv_critical_free = number(v, k, 0, 1); }},
          {"fastest_within",
           [&](const auto& v, const auto& k) { params.fastest_within = number(v, k, 0, 1); }},
          {"score",
           [&](const auto& v, const auto& k) {
             try {
               params.score = parseLoadBalanceScore(scalar<std::string>(v, k), k);
             } catch (const ConfigError& e) {
               throw ConfigError(e.what(), lineOf(v));
             }
           }},
      });
}

void parseTopK(const YAML::Node& node, const std::string& where, TopKParams& params) {
  readFields(
      node, where,
      {
          {"k", [&](const auto& v,
                    const auto& k) { params.k = static_cast<uint32_t>(number(v, k, 1, 1e6)); }},
          {"tolerance_requests",
           [&](const auto& v, const auto& k) { params.tolerance_requests = number(v, k, 0, 1e9); }},
          {"tolerance_fraction",
           [&](const auto& v, const auto& k) { params.tolerance_fraction = number(v, k, 0, 1e3); }},
      });
}

void parseSlowStart(const YAML::Node& node, const std::string& where, SlowStartParams& params) {
  readFields(
      node, where,
      {
          // ramp_ms 0 turns slow start off.
          {"ramp_ms",
           [&](const auto& v, const auto& k) {
             params.ramp = static_cast<TimeNs>(number(v, k, 0, 86'400'000) * kNsPerMs);
           }},
          {"aggression",
           [&](const auto& v, const auto& k) { params.aggression = number(v, k, 0.01, 100); }},
      });
}

uint32_t candidateSampleValue(double k, const std::string& where) {
  if (k != std::floor(k) || k == 1 || k > 1e6) {
    throw ConfigError(where + ": must be 0 (score every replica) or a whole number >= 2");
  }
  return static_cast<uint32_t>(k);
}

uint32_t parseCandidateSample(const YAML::Node& node, const std::string& where) {
  try {
    return candidateSampleValue(number(node, where, 0, 1e6), where);
  } catch (const ConfigError& e) {
    throw ConfigError(e.what(), lineOf(node));
  }
}

}  // namespace switchyard::fleet
