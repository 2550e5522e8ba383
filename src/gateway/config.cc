#include "gateway/config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include "core/text_file.h"
#include "fleet/routing_knobs_config.h"
#include "admission/admission_config.h"
#include "gateway/slo_config.h"
#include "gateway/config_values.h"
#include "gateway/telemetry_config.h"
#include "gateway/discovery_config.h"
#include "gateway/shared_state_config.h"
#include "health/health_config.h"
#include "core/duration_text.h"
#include "routing/strategy_spec.h"

namespace switchyard::gateway {
namespace {

void requireAddress(const std::string& address, const std::string& key) {
  std::string host;
  uint16_t port = 0;
  if (!fleet::splitHostPort(address, host, port)) {
    throw ConfigError(key + ": '" + address + "' is not host:port");
  }
}

void requireStrategy(const std::string& name, const std::string& key) {
  if (name.empty()) return;
  routing::StrategySpec spec;
  std::string_view bad;
  if (routing::parseStrategySpec(name, spec, &bad) != routing::SpecError::kNone) {
    std::string known;
    for (std::string_view n : routing::strategyNames()) {
      known += (known.empty() ? "" : ", ") + std::string(n);
    }
    throw ConfigError(key + ": invalid routing strategy '" + name + "' at '" + std::string(bad) +
                      "' (known: " + known + "; blends look like a:2,b:1)");
  }
}

void parseTimeouts(const YAML::Node& node, TimeoutsConfig& t) {
  const std::pair<const char*, TimeNs*> fields[] = {
      {"client_header_ms", &t.client_header},
      {"client_body_ms", &t.client_body},
      {"client_idle_ms", &t.client_idle},
      {"client_write_ms", &t.client_write},
      {"upstream_connect_ms", &t.upstream_connect},
      {"upstream_first_byte_ms", &t.upstream_first_byte},
      {"upstream_idle_ms", &t.upstream_idle},
      {"upstream_pool_idle_ms", &t.upstream_pool_idle},
      {"shutdown_grace_ms", &t.shutdown_grace},
      {"lingering_close_ms", &t.lingering_close},
  };
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    bool known = false;
    for (const auto& [name, field] : fields) {
      if (key == name) {
        *field = millis(it->second, "timeouts." + key);
        known = true;
      }
    }
    if (!known) throw ConfigError("timeouts." + key + ": unknown key");
  }
}

fleet::ModelSpec parseModel(const YAML::Node& node, size_t index, const GatewayConfig& global,
                            const fleet::UpstreamTimeouts& default_timeouts) {
  const std::string where = "models[" + std::to_string(index) + "]";
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
  fleet::ModelSpec model;
  model.load_balance = global.load_balance;
  model.top_k = global.top_k;
  model.slow_start = global.slow_start;
  model.candidate_sample = global.candidate_sample;
  model.admission = global.admission;
  model.timeouts = default_timeouts;
  if (const YAML::Node admission = node["admission"]) {
    admission::parseAdmission(admission, where + ".admission", model.admission);
  }
  if (const YAML::Node limits = node["limits"]) {
    if (!limits.IsMap()) throw ConfigError(where + ".limits: must be a mapping");
    for (auto it = limits.begin(); it != limits.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      const std::string full = where + ".limits." + key;
      if (key == "requests_per_second_per_replica") {
        model.limits.requests_per_second_per_replica = number(it->second, full, 0, 1e9);
      } else if (key == "max_inflight_per_replica") {
        model.limits.max_inflight_per_replica =
            static_cast<int64_t>(number(it->second, full, 0, 1e9));
      } else {
        throw ConfigError(full + ": unknown key");
      }
    }
  }
  if (const YAML::Node t = node["timeouts"]) {
    if (!t.IsMap()) throw ConfigError(where + ".timeouts: must be a mapping");
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      const std::string full = where + ".timeouts." + key;
      if (key == "upstream_connect_ms") {
        model.timeouts.connect = millis(it->second, full);
      } else if (key == "upstream_first_byte_ms") {
        model.timeouts.first_byte = millis(it->second, full);
      } else if (key == "upstream_idle_ms") {
        model.timeouts.idle = millis(it->second, full);
      } else {
        throw ConfigError(full + ": unknown key");
      }
    }
  }
  if (const YAML::Node rc = node["routing_config"]) {
    if (!rc.IsMap()) throw ConfigError(where + ".routing_config: must be a mapping");
    for (auto it = rc.begin(); it != rc.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      const std::string full = where + ".routing_config." + key;
      if (key == "load_balance") {
        fleet::parseLoadBalance(it->second, full, model.load_balance);
      } else if (key == "least_request_top_k") {
        fleet::parseTopK(it->second, full, model.top_k);
      } else if (key == "slow_start") {
        fleet::parseSlowStart(it->second, full, model.slow_start);
      } else if (key == "candidate_sample") {
        model.candidate_sample = fleet::parseCandidateSample(it->second, full);
      } else {
        throw ConfigError(full + ": unknown key");
      }
    }
  }
  if (!node["name"]) throw ConfigError(where + ".name: required");
  model.name = scalar<std::string>(node["name"], where + ".name");
  if (model.name.empty()) throw ConfigError(where + ".name: must not be empty");
  if (const YAML::Node slo = node["slo"]) {
    model.slo = parseSloProfiles(slo, where + ".slo", model.name);
  }
  if (node["routing_strategy"]) {
    model.routing_strategy = scalar<std::string>(node["routing_strategy"],
                                                 where + ".routing_strategy");
    requireStrategy(model.routing_strategy, where + ".routing_strategy");
  }
  std::string model_authorization;  // the model's api_key, for replicas without their own
  parseUpstreamKey(node, where, model_authorization);
  const YAML::Node replicas = node["replicas"];
  if (replicas && !replicas.IsSequence()) throw ConfigError(where + ".replicas: must be a list");
  std::set<std::string> seen;
  for (size_t r = 0; replicas && r < replicas.size(); ++r) {
    const std::string rwhere = where + ".replicas[" + std::to_string(r) + "]";
    const YAML::Node rnode = replicas[r];
    fleet::ReplicaSpec replica;
    if (rnode.IsScalar()) {
      replica.address = rnode.as<std::string>();
    } else if (rnode.IsMap() && rnode["address"]) {
      replica.address = scalar<std::string>(rnode["address"], rwhere + ".address");
      if (const YAML::Node labels = rnode["labels"]) {
        if (!labels.IsMap()) throw ConfigError(rwhere + ".labels: must be a mapping");
        for (auto it = labels.begin(); it != labels.end(); ++it) {
          replica.labels[it->first.as<std::string>()] =
              scalar<std::string>(it->second, rwhere + ".labels");
        }
      }
    } else {
      throw ConfigError(rwhere + ": needs an address");
    }
    parseReplicaScheme(replica, rwhere + ".address");
    replica.authorization = model_authorization;
    if (rnode.IsMap()) parseUpstreamKey(rnode, rwhere, replica.authorization);
    requireAddress(replica.address, rwhere + ".address");
    if (!seen.insert(replica.address).second) {
      throw ConfigError(rwhere + ": duplicate address " + replica.address);
    }
    model.replicas.push_back(std::move(replica));
  }
  return model;
}

