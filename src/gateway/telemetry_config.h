// The `telemetry:` section of the gateway config (docs/configuration.md):
//
//   telemetry:
//     scrape_interval_ms: 100        # base period; signals older than 3 intervals are unknown
//     max_scrapes_per_second: 0      # this gateway's scrape budget; 0: none
//     adaptive: true                 # stable replicas less often, near KV-critical more often
//     stable_stretch: 2              # a stable replica's period, in intervals (1..2)
//     hot_kv_usage: 0.7              # KV usage from which a replica is scraped more often
#pragma once

#include "core/clock.h"
#include "fleet/scrape_schedule.h"

namespace YAML {
class Node;
}

namespace switchyard::gateway {

// Throws ConfigError naming the key on a wrong type, a value out of range or an unknown key.
void parseTelemetry(const YAML::Node& node, TimeNs& scrape_interval, fleet::ScrapePolicy& policy);

}  // namespace switchyard::gateway
