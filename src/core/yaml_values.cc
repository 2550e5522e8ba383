#include "core/yaml_values.h"

#include <fmt/format.h>

namespace switchyard {

TimeNs millis(const YAML::Node& node, const std::string& key) {
  const double ms = scalar<double>(node, key);
  // Above about 290 years the nanoseconds no longer fit a TimeNs.
  if (!(ms > 0) || !(ms < 9e12)) {
    throw ConfigError(key + ": must be a positive number of milliseconds (below 9e12)",
                      lineOf(node));
  }
  return static_cast<TimeNs>(ms * kNsPerMs);
}

double number(const YAML::Node& node, const std::string& key, double lo, double hi) {
  const double v = scalar<double>(node, key);
  if (!(v >= lo && v <= hi)) {
    throw ConfigError(fmt::format("{}: must be between {} and {}", key, lo, hi), lineOf(node));
  }
  return v;
}

void unknownKey(const YAML::const_iterator& it, const std::string& where) {
  throw ConfigError(where + "." + it->first.as<std::string>() + ": unknown key", lineOf(it->first));
}

void readFields(const YAML::Node& node, const std::string& where,
                std::initializer_list<Field> fields) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping", lineOf(node));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = scalar<std::string>(it->first, where);
    const Field* field = nullptr;
    for (const Field& f : fields) {
      if (key == f.first) field = &f;
    }
    if (field == nullptr) unknownKey(it, where);
    field->second(it->second, where.empty() ? key : where + "." + key);
  }
}

}  // namespace switchyard
