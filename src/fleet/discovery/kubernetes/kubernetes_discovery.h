// KubernetesDiscovery: the fleet as the Kubernetes API server sees it. One Pod reflector (and,
// for scale-down, one Deployment reflector) per watched namespace, or one of each for the whole
// cluster; optional Node reads for a GPU label. Turns the stores into discovered replicas
// (pod_mapping.h) for the control plane to merge with the static fleet.
//
// Never empties the fleet on failure: the stores keep the last known objects while the API
// server is slow, down or refusing; the fleet is then reported stale (stale(), /debug/fleet,
// switchyard_discovery_stale) once a watch has been broken for `stale_after`.
//
// Runs on the control plane's io_context; `on_change` is posted there (coalesced: a burst of
// events costs one fleet rebuild). Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fleet/discovery/kubernetes/api_client.h"
#include "fleet/discovery/kubernetes/pod_mapping.h"
#include "fleet/discovery/kubernetes/reflector.h"
#include "fleet/discovery/kubernetes/settings.h"

namespace switchyard::fleet::kubernetes {

class KubernetesDiscovery {
 public:
  // Loads the credentials (kubeconfig or in-cluster); throws std::runtime_error naming what is
  // wrong (start-up only).
  KubernetesDiscovery(boost::asio::io_context& io, KubernetesSettings settings,
                      std::function<void()> on_change);
  ~KubernetesDiscovery();

  void start();
  void stop();

  // The replicas discovered now (the last known ones while the API server is away). Empty
  // until the first list of every namespace completed.
  std::vector<DiscoveredReplica> replicas();
  bool synced() const;
  bool stale(TimeNs now) const;
  // Every Deployment and Pod currently known (all namespaces).
  std::vector<const DeploymentInfo*> deployments() const;
  std::vector<const PodInfo*> pods() const;
  // A Pod by "name" or "namespace/name"; nullptr if unknown (or ambiguous without a namespace).
  const PodInfo* findPod(std::string_view name) const;

  ApiClient& client() { return *client_; }
  const ApiClient& client() const { return *client_; }
  const KubernetesSettings& settings() const { return settings_; }
  const std::vector<std::string>& namespaces() const { return namespaces_; }

  // Every reflector (Pods first), for the views; and the Pods kept out by the last mapping.
  std::vector<const Reflector*> reflectors() const;
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  void changed();
  void lookUpNodes(const std::vector<const PodInfo*>& pods);

  boost::asio::io_context& io_;
  KubernetesSettings settings_;
  std::function<void()> on_change_;
  std::unique_ptr<ApiClient> client_;
  std::vector<std::string> namespaces_;  // "" = every namespace
  std::vector<std::unique_ptr<Reflector>> pod_reflectors_;
  std::vector<std::unique_ptr<Reflector>> deployment_reflectors_;
  std::set<std::string> admitted_;
  std::map<std::string, std::string> node_gpus_;
  std::set<std::string> node_lookups_;  // asked or answered
  bool nodes_forbidden_ = false;
  bool mapped_once_ = false;
  bool change_posted_ = false;
  bool stopped_ = false;
  TimeNs started_at_ = 0;
  std::shared_ptr<bool> alive_;
  std::vector<std::string> problems_;  // Pods kept out, from the last mapping
};

}  // namespace switchyard::fleet::kubernetes
