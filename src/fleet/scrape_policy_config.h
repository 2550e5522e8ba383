// Reader for the telemetry knobs (docs/operations.md, "Telemetry at scale"), shared by the
// gateway's `telemetry:` section and the simulator's `gateways.telemetry:` so both accept the
// same keys with the same rules:
//
//   scrape_interval_ms: 100        # base period; signals older than 3 intervals are unknown
//   max_scrapes_per_second: 0      # one gateway's scrape budget; 0: none
//   adaptive: true                 # stable replicas less often, near KV-critical more often
//   stable_stretch: 2              # a stable replica's period, in intervals (1..2)
//   hot_kv_usage: 0.7              # KV usage from which a replica is scraped more often
//   family_filter: true            # ask engines for the read families only
//
// Reads the keys present over the values given; throws ConfigError naming the key, with its
// line, on an unknown key or a bad value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "core/clock.h"
#include "fleet/scrape_schedule.h"

namespace switchyard::fleet {

void parseScrapePolicy(const YAML::Node& node, const std::string& where, TimeNs& scrape_interval,
                       ScrapePolicy& policy);

}  // namespace switchyard::fleet