// `tracing:`, `logging:` and `decisions:`.
void parseObserve(const YAML::Node& root, observe::ObserveConfig& config) {
  auto forEach = [](const YAML::Node& node, const std::string& where, auto&& on_key) {
    if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (!on_key(key, it->second)) throw ConfigError(where + "." + key + ": unknown key");
    }
  };
  if (const YAML::Node tracing = root["tracing"]) {
    forEach(tracing, "tracing", [&](const std::string& key, const YAML::Node& v) {
      observe::TracingConfig& t = config.tracing;
      if (key == "otlp_endpoint") {
        t.otlp_endpoint = scalar<std::string>(v, "tracing.otlp_endpoint");
        std::string_view rest = t.otlp_endpoint;
        if (!rest.starts_with("http://")) {
          throw ConfigError("tracing.otlp_endpoint: must look like http://HOST:PORT");
        }
        rest.remove_prefix(7);
        requireAddress(std::string(rest.substr(0, rest.find('/'))), "tracing.otlp_endpoint");
      } else if (key == "sampling_ratio") {
        t.sampling_ratio = number(v, "tracing.sampling_ratio", 0, 1);
      } else if (key == "queue_spans") {
        t.queue_spans = static_cast<size_t>(number(v, "tracing.queue_spans", 1, 1 << 20));
      } else if (key == "max_batch") {
        t.max_batch = static_cast<size_t>(number(v, "tracing.max_batch", 1, 1 << 16));
      } else if (key == "export_interval_ms") {
        t.export_interval = millis(v, "tracing.export_interval_ms");
      } else if (key == "export_timeout_ms") {
        t.export_timeout = millis(v, "tracing.export_timeout_ms");
      } else {
        return false;
      }
      return true;
    });
  }
  if (const YAML::Node logging = root["logging"]) {
    forEach(logging, "logging", [&](const std::string& key, const YAML::Node& v) {
      if (key == "level") {
        config.logging.level = scalar<std::string>(v, "logging.level");
        static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn",
                                                      "warning", "error", "critical", "off"};
        if (!kLevels.count(config.logging.level)) {
          throw ConfigError("logging.level: one of trace, debug, info, warn, error, critical, off");
        }
      } else if (key == "access_log") {
        config.logging.access_log = scalar<bool>(v, "logging.access_log");
      } else {
        return false;
      }
      return true;
    });
  }
  if (const YAML::Node decisions = root["decisions"]) {
    forEach(decisions, "decisions", [&](const std::string& key, const YAML::Node& v) {
      if (key != "log_size") return false;
      config.decision_log_size = static_cast<size_t>(number(v, "decisions.log_size", 1, 65536));
      return true;
    });
  }
}

