#include "gateway/discovery_config.h"

#include <yaml-cpp/yaml.h>

#include "gateway/config_values.h"

namespace switchyard::gateway {
namespace {

namespace k8s = fleet::kubernetes;

std::vector<std::string> stringList(const YAML::Node& node, const std::string& key) {
  if (!node.IsSequence()) throw ConfigError(key + ": must be a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    out.push_back(scalar<std::string>(node[i], key + "[" + std::to_string(i) + "]"));
    if (out.back().empty()) throw ConfigError(key + "[" + std::to_string(i) + "]: empty");
  }
  return out;
}

std::string nonEmpty(const YAML::Node& node, const std::string& key) {
  std::string value = scalar<std::string>(node, key);
  if (value.empty()) throw ConfigError(key + ": must not be empty");
  return value;
}

void parseScaleDown(const YAML::Node& node, const std::string& where,
                    k8s::ScaleDownSettings& s) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    const YAML::Node v = it->second;
    if (key == "enabled") {
      s.enabled = scalar<bool>(v, full);
    } else if (key == "victim_cost") {
      s.victim_cost = static_cast<int>(number(v, full, -2147483647.0, -1));
    } else if (key == "victims_per_deployment") {
      s.victims_per_deployment = static_cast<int>(number(v, full, 1, 100));
    } else if (key == "max_patches_per_minute") {
      s.max_patches_per_minute = number(v, full, 0.1, 600);
    } else if (key == "switch_margin") {
      s.switch_margin = number(v, full, 0, 1e6);
    } else if (key == "hold_ms") {
      s.hold = static_cast<TimeNs>(number(v, full, 0, 86'400'000) * kNsPerMs);  // 0: no hold
    } else if (key == "interval_ms") {
      s.interval = millis(v, full);
    } else if (key == "lease_ms") {
      s.lease = millis(v, full);
    } else if (key == "session_weight") {
      s.session_weight = number(v, full, 0, 1e6);
    } else if (key == "job_weight") {
      s.job_weight = number(v, full, 0, 1e6);
    } else if (key == "window_ms") {
      s.window = millis(v, full);
    } else if (key == "optimizer_url") {
      s.optimizer_url = scalar<std::string>(v, full);
      std::string host;
      uint16_t port = 0;
      if (!fleet::splitHttpUrl(s.optimizer_url, host, port)) {
        throw ConfigError(full + ": must look like http://HOST:PORT");
      }
    } else if (key == "optimizer_replicas_unit") {
      s.optimizer_replicas_unit = number(v, full, 1e-6, 1e6);
    } else if (key == "predrain_timeout_ms") {
      s.predrain_timeout = millis(v, full);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (s.lease < s.interval) throw ConfigError(where + ".lease_ms: must be at least interval_ms");
}

void parseKubernetes(const YAML::Node& node, k8s::KubernetesSettings& s) {
  const std::string where = "discovery.kubernetes";
  if (node.IsNull()) return;  // `kubernetes:` alone: every default
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
  k8s::MappingSettings& m = s.mapping;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    const YAML::Node v = it->second;
    if (key == "enabled") {
      s.enabled = scalar<bool>(v, full);
    } else if (key == "namespaces") {
      s.namespaces = stringList(v, full);
    } else if (key == "label_selector") {
      s.label_selector = scalar<std::string>(v, full);
    } else if (key == "kubeconfig") {
      s.kubeconfig = nonEmpty(v, full);
    } else if (key == "context") {
      s.context = nonEmpty(v, full);
    } else if (key == "api_server") {
      s.in_cluster.server = nonEmpty(v, full);
      std::string host;
      uint16_t port = 0;
      if (const auto r = k8s::parseServerUrl(s.in_cluster.server, host, port); !r.ok()) {
        throw ConfigError(full + ": " + r.message);
      }
    } else if (key == "token_file") {
      s.in_cluster.token_file = nonEmpty(v, full);
    } else if (key == "ca_file") {
      s.in_cluster.ca_file = nonEmpty(v, full);
    } else if (key == "namespace_file") {
      s.in_cluster.namespace_file = nonEmpty(v, full);
    } else if (key == "watch_deployments") {
      s.watch_deployments = scalar<bool>(v, full);
    } else if (key == "request_timeout_ms") {
      s.request_timeout = millis(v, full);
    } else if (key == "watch_timeout_ms") {
      s.watch_timeout = millis(v, full);
      if (s.watch_timeout < kNsPerSec) throw ConfigError(full + ": at least 1000");
    } else if (key == "resync_ms") {
      s.resync = millis(v, full);
    } else if (key == "backoff_min_ms") {
      s.backoff_min = millis(v, full);
    } else if (key == "backoff_max_ms") {
      s.backoff_max = millis(v, full);
    } else if (key == "stale_after_ms") {
      s.stale_after = millis(v, full);
    } else if (key == "model_label") {
      m.model_label = nonEmpty(v, full);
    } else if (key == "min_replicas_label") {
      m.min_replicas_label = nonEmpty(v, full);
    } else if (key == "drain_label") {
      m.drain_label = nonEmpty(v, full);
    } else if (key == "port_label") {
      m.port_label = scalar<std::string>(v, full);
    } else if (key == "port_name") {
      m.port_name = scalar<std::string>(v, full);
    } else if (key == "default_port") {
      m.default_port = static_cast<int>(number(v, full, 1, 65535));
    } else if (key == "gpu_labels") {
      m.gpu_labels = stringList(v, full);
    } else if (key == "engine_labels") {
      m.engine_labels = stringList(v, full);
    } else if (key == "node_gpu_label") {
      m.node_gpu_label = scalar<std::string>(v, full);
    } else if (key == "scale_down") {
      parseScaleDown(v, full, s.scale_down);
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (s.backoff_max < s.backoff_min) {
    throw ConfigError(where + ".backoff_max_ms: must be at least backoff_min_ms");
  }
  if (!s.kubeconfig.empty() && !s.in_cluster.server.empty()) {
    throw ConfigError(where + ": kubeconfig and api_server exclude each other");
  }
}

}  // namespace

void parseDiscovery(const YAML::Node& node, k8s::KubernetesSettings& settings) {
  if (!node.IsMap()) throw ConfigError("discovery: must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    if (key == "kubernetes") {
      settings.enabled = true;
      parseKubernetes(it->second, settings);
    } else {
      throw ConfigError("discovery." + key + ": unknown key (known: kubernetes)");
    }
  }
}

}  // namespace switchyard::gateway
