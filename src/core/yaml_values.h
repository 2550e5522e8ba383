// Typed readers for YAML configuration values, shared by every file parser (gateway config,
// scenario files). Each throws ConfigError naming the key, with the node's line, when the value
// has the wrong type or is out of range.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/clock.h"
#include "core/config_error.h"

namespace switchyard {

// The 1-based line of `node` in its file, 0 when unknown.
inline int lineOf(const YAML::Node& node) {
  if (!node) return 0;  // a missing key: no mark
  const int line = node.Mark().line;
  return line >= 0 ? line + 1 : 0;
}

template <typename T>
T scalar(const YAML::Node& node, const std::string& key) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(key + ": wrong type", lineOf(node));
  }
}

// A positive number of milliseconds, as nanoseconds.
TimeNs millis(const YAML::Node& node, const std::string& key);

// A number in [lo, hi].
double number(const YAML::Node& node, const std::string& key, double lo, double hi);

// Throws "KEY: unknown key" for the entry at `it` of a mapping (with its line).
[[noreturn]] void unknownKey(const YAML::const_iterator& it, const std::string& where);

// A mapping's keys and what to do with each value: `read(value, "where.key")`.
using FieldReader = std::function<void(const YAML::Node& value, const std::string& key)>;
using Field = std::pair<const char*, FieldReader>;
// Reads `node` (which must be a mapping) key by key; a key not in `fields` is an error naming it.
void readFields(const YAML::Node& node, const std::string& where,
                std::initializer_list<Field> fields);

}  // namespace switchyard
