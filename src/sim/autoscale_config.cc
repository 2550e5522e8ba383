#include "sim/autoscale_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "core/text_file.h"
#include "core/yaml_values.h"

namespace switchyard::sim {
namespace {

int wholeNumber(const YAML::Node& node, const std::string& key, double lo, double hi) {
  const double v = number(node, key, lo, hi);
  if (v != std::floor(v)) throw ConfigError(key + ": must be a whole number", lineOf(node));
  return static_cast<int>(v);
}

TimeNs secondsOf(const YAML::Node& node, const std::string& key, double lo, double hi) {
  return static_cast<TimeNs>(std::llround(number(node, key, lo, hi) * kNsPerSec));
}

AutoscaleDeployment parseDeployment(const YAML::Node& node, const std::string& where) {
  AutoscaleDeployment d;
  d.line = lineOf(node);
  readFields(
      node, where,
      {
          {"gpu", [&](const auto& v, const auto& f) { d.gpu = scalar<std::string>(v, f); }},
          {"min_replicas",
           [&](const auto& v, const auto& f) { d.min_replicas = wholeNumber(v, f, 0, 1e5); }},
          {"max_replicas",
           [&](const auto& v, const auto& f) { d.max_replicas = wholeNumber(v, f, 0, 1e5); }},
      });
  if (d.gpu.empty()) throw ConfigError(where + ".gpu: required", lineOf(node));
  if (d.max_replicas >= 0 && d.max_replicas < d.min_replicas) {
    throw ConfigError(where + ".max_replicas: must not be below min_replicas", lineOf(node));
  }
  return d;
}

}  // namespace

void parseAutoscale(const YAML::Node& node, AutoscaleSpec& spec) {
  spec.given = true;
  readFields(
      node, "autoscale",
      {
          {"interval_s",
           [&](const auto& v, const auto& f) { spec.interval = secondsOf(v, f, 1, 86400); }},
          {"window_s",
           [&](const auto& v, const auto& f) { spec.window_s = wholeNumber(v, f, 1, 86400); }},
          {"slice_factor",
           [&](const auto& v, const auto& f) { spec.slice_factor = wholeNumber(v, f, 1, 64); }},
          {"headroom", [&](const auto& v, const auto& f) { spec.headroom = number(v, f, 0, 10); }},
          {"time_limit_ms",
           [&](const auto& v, const auto& f) {
             spec.time_limit = static_cast<TimeNs>(number(v, f, 1, 60000) * kNsPerMs);
           }},
          {"hysteresis",
           [&](const auto& v, const auto& f) { spec.stability.hysteresis = number(v, f, 0, 1); }},
          {"scale_down_cooldown_s",
           [&](const auto& v, const auto& f) {
             spec.stability.scale_down_cooldown = secondsOf(v, f, 0, 86400);
           }},
          {"slo",
           [&](const auto& v, const auto& f) {
             readFields(
                 v, f,
                 {
                     {"ttft_ms", [&](const auto& x,
                                     const auto& k) { spec.slo_ttft_ms = number(x, k, 0, 1e9); }},
                     {"tpot_ms", [&](const auto& x,
                                     const auto& k) { spec.slo_tpot_ms = number(x, k, 0, 1e9); }},
                 });
           }},
          {"deployments",
           [&](const auto& v, const auto& f) {
             if (!v.IsSequence() || v.size() == 0) {
               throw ConfigError(f + ": must be a non-empty list", lineOf(v));
             }
             for (size_t i = 0; i < v.size(); ++i) {
               spec.deployments.push_back(parseDeployment(v[i], f + "[" + std::to_string(i) + "]"));
             }
           }},
      });
  if (spec.deployments.empty()) throw ConfigError("autoscale.deployments: required", lineOf(node));
}

std::map<std::string, double> parsePrices(const YAML::Node& node, const std::string& base_dir) {
  std::map<std::string, double> prices;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string gpu = scalar<std::string>(it->first, "prices");
      prices[gpu] = number(it->second, "prices." + gpu, 0, 1e6);
    }
    return prices;
  }
  std::string path = scalar<std::string>(node, "prices");
  if (!std::filesystem::path(path).is_absolute()) {
    path = (std::filesystem::path(base_dir) / path).lexically_normal().string();
  }
  std::string error;
  const std::optional<std::string> text = readTextFile(path, &error);
  if (!text) throw ConfigError("prices: " + error, lineOf(node));
  YAML::Node file;
  try {
    file = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    throw ConfigError("prices: " + path + ": " + e.msg, lineOf(node));
  }
  const YAML::Node gpus = file["gpus"];
  if (!gpus.IsSequence())
    throw ConfigError("prices: " + path + ": needs a gpus list", lineOf(node));
  for (size_t i = 0; i < gpus.size(); ++i) {
    const std::string where = "prices: " + path + ": gpus[" + std::to_string(i) + "]";
    if (!gpus[i].IsMap() || !gpus[i]["name"] || !gpus[i]["usd_per_hour"]) {
      throw ConfigError(where + ": needs name and usd_per_hour", lineOf(node));
    }
    prices[scalar<std::string>(gpus[i]["name"], where + ".name")] =
        number(gpus[i]["usd_per_hour"], where + ".usd_per_hour", 0, 1e6);
  }
  return prices;
}

}  // namespace switchyard::sim
