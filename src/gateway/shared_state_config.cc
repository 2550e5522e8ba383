#include "gateway/shared_state_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "fleet/fleet_registry.h"
#include "gateway/config_values.h"

namespace switchyard::gateway {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

void requireMap(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
}

state::SharedStateSettings::Backend backendNamed(const std::string& name,
                                                 const std::string& key) {
  if (name == "memory") return state::SharedStateSettings::Backend::kMemory;
  if (name == "redis") return state::SharedStateSettings::Backend::kRedis;
  throw ConfigError(key + ": '" + name + "' is not a backend (memory, redis)");
}

}  // namespace

void parseSharedState(const YAML::Node& node, SharedStateConfig& config) {
  requireMap(node, "shared_state");
  state::SharedStateSettings& s = config.settings;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = "shared_state." + key;
    const YAML::Node v = it->second;  // a copy: it-> yields a temporary
    if (key == "backend") {
      s.backend = backendNamed(scalar<std::string>(v, full), full);
    } else if (key == "address") {
      s.address = scalar<std::string>(v, full);
      std::string host;
      uint16_t port = 0;
      if (!fleet::splitHostPort(s.address, host, port)) {
        throw ConfigError(full + ": '" + s.address + "' is not host:port");
      }
    } else if (key == "password") {
      s.password = scalar<std::string>(v, full);
    } else if (key == "database") {
      s.database = static_cast<int>(number(v, full, 0, 1 << 20));
    } else if (key == "key_prefix") {
      s.key_prefix = scalar<std::string>(v, full);
      if (s.key_prefix.empty() || s.key_prefix.find_first_of("{}") != std::string::npos) {
        throw ConfigError(full + ": must be non-empty and without braces");
      }
    } else if (key == "call_timeout_ms") {
      s.call_timeout = millis(v, full);
    } else if (key == "sync_timeout_ms") {
      s.sync_timeout = millis(v, full);
    } else if (key == "reconnect_min_ms") {
      s.reconnect_min = millis(v, full);
    } else if (key == "reconnect_max_ms") {
      s.reconnect_max = millis(v, full);
    } else if (key == "sync_interval_ms") {
      config.sync_interval = millis(v, full);
    } else if (key == "liveness_ttl_ms") {
      config.liveness_ttl = millis(v, full);
    } else if (key == "inflight_slots_ahead") {
      const double ahead = number(v, full, 0, 4096);
      if (ahead != static_cast<double>(static_cast<int64_t>(ahead))) {
        throw ConfigError(full + ": must be a whole number of slots");
      }
      config.inflight_slots_ahead = static_cast<int64_t>(ahead);
    } else if (key == "gateway_id") {
      config.gateway_id = scalar<std::string>(v, full);
      if (config.gateway_id.empty()) throw ConfigError(full + ": empty");
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (config.liveness_ttl < 2 * config.sync_interval) {
    throw ConfigError("shared_state.liveness_ttl_ms: must be at least twice sync_interval_ms");
  }
  if (s.reconnect_max < s.reconnect_min) {
    throw ConfigError("shared_state.reconnect_max_ms: must not be below reconnect_min_ms");
  }
}

void parseSessionAffinity(const YAML::Node& node, SessionAffinityConfig& config) {
  requireMap(node, "session_affinity");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = "session_affinity." + key;
    const YAML::Node v = it->second;
    if (key == "enabled") {
      config.enabled = scalar<bool>(v, full);
    } else if (key == "header") {
      config.header = lower(scalar<std::string>(v, full));
      if (config.header.empty()) throw ConfigError(full + ": empty");
    } else if (key == "ttl_s") {
      config.ttl = static_cast<TimeNs>(number(v, full, 1, 1e8) * kNsPerSec);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
}

void parseAsyncJobs(const YAML::Node& node, AsyncJobsConfig& config) {
  requireMap(node, "async_jobs");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = "async_jobs." + key;
    const YAML::Node v = it->second;
    if (key == "enabled") {
      config.enabled = scalar<bool>(v, full);
    } else if (key == "ttl_s") {
      config.ttl = static_cast<TimeNs>(number(v, full, 1, 1e9) * kNsPerSec);
    } else if (key == "default_model") {
      config.default_model = scalar<std::string>(v, full);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
}

void applySharedStateEnvironment(SharedStateConfig& config) {
  state::SharedStateSettings& s = config.settings;
  if (const char* v = std::getenv("SWITCHYARD_SHARED_STATE_BACKEND")) {
    s.backend = backendNamed(v, "SWITCHYARD_SHARED_STATE_BACKEND");
  }
  const char* host = std::getenv("REDIS_HOST");
  const char* port = std::getenv("REDIS_PORT");
  if (host || port) {
    std::string current_host;
    uint16_t current_port = 6379;
    fleet::splitHostPort(s.address, current_host, current_port);
    s.address = std::string(host ? host : current_host.c_str()) + ":" +
                (port ? std::string(port) : std::to_string(current_port));
  }
  if (const char* v = std::getenv("REDIS_PASSWORD")) s.password = v;
  if (const char* v = std::getenv("SWITCHYARD_GATEWAY_ID"); v != nullptr && *v != '\0') {
    config.gateway_id = v;
  }
  if (const char* v = std::getenv("SWITCHYARD_REDIS_ADDRESS")) {
    s.address = v;
    s.backend = state::SharedStateSettings::Backend::kRedis;
  }
  std::string h;
  uint16_t p = 0;
  if (!fleet::splitHostPort(s.address, h, p)) {
    throw ConfigError("shared state address '" + s.address + "' is not host:port");
  }
}

}  // namespace switchyard::gateway