// Reads a non-negative number from the environment; false when the variable is unset or empty.
bool envNumber(const std::string& variable, double& out) {
  const char* value = std::getenv(variable.c_str());
  if (value == nullptr || *value == '\0') return false;
  char* end = nullptr;
  const double parsed = std::strtod(value, &end);
  if (end == value || *end != '\0' || !std::isfinite(parsed) || parsed < 0) {
    throw ConfigError(variable + ": not a non-negative number: " + value);
  }
  out = parsed;
  return true;
}

// AIBrix names first, then SWITCHYARD_ names, which win when both are set.
void applyLoadBalanceEnvironment(GatewayConfig& config) {
  const std::pair<const char*, double*> knobs[] = {
      {"LOAD_BALANCE_QUEUED_WEIGHT", &config.load_balance.queued_weight},
      {"LOAD_BALANCE_KV_PRESSURE_ALPHA", &config.load_balance.kv_alpha},
      {"LOAD_BALANCE_KV_CRITICAL_FREE", &config.load_balance.kv_critical_free},
      {"ROUTING_AUTO_BLEND_LOAD_BALANCE_WEIGHT", &config.auto_blend_load_balance_weight},
      {"ROUTING_LEAST_REQUEST_TOP_K_EPSILON", &config.top_k.tolerance_requests},
  };
  for (const char* prefix : {"AIBRIX_", "SWITCHYARD_"}) {
    for (const auto& [name, field] : knobs) envNumber(std::string(prefix) + name, *field);
    const std::string k_name = std::string(prefix) + "ROUTING_LEAST_REQUEST_TOP_K";
    if (double k = 0; envNumber(k_name, k)) {
      if (k < 1 || k > 1e6 || k != std::floor(k)) {
        throw ConfigError(k_name + ": must be a whole number >= 1");
      }
      config.top_k.k = static_cast<uint32_t>(k);
    }
    const std::string ramp_name = k_name + "_RAMP_WINDOW";  // Go duration text, as in AIBrix
    if (const char* v = std::getenv(ramp_name.c_str()); v != nullptr && *v != '\0') {
      if (!parseDurationText(v, config.slow_start.ramp)) {
        throw ConfigError(ramp_name + ": not a duration like 30s, 1m30s or 0: " + v);
      }
    }
  }
  // Switchyard's own knobs: no AIBrix counterpart.
  if (const char* v = std::getenv("SWITCHYARD_LOAD_BALANCE_SCORE"); v != nullptr && *v != '\0') {
    config.load_balance.score = fleet::parseLoadBalanceScore(v, "SWITCHYARD_LOAD_BALANCE_SCORE");
  }
  if (envNumber("SWITCHYARD_LOAD_BALANCE_FASTEST_WITHIN", config.load_balance.fastest_within) &&
      config.load_balance.fastest_within > 1) {
    throw ConfigError("SWITCHYARD_LOAD_BALANCE_FASTEST_WITHIN: must be between 0 and 1");
  }
  envNumber("SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K_TOLERANCE_FRACTION",
            config.top_k.tolerance_fraction);
  if (double k = 0; envNumber("SWITCHYARD_ROUTING_CANDIDATE_SAMPLE", k)) {
    config.candidate_sample = fleet::candidateSampleValue(k, "SWITCHYARD_ROUTING_CANDIDATE_SAMPLE");
  }
  if (envNumber("SWITCHYARD_ROUTING_SLOW_START_AGGRESSION", config.slow_start.aggression) &&
      config.slow_start.aggression < 0.01) {
    throw ConfigError("SWITCHYARD_ROUTING_SLOW_START_AGGRESSION: must be at least 0.01");
  }
  if (config.load_balance.kv_critical_free > 1) {
    throw ConfigError("kv_critical_free: must be between 0 and 1");
  }
}

