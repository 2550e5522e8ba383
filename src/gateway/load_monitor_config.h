// Configuration of request monitoring (`load_monitor:`, docs/configuration.md); the monitor
// itself is gateway/load_monitor.h.
#pragma once

#include <string>

#include "core/clock.h"

namespace YAML {
class Node;
}

namespace switchyard::gateway {

struct LoadMonitorConfig {
  bool enabled = true;
  TimeNs interval = 10 * kNsPerSec;
  TimeNs retention = 600 * kNsPerSec;
  std::string redis;  // redis://host:port[/db]; empty: memory only
  bool switchyard_layout = true;
  bool aibrix_layout = false;
  std::string key_prefix = "sy";
};

// `load_monitor:` — enabled, interval (s), retention (s), redis, layouts [switchyard, aibrix],
// key_prefix. Throws ConfigError naming the key.
void parseLoadMonitor(const YAML::Node& node, LoadMonitorConfig& config);

}  // namespace switchyard::gateway
