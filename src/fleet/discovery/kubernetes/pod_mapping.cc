#include "fleet/discovery/kubernetes/pod_mapping.h"

#include <algorithm>
#include <charconv>

namespace switchyard::fleet::kubernetes {
namespace {

int parsePort(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > 65535) {
    return -1;
  }
  return value;
}

const std::string* firstLabel(const PodInfo& pod, const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    const auto it = pod.labels.find(key);
    if (it != pod.labels.end() && !it->second.empty()) return &it->second;
  }
  return nullptr;
}

}  // namespace

int podPort(const PodInfo& pod, const MappingSettings& settings, std::string* why) {
  if (!settings.port_label.empty()) {
    const std::string* value = nullptr;
    if (auto it = pod.labels.find(settings.port_label); it != pod.labels.end()) {
      value = &it->second;
    } else if (auto a = pod.annotations.find(settings.port_label); a != pod.annotations.end()) {
      value = &a->second;
    }
    if (value != nullptr) {
      const int port = parsePort(*value);
      if (port < 0 && why != nullptr) {
        *why = settings.port_label + "='" + *value + "' is not a port";
      }
      return port;
    }
  }
  if (!settings.port_name.empty()) {
    for (const ContainerPort& port : pod.ports) {
      if (port.name == settings.port_name) return port.port;
    }
  }
  return settings.default_port;
}

std::vector<DiscoveredReplica> mapPods(const std::vector<const PodInfo*>& pods,
                                       const MappingSettings& settings,
                                       const MappingContext& context,
                                       std::vector<std::string>* problems) {
  std::vector<DiscoveredReplica> out;
  for (const PodInfo* pod : pods) {
    const auto model = pod->labels.find(settings.model_label);
    if (model == pod->labels.end() || model->second.empty()) continue;
    if (pod->phase == "Succeeded" || pod->phase == "Failed") continue;  // gone
    if (pod->pod_ip.empty()) continue;
    const bool ready = pod->ready;
    bool admitted = ready;
    if (context.admitted != nullptr) {
      if (ready) {
        context.admitted->insert(pod->uid.empty() ? pod->key() : pod->uid);
      } else {
        admitted = context.admitted->count(pod->uid.empty() ? pod->key() : pod->uid) > 0;
      }
    }
    if (!admitted) continue;  // never Ready yet: still starting
    std::string why;
    const int port = podPort(*pod, settings, &why);
    if (port < 0) {
      if (problems != nullptr) problems->push_back(pod->key() + ": " + why);
      continue;
    }
    DiscoveredReplica replica;
    replica.model = model->second;
    const bool v6 = pod->pod_ip.find(':') != std::string::npos;
    replica.spec.address =
        (v6 ? "[" + pod->pod_ip + "]" : pod->pod_ip) + ":" + std::to_string(port);
    replica.spec.labels = pod->labels;
    if (const std::string* gpu = firstLabel(*pod, settings.gpu_labels)) {
      replica.spec.labels["gpu"] = *gpu;
    } else if (context.node_gpus != nullptr && !pod->node_name.empty()) {
      if (auto it = context.node_gpus->find(pod->node_name);
          it != context.node_gpus->end() && !it->second.empty()) {
        replica.spec.labels["gpu"] = it->second;
      }
    }
    if (const std::string* engine = firstLabel(*pod, settings.engine_labels)) {
      replica.spec.labels["engine"] = *engine;
    }
    uint8_t lifecycle = 0;
    if (!ready) lifecycle |= kNotReady;
    if (pod->deleting) lifecycle |= kTerminating;
    if (auto it = pod->labels.find(settings.drain_label);
        it != pod->labels.end() && it->second == "true") {
      lifecycle |= kDrainLabel;
    }
    replica.spec.lifecycle = lifecycle;
    replica.spec.established = context.initial && ready;
    replica.spec.pod = PodIdentity{pod->name, pod->namespace_, pod->deployment()};
    out.push_back(std::move(replica));
  }
  std::sort(out.begin(), out.end(), [](const DiscoveredReplica& a, const DiscoveredReplica& b) {
    return a.model != b.model ? a.model < b.model : a.spec.address < b.spec.address;
  });
  // Two Pods on one address (a host-network clash, or a stale Pod beside its successor): the
  // one that is not draining stays.
  std::vector<DiscoveredReplica> unique;
  for (DiscoveredReplica& r : out) {
    if (!unique.empty() && unique.back().model == r.model &&
        unique.back().spec.address == r.spec.address) {
      if (unique.back().spec.lifecycle != 0 && r.spec.lifecycle == 0) unique.back() = std::move(r);
      continue;
    }
    unique.push_back(std::move(r));
  }
  return unique;
}

std::vector<ModelSpec> composeFleet(const std::vector<ModelSpec>& static_models,
                                    const std::vector<DiscoveredReplica>& discovered,
                                    const ModelSpec& defaults) {
  std::vector<ModelSpec> models = static_models;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < models.size(); ++i) index.emplace(models[i].name, i);
  std::map<std::string, std::set<std::string>> static_addresses;
  for (const ModelSpec& m : static_models) {
    for (const ReplicaSpec& r : m.replicas) static_addresses[m.name].insert(r.address);
  }
  for (const DiscoveredReplica& replica : discovered) {
    auto it = index.find(replica.model);
    if (it == index.end()) {
      ModelSpec model = defaults;
      model.name = replica.model;
      model.replicas.clear();
      it = index.emplace(replica.model, models.size()).first;
      models.push_back(std::move(model));
    }
    if (static_addresses[replica.model].count(replica.spec.address)) continue;
    models[it->second].replicas.push_back(replica.spec);
  }
  return models;
}

}  // namespace switchyard::fleet::kubernetes
