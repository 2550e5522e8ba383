#include "gateway/admission_config.h"

#include <yaml-cpp/yaml.h>

#include "gateway/config.h"
#include "gateway/config_values.h"

namespace switchyard::gateway {
namespace {

fleet::QueueMode queueModeNamed(const std::string& text, const std::string& where) {
  if (text == "off") return fleet::QueueMode::kOff;
  if (text == "fifo") return fleet::QueueMode::kFifo;
  if (text == "deadline") return fleet::QueueMode::kDeadline;
  throw ConfigError(where + ": '" + text + "' is not one of off, fifo, deadline");
}

}  // namespace

void parseAdmission(const YAML::Node& node, const std::string& where,
                    fleet::AdmissionParams& params) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    const YAML::Node v = it->second;
    if (key == "queue") {
      params.queue = queueModeNamed(scalar<std::string>(v, full), full);
    } else if (key == "max_queued") {
      params.max_queued = static_cast<uint32_t>(number(v, full, 1, 1e7));
    } else if (key == "max_queued_per_client") {
      params.max_queued_per_client = static_cast<uint32_t>(number(v, full, 1, 1e7));
    } else if (key == "max_wait_ms") {
      params.max_wait = millis(v, full);
    } else if (key == "recheck_ms") {
      params.recheck = millis(v, full);
    } else if (key == "default_deadline_ms") {
      const double ms = number(v, full, 0, 1e10);
      params.default_deadline = static_cast<TimeNs>(ms * kNsPerMs);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (params.max_queued_per_client > params.max_queued) {
    throw ConfigError(where + ".max_queued_per_client: must not exceed max_queued");
  }
}

}  // namespace switchyard::gateway
