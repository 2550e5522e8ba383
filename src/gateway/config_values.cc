#include "gateway/config_values.h"

#include <fmt/format.h>

namespace switchyard::gateway {

TimeNs millis(const YAML::Node& node, const std::string& key) {
  const double ms = scalar<double>(node, key);
  if (!(ms > 0)) throw ConfigError(key + ": must be a positive number of milliseconds");
  return static_cast<TimeNs>(ms * kNsPerMs);
}

double number(const YAML::Node& node, const std::string& key, double lo, double hi) {
  const double v = scalar<double>(node, key);
  if (!(v >= lo && v <= hi)) {
    throw ConfigError(fmt::format("{}: must be between {} and {}", key, lo, hi));
  }
  return v;
}

}  // namespace switchyard::gateway
