#include "gateway/optimize_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "core/text_file.h"
#include "gateway/config.h"
#include "gateway/config_values.h"
#include "state/redis/blocking_redis.h"
#include "state/redis/profile_store.h"

namespace switchyard::gateway {
namespace {

bool close(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

// The same limits (to rounding: "50ms" and 0.05 are one SLO) and percentile.
bool sameSlo(const profile::Slo& a, const profile::Slo& b) {
  return a.percentile == b.percentile && close(a.ttft, b.ttft) && close(a.tpot, b.tpot) &&
         close(a.e2e, b.e2e);
}

void requireMap(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
}

std::string nonEmpty(const YAML::Node& node, const std::string& key) {
  std::string value = scalar<std::string>(node, key);
  if (value.empty()) throw ConfigError(key + ": must not be empty");
  return value;
}

void parseLoad(const YAML::Node& node, OptimizeLoadSource& load) {
  requireMap(node, "load");
  bool source_set = false;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = "load." + key;
    const YAML::Node v = it->second;
    if (key == "source") {
      const std::string kind = scalar<std::string>(v, full);
      source_set = true;
      if (kind == "gateways")
        load.kind = OptimizeLoadSource::Kind::kGateways;
      else if (kind == "redis")
        load.kind = OptimizeLoadSource::Kind::kRedis;
      else if (kind == "file")
        load.kind = OptimizeLoadSource::Kind::kFile;
      else
        throw ConfigError(full + ": '" + kind + "' is not a source (gateways, redis, file)");
    } else if (key == "gateways") {
      if (!v.IsSequence()) throw ConfigError(full + ": must be a list of http://host:port");
      for (const auto& g : v) load.gateways.push_back(nonEmpty(g, full));
    } else if (key == "redis") {
      load.redis = nonEmpty(v, full);
      std::string error;
      if (!state::redis::RedisUrl::parse(load.redis, &error))
        throw ConfigError(full + ": " + error);
    } else if (key == "layout") {
      const std::string layout = scalar<std::string>(v, full);
      if (layout == "switchyard")
        load.aibrix_layout = false;
      else if (layout == "aibrix")
        load.aibrix_layout = true;
      else
        throw ConfigError(full + ": '" + layout + "' is not a layout (switchyard, aibrix)");
    } else if (key == "key_prefix") {
      load.key_prefix = nonEmpty(v, full);
    } else if (key == "file") {
      load.file = nonEmpty(v, full);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (!source_set) {
    load.kind = !load.redis.empty()  ? OptimizeLoadSource::Kind::kRedis
                : !load.file.empty() ? OptimizeLoadSource::Kind::kFile
                                     : OptimizeLoadSource::Kind::kGateways;
  }
  using Kind = OptimizeLoadSource::Kind;
  if (load.kind == Kind::kGateways && load.gateways.empty()) {
    throw ConfigError("load.gateways: the gateways source needs at least one admin address");
  }
  if (load.kind == Kind::kRedis && load.redis.empty()) throw ConfigError("load.redis: missing");
  if (load.kind == Kind::kFile && load.file.empty()) throw ConfigError("load.file: missing");
}

OptimizeDeployment parseDeployment(const YAML::Node& node, size_t index) {
  const std::string where = fmt::format("deployments[{}]", index);
  requireMap(node, where);
  OptimizeDeployment d;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    const YAML::Node v = it->second;
    if (key == "namespace")
      d.ns = nonEmpty(v, full);
    else if (key == "name")
      d.name = nonEmpty(v, full);
    else if (key == "model")
      d.model = nonEmpty(v, full);
    else if (key == "gpu")
      d.gpu = nonEmpty(v, full);
    else if (key == "cost")
      d.cost = number(v, full, 1e-9, 1e9);
    else if (key == "profile")
      d.profile = nonEmpty(v, full);
    else if (key == "min_replicas") {
      d.min_replicas = static_cast<int>(number(v, full, 0, 100000));
      d.min_replicas_configured = true;
    }
    else if (key == "max_replicas")
      d.max_replicas = static_cast<int>(number(v, full, 0, 100000));
    else
      throw ConfigError(full + ": unknown key");
  }
  if (d.name.empty()) throw ConfigError(where + ".name: missing");
  if (d.model.empty()) throw ConfigError(where + ".model: missing");
  if (d.profile.empty()) throw ConfigError(where + ".profile: missing");
  if (d.max_replicas >= 0 && d.min_replicas > d.max_replicas) {
    throw ConfigError(where + ": min_replicas is above max_replicas");
  }
  return d;
}

}  // namespace

OptimizeConfig parseOptimizeConfig(const std::string& yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(std::string("not YAML: ") + e.what());
  }
  if (!root || !root.IsMap()) throw ConfigError("top level must be a mapping");
  OptimizeConfig config;
  bool have_deployments = false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const YAML::Node v = it->second;
    if (key == "listen") {
      config.listen = nonEmpty(v, key);
    } else if (key == "interval") {
      config.interval = static_cast<TimeNs>(number(v, key, 0.05, 3600) * 1e9);
    } else if (key == "window") {
      config.window_s = static_cast<int64_t>(number(v, key, 1, 86400));
    } else if (key == "slo") {
      std::string error;
      auto slo = profile::Slo::parse(scalar<std::string>(v, key), &error);
      if (!slo) throw ConfigError("slo: " + error);
      const int percentile = config.slo ? config.slo->percentile : 99;
      config.slo = *slo;
      config.slo->percentile = percentile;
    } else if (key == "percentile") {
      const int p = static_cast<int>(number(v, key, 0, 99));
      if (p != 0 && p != 50 && p != 90 && p != 99) throw ConfigError("percentile: 0, 50, 90 or 99");
      if (!config.slo) config.slo = profile::Slo{};
      config.slo->percentile = p;
    } else if (key == "slice_factor") {
      config.slice_factor = static_cast<int>(number(v, key, 1, 64));
    } else if (key == "headroom") {
      config.headroom = number(v, key, 0, 10);
    } else if (key == "time_limit_ms") {
      config.time_limit = millis(v, key);
    } else if (key == "replicas_unit") {
      const std::string unit = scalar<std::string>(v, key);
      if (unit == "hundredths")
        config.hundredths = true;
      else if (unit == "replicas")
        config.hundredths = false;
      else
        throw ConfigError("replicas_unit: 'hundredths' or 'replicas'");
    } else if (key == "hysteresis") {
      config.stability.hysteresis = number(v, key, 0, 1);
    } else if (key == "scale_down_cooldown") {
      config.stability.scale_down_cooldown = static_cast<TimeNs>(number(v, key, 0, 86400) * 1e9);
    } else if (key == "load") {
      parseLoad(v, config.load);
    } else if (key == "deployments") {
      if (!v.IsSequence() || v.size() == 0)
        throw ConfigError("deployments: must be a non-empty list");
      have_deployments = true;
      std::set<std::pair<std::string, std::string>> seen;
      for (size_t i = 0; i < v.size(); ++i) {
        OptimizeDeployment d = parseDeployment(v[i], i);
        if (!seen.insert({d.ns, d.name}).second) {
          throw ConfigError(fmt::format("deployments[{}]: {}/{} appears twice", i, d.ns, d.name));
        }
        config.deployments.push_back(std::move(d));
      }
    } else {
      throw ConfigError(key + ": unknown key");
    }
  }
  if (!have_deployments) throw ConfigError("deployments: missing");
  if (!root["load"]) throw ConfigError("load: missing (gateways, redis or file)");
  if (config.slo && !config.slo->any()) throw ConfigError("slo: percentile given without limits");
  return config;
}

