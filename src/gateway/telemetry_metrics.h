// The telemetry families of the gateway's /metrics beyond the scrape counters
// (docs/operations.md, "Telemetry at scale"): budget deferrals, the shard this gateway scrapes,
// signal age p99 and freshness, the sharing round trips, and the health probes sent and skipped.
#pragma once

#include <string>

#include "fleet/telemetry_scraper.h"
#include "health/health_manager.h"

namespace switchyard::gateway {

class TelemetryShare;

// `share` may be null (one gateway: nothing shared).
void appendTelemetryMetrics(std::string& out, const fleet::TelemetryScraper& scraper,
                            const TelemetryShare* share, const health::HealthManager& health);

}  // namespace switchyard::gateway