GatewayConfig parseNode(const YAML::Node& root) {
  GatewayConfig config;
  if (!root || root.IsNull()) throw ConfigError("empty configuration");
  if (!root.IsMap()) throw ConfigError("top level must be a mapping");
  static const std::set<std::string> kKnown = {
      "listen",  "admin_listen", "workers", "routing", "telemetry", "limits",  "timeouts",
      "models",  "reload_poll_interval_ms", "health",  "retry",     "tracing", "logging",
      "decisions", "shared_state", "session_affinity", "async_jobs", "readiness", "admission",
      "load_monitor", "discovery", "busy_poll_us"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    if (!kKnown.count(key) && !isSecurityKey(key)) throw ConfigError(key + ": unknown key");
  }
  parseSecurity(root, config.security);
  if (root["listen"]) config.listen = scalar<std::string>(root["listen"], "listen");
  if (root["admin_listen"]) {
    config.admin_listen = scalar<std::string>(root["admin_listen"], "admin_listen");
  }
  if (root["workers"]) config.workers = scalar<int>(root["workers"], "workers");
  if (root["busy_poll_us"]) {
    config.busy_poll_us = scalar<int>(root["busy_poll_us"], "busy_poll_us");
  }
  if (config.workers < 0 || config.workers > kMaxWorkers) {
    throw ConfigError("workers: must be between 0 and " + std::to_string(kMaxWorkers));
  }
  if (const YAML::Node routing = root["routing"]) {
    if (!routing.IsMap()) throw ConfigError("routing: must be a mapping");
    for (auto it = routing.begin(); it != routing.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (key == "default_strategy") {
        config.default_strategy = scalar<std::string>(it->second, "routing.default_strategy");
      } else if (key == "auto_blend_load_balance_weight") {
        config.auto_blend_load_balance_weight =
            number(it->second, "routing.auto_blend_load_balance_weight", 0, 1e6);
      } else if (key == "load_balance") {
        fleet::parseLoadBalance(it->second, "routing.load_balance", config.load_balance);
      } else if (key == "prefix_cache") {
        fleet::kv_index::parsePrefixCache(it->second, "routing.prefix_cache",
                                          config.prefix_cache);
      } else if (key == "least_request_top_k") {
        fleet::parseTopK(it->second, "routing.least_request_top_k", config.top_k);
      } else if (key == "slow_start") {
        fleet::parseSlowStart(it->second, "routing.slow_start", config.slow_start);
      } else if (key == "candidate_sample") {
        config.candidate_sample =
            fleet::parseCandidateSample(it->second, "routing.candidate_sample");
      } else if (key == "capacity") {
        const YAML::Node cap = it->second;
        if (!cap.IsMap()) throw ConfigError("routing.capacity: must be a mapping");
        for (auto c = cap.begin(); c != cap.end(); ++c) {
          const std::string ckey = c->first.as<std::string>();
          const std::string full = "routing.capacity." + ckey;
          if (ckey == "refresh_ms") {
            config.capacity.refresh = millis(c->second, full);
          } else if (ckey == "window_ms") {
            config.capacity.window = millis(c->second, full);
          } else if (ckey == "time_constant_ms") {
            config.capacity.time_constant = millis(c->second, full);
          } else {
            throw ConfigError(full + ": unknown key");
          }
        }
      } else {
        throw ConfigError("routing." + key + ": unknown key");
      }
    }
  }
  applyLoadBalanceEnvironment(config);
  if (const YAML::Node telemetry = root["telemetry"]) {
    parseTelemetry(telemetry, config.scrape_interval, config.scrape_policy);
  }
  if (root["reload_poll_interval_ms"]) {
    config.reload_poll_interval =
        millis(root["reload_poll_interval_ms"], "reload_poll_interval_ms");
  }
  if (const YAML::Node limits = root["limits"]) {
    if (limits["max_body_bytes"]) {
      const int64_t bytes = scalar<int64_t>(limits["max_body_bytes"], "limits.max_body_bytes");
      if (bytes <= 0) throw ConfigError("limits.max_body_bytes: must be positive");
      config.max_body_bytes = static_cast<size_t>(bytes);
    }
    if (limits["upstream_idle_per_replica"]) {
      const std::string key = "limits.upstream_idle_per_replica";
      const auto idle = scalar<int64_t>(limits["upstream_idle_per_replica"], key);
      if (idle < 1 || idle > 1'000'000) throw ConfigError(key + ": must be 1..1000000");
      config.upstream_idle_per_replica = static_cast<size_t>(idle);
    }
  }
  if (const YAML::Node timeouts = root["timeouts"]) parseTimeouts(timeouts, config.timeouts);
  if (const YAML::Node health = root["health"]) {
    health::parseHealthSettings(health, "health", config.health);
  }
  if (const YAML::Node retry = root["retry"]) {
    if (!retry.IsMap()) throw ConfigError("retry: must be a mapping");
    for (auto it = retry.begin(); it != retry.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      const std::string full = "retry." + key;
      if (key == "max_attempts") {
        config.retry.max_attempts = static_cast<int>(number(it->second, full, 1, 10));
      } else if (key == "budget_ratio") {
        config.retry.budget_ratio = number(it->second, full, 0, 10);
      } else if (key == "budget_min_per_second") {
        config.retry.budget_min_per_second = number(it->second, full, 0, 1e6);
      } else {
        throw ConfigError(full + ": unknown key");
      }
    }
  }
  parseObserve(root, config.observe);
  if (const YAML::Node shared = root["shared_state"]) parseSharedState(shared, config.shared_state);
  if (const YAML::Node sessions = root["session_affinity"]) {
    parseSessionAffinity(sessions, config.session_affinity);
  }
  if (const YAML::Node jobs = root["async_jobs"]) parseAsyncJobs(jobs, config.async_jobs);
  if (const YAML::Node readiness = root["readiness"]) {
    if (!readiness.IsMap()) throw ConfigError("readiness: must be a mapping");
    for (auto it = readiness.begin(); it != readiness.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      const std::string full = "readiness." + key;
      if (key == "shared_state_timeout_ms") {
        config.readiness.shared_state_timeout = millis(it->second, full);
      } else if (key == "telemetry_timeout_ms") {
        config.readiness.telemetry_timeout = millis(it->second, full);
      } else if (key == "discovery_timeout_ms") {
        config.readiness.discovery_timeout = millis(it->second, full);
      } else {
        throw ConfigError(full + ": unknown key");
      }
    }
  }
  if (const YAML::Node discovery = root["discovery"]) parseDiscovery(discovery, config.kubernetes);
  if (const YAML::Node admission = root["admission"]) {
    admission::parseAdmission(admission, "admission", config.admission);
  }
  if (const YAML::Node load = root["load_monitor"]) parseLoadMonitor(load, config.load_monitor);
  const YAML::Node models = root["models"];
  if (models && !models.IsSequence()) throw ConfigError("models: must be a list");
  std::set<std::string> names;
  for (size_t i = 0; models && i < models.size(); ++i) {
    const fleet::UpstreamTimeouts default_timeouts{config.timeouts.upstream_connect,
                                                   config.timeouts.upstream_first_byte,
                                                   config.timeouts.upstream_idle};
    fleet::ModelSpec model = parseModel(models[i], i, config, default_timeouts);
    if (!names.insert(model.name).second) throw ConfigError("duplicate model " + model.name);
    config.models.push_back(std::move(model));
  }
  return config;
}

