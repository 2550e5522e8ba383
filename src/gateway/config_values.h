// Typed readers for configuration values, shared by the config sections' parsers. Each throws
// ConfigError naming the key when the value has the wrong type or is out of range.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "core/clock.h"
#include "gateway/config.h"

namespace switchyard::gateway {

template <typename T>
T scalar(const YAML::Node& node, const std::string& key) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(key + ": wrong type");
  }
}

// A positive number of milliseconds, as nanoseconds.
TimeNs millis(const YAML::Node& node, const std::string& key);

// A number in [lo, hi].
double number(const YAML::Node& node, const std::string& key, double lo, double hi);

}  // namespace switchyard::gateway