OptimizeConfig loadOptimizeConfigFile(const std::string& path) {
  std::string error;
  const std::optional<std::string> text = readTextFile(path, &error);
  if (!text) throw ConfigError(error);
  return parseOptimizeConfig(*text);
}

std::deque<profile::GpuProfile> loadOptimizeProfiles(const OptimizeConfig& config) {
  std::deque<profile::GpuProfile> out;
  for (const OptimizeDeployment& d : config.deployments) {
    profile::ProfileParse parsed = state::redis::loadProfileSource(d.profile, d.name, d.model);
    if (!parsed.profile) {
      throw ConfigError(fmt::format("deployment {}/{}: {}", d.ns, d.name, parsed.error));
    }
    profile::GpuProfile& p = *parsed.profile;
    if (!p.model.empty() && p.model != d.model) {
      throw ConfigError(fmt::format("deployment {}/{}: the profile is for model {}, not {}", d.ns,
                                    d.name, p.model, d.model));
    }
    if (config.slo && !sameSlo(p.slo, *config.slo)) {
      throw ConfigError(fmt::format(
          "deployment {}/{}: the profile was made for the SLO {}, the optimizer's is {} "
          "(regenerate it with gen-profile --slo)",
          d.ns, d.name, p.slo.describe(), config.slo->describe()));
    }
    bool servable = false;
    for (const auto& row : p.tputs) {
      for (double rate : row) servable = servable || rate > 0;
    }
    if (!servable) {
      throw ConfigError(fmt::format("deployment {}/{}: no request shape meets the SLO {} on it",
                                    d.ns, d.name, p.slo.describe()));
    }
    if (d.cost) p.cost = *d.cost;
    if (p.model.empty()) p.model = d.model;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace switchyard::gateway
