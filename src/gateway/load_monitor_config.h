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
  // The optimize service reading this load (http://HOST:PORT): its answer is shown on the
  // dashboard (gateway/optimizer_panel.h). Empty: none.
  std::string optimizer_url;
};

// `load_monitor:` — enabled, interval (s), retention (s), redis, layouts [switchyard, aibrix],
// key_prefix, optimizer_url. Throws ConfigError naming the key.
void parseLoadMonitor(const YAML::Node& node, LoadMonitorConfig& config);

}  // namespace switchyard::gateway