void validate(const GatewayConfig& config) {
  requireAddress(config.listen, "listen");
  requireAddress(config.admin_listen, "admin_listen");
  if (config.default_strategy.empty()) throw ConfigError("routing.default_strategy: empty");
  requireStrategy(config.default_strategy, "routing.default_strategy");
  if (config.busy_poll_us < 0 || config.busy_poll_us > kMaxBusyPollUs) {
    throw ConfigError("busy_poll_us: must be between 0 (off) and " +
                      std::to_string(kMaxBusyPollUs) + " microseconds");
  }
  validateSecurity(config);
}

}  // namespace

GatewayConfig parseConfig(const std::string& yaml_text) {
  GatewayConfig config;
  try {
    config = parseNode(YAML::Load(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(std::string("invalid YAML: ") + e.what());
  }
  validate(config);
  return config;
}

GatewayConfig loadConfigFile(const std::string& path) {
  std::string error;
  const std::optional<std::string> text = readTextFile(path, &error);
  if (!text) throw ConfigError(error);
  GatewayConfig config = parseConfig(*text);
  applyEnvironment(config);
  validate(config);
  return config;
}

void applyEnvironment(GatewayConfig& config) {
  if (const char* v = std::getenv("SWITCHYARD_LISTEN")) config.listen = v;
  if (const char* v = std::getenv("SWITCHYARD_ADMIN_LISTEN")) config.admin_listen = v;
  if (const char* v = std::getenv("SWITCHYARD_DEFAULT_STRATEGY")) config.default_strategy = v;
  if (const char* v = std::getenv("SWITCHYARD_WORKERS")) config.workers = std::atoi(v);
  if (const char* v = std::getenv("SWITCHYARD_BUSY_POLL_US")) {
    char* end = nullptr;
    const long us = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || us < 0 || us > kMaxBusyPollUs) {
      throw ConfigError("SWITCHYARD_BUSY_POLL_US: must be a whole number between 0 and " +
                        std::to_string(kMaxBusyPollUs));
    }
    config.busy_poll_us = static_cast<int>(us);
  }
  if (const char* v = std::getenv("SWITCHYARD_OTLP_ENDPOINT")) {
    config.observe.tracing.otlp_endpoint = v;
  }
  if (const char* v = std::getenv("SWITCHYARD_TRACE_SAMPLING_RATIO")) {
    const double ratio = std::strtod(v, nullptr);
    if (!(ratio >= 0 && ratio <= 1)) {
      throw ConfigError("SWITCHYARD_TRACE_SAMPLING_RATIO: must be between 0 and 1");
    }
    config.observe.tracing.sampling_ratio = ratio;
  }
  applySharedStateEnvironment(config.shared_state);
  applySecurityEnvironment(config.security);
}

}  // namespace switchyard::gateway
