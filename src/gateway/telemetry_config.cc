#include "gateway/telemetry_config.h"

#include <yaml-cpp/yaml.h>

#include "gateway/config_values.h"

namespace switchyard::gateway {

void parseTelemetry(const YAML::Node& node, TimeNs& scrape_interval,
                    fleet::ScrapePolicy& policy) {
  if (!node.IsMap()) throw ConfigError("telemetry: must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = "telemetry." + key;
    const YAML::Node v = it->second;
    if (key == "scrape_interval_ms") {
      scrape_interval = millis(v, full);
    } else if (key == "max_scrapes_per_second") {
      policy.max_scrapes_per_second = number(v, full, 0, 1e7);
    } else if (key == "adaptive") {
      policy.adaptive = scalar<bool>(v, full);
    } else if (key == "stable_stretch") {
      // Above 2 a stable replica's signal, shared through another gateway, could pass the
      // three-interval freshness limit before its next scrape.
      policy.stable_stretch = number(v, full, 1, 2);
    } else if (key == "hot_kv_usage") {
      policy.hot_kv_usage = number(v, full, 0, 1);
    } else if (key == "family_filter") {
      policy.family_filter = scalar<bool>(v, full);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
}

}  // namespace switchyard::gateway
