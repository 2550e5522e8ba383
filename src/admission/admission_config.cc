#include "admission/admission_config.h"

#include <yaml-cpp/yaml.h>

#include "core/yaml_values.h"

namespace switchyard::admission {
namespace {

fleet::QueueMode queueModeNamed(const YAML::Node& node, const std::string& where) {
  const std::string text = scalar<std::string>(node, where);
  if (text == "off") return fleet::QueueMode::kOff;
  if (text == "fifo") return fleet::QueueMode::kFifo;
  if (text == "deadline") return fleet::QueueMode::kDeadline;
  throw ConfigError(where + ": '" + text + "' is not one of off, fifo, deadline", lineOf(node));
}

}  // namespace

void parseAdmission(const YAML::Node& node, const std::string& where,
                    fleet::AdmissionParams& params) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping", lineOf(node));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    const YAML::Node v = it->second;
    if (key == "queue") {
      params.queue = queueModeNamed(v, full);
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
      throw ConfigError(full + ": unknown key", lineOf(it->first));
    }
  }
  if (params.max_queued_per_client > params.max_queued) {
    throw ConfigError(where + ".max_queued_per_client: must not exceed max_queued", lineOf(node));
  }
}

}  // namespace switchyard::admission
