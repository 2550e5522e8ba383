#include "health/health_config.h"

#include "core/yaml_values.h"

namespace switchyard::health {

void parseHealthSettings(const YAML::Node& node, const std::string& where, HealthSettings& h) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping", lineOf(node));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    const YAML::Node v = it->second;  // a copy: it-> yields a temporary
    if (key == "failure_threshold") {
      h.failure_threshold = static_cast<int>(number(v, full, 1, 1e6));
    } else if (key == "hard_failure_threshold") {
      h.hard_failure_threshold = static_cast<int>(number(v, full, 1, 1e6));
    } else if (key == "probe_failure_threshold") {
      h.probe_failure_threshold = static_cast<int>(number(v, full, 1, 1e6));
    } else if (key == "half_open_successes") {
      h.half_open_successes = static_cast<int>(number(v, full, 1, 1e6));
    } else if (key == "base_backoff_ms") {
      h.base_backoff = millis(v, full);
    } else if (key == "max_backoff_ms") {
      h.max_backoff = millis(v, full);
    } else if (key == "probe_interval_ms") {
      h.probe_interval = millis(v, full);
    } else if (key == "probe_timeout_ms") {
      h.probe_timeout = millis(v, full);
    } else if (key == "max_probes_per_second") {
      h.max_probes_per_second = number(v, full, 0, 1e7);
    } else if (key == "skip_probes_with_traffic") {
      h.skip_probes_with_traffic = scalar<bool>(v, full);
    } else if (key == "probe_path") {
      h.probe_path = scalar<std::string>(v, full);
      if (h.probe_path.empty() || h.probe_path[0] != '/') {
        throw ConfigError(full + ": must start with /", lineOf(v));
      }
    } else if (key == "outlier_factor") {
      h.outlier_factor = number(v, full, 1, 1e6);
    } else if (key == "outlier_min_requests") {
      h.outlier_min_requests = number(v, full, 0, 1e9);
    } else if (key == "outlier_exclusion_ms") {
      h.outlier_exclusion = millis(v, full);
    } else if (key == "slow_factor") {
      h.slow_factor = number(v, full, 1, 1e6);
    } else if (key == "slow_min_tokens") {
      h.slow_min_tokens = static_cast<int64_t>(number(v, full, 1, 1e9));
    } else if (key == "outlier_max_fraction") {
      h.outlier_max_fraction = number(v, full, 0, 1);
    } else {
      unknownKey(it, where);
    }
  }
  if (h.hard_failure_threshold < h.failure_threshold) {
    throw ConfigError(where + ".hard_failure_threshold: must be >= failure_threshold",
                      lineOf(node));
  }
}

}  // namespace switchyard::health
