#include "gateway/telemetry_config.h"

#include "fleet/scrape_policy_config.h"

namespace switchyard::gateway {

void parseTelemetry(const YAML::Node& node, TimeNs& scrape_interval,
                    fleet::ScrapePolicy& policy) {
  fleet::parseScrapePolicy(node, "telemetry", scrape_interval, policy);
}

}  // namespace switchyard::gateway
