#include "fleet/scrape_policy_config.h"

#include "core/yaml_values.h"

namespace switchyard::fleet {

void parseScrapePolicy(const YAML::Node& node, const std::string& where, TimeNs& scrape_interval,
                       ScrapePolicy& policy) {
  readFields(
      node, where,
      {
          {"scrape_interval_ms",
           [&](const auto& v, const auto& k) { scrape_interval = millis(v, k); }},
          {"max_scrapes_per_second",
           [&](const auto& v, const auto& k) {
             policy.max_scrapes_per_second = number(v, k, 0, 1e7);
           }},
          {"adaptive", [&](const auto& v, const auto& k) { policy.adaptive = scalar<bool>(v, k); }},
          // Above 2 a stable replica's signal, shared through another gateway, could pass the
          // three-interval freshness limit before its next scrape.
          {"stable_stretch",
           [&](const auto& v, const auto& k) { policy.stable_stretch = number(v, k, 1, 2); }},
          {"hot_kv_usage",
           [&](const auto& v, const auto& k) { policy.hot_kv_usage = number(v, k, 0, 1); }},
          {"family_filter",
           [&](const auto& v, const auto& k) { policy.family_filter = scalar<bool>(v, k); }},
      });
}

}  // namespace switchyard::fleet
