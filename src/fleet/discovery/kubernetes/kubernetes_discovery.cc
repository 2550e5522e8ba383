#include "fleet/discovery/kubernetes/kubernetes_discovery.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <stdexcept>


namespace switchyard::fleet::kubernetes {

namespace asio = boost::asio;

namespace {

TimeNs now() { return SteadyClock::instance().now(); }

std::string resourcePath(const std::string& ns, ResourceKind kind) {
  const std::string prefix = kind == ResourceKind::kPod ? "/api/v1" : "/apis/apps/v1";
  const std::string plural = kind == ResourceKind::kPod ? "pods" : "deployments";
  return ns.empty() ? prefix + "/" + plural : prefix + "/namespaces/" + urlEncode(ns) + "/" + plural;
}

}  // namespace

KubernetesDiscovery::KubernetesDiscovery(asio::io_context& io, KubernetesSettings settings,
                                         std::function<void()> on_change)
    : io_(io),
      settings_(std::move(settings)),
      on_change_(std::move(on_change)),
      alive_(std::make_shared<bool>(true)) {
  Credentials credentials;
  const CredentialsResult loaded =
      settings_.kubeconfig.empty()
          ? inClusterCredentials(settings_.in_cluster, credentials)
          : loadKubeconfig(settings_.kubeconfig, settings_.context, credentials);
  if (!loaded.ok()) {
    throw std::runtime_error("discovery.kubernetes: " + loaded.message + " (" +
                             std::string(credentialsErrorName(loaded.error)) + ")");
  }
  const std::string own_namespace =
      credentials.namespace_.empty() ? "default" : credentials.namespace_;
  client_ = std::make_unique<ApiClient>(io_, std::move(credentials));
  if (settings_.namespaces.empty()) {
    namespaces_.push_back(own_namespace);
  } else {
    for (const std::string& ns : settings_.namespaces) namespaces_.push_back(ns == "*" ? "" : ns);
  }
  uint64_t seed = static_cast<uint64_t>(now()) | 1;
  for (const std::string& ns : namespaces_) {
    for (const ResourceKind kind : {ResourceKind::kPod, ResourceKind::kDeployment}) {
      if (kind == ResourceKind::kDeployment && !settings_.watch_deployments) continue;
      ReflectorOptions options;
      options.kind = kind;
      options.path = resourcePath(ns, kind);
      options.label_selector = settings_.label_selector;
      options.request_timeout = settings_.request_timeout;
      options.watch_timeout = settings_.watch_timeout;
      options.resync = settings_.resync;
      options.backoff_min = settings_.backoff_min;
      options.backoff_max = settings_.backoff_max;
      auto reflector = std::make_unique<Reflector>(io_, *client_, std::move(options),
                                                   [this] { changed(); }, seed += 0x9E3779B9);
      (kind == ResourceKind::kPod ? pod_reflectors_ : deployment_reflectors_)
          .push_back(std::move(reflector));
    }
  }
}

KubernetesDiscovery::~KubernetesDiscovery() {
  *alive_ = false;
  stop();
}

void KubernetesDiscovery::start() {
  started_at_ = now();
  for (auto& r : pod_reflectors_) r->start();
  for (auto& r : deployment_reflectors_) r->start();
  spdlog::info("kubernetes: watching pods{} in {} (selector '{}') at {}:{}",
               settings_.watch_deployments ? " and deployments" : "",
               namespaces_.size() == 1 && namespaces_[0].empty()
                   ? std::string("every namespace")
                   : fmt::format("namespace(s) {}", fmt::join(namespaces_, ", ")),
               settings_.label_selector, client_->credentials().host,
               client_->credentials().port);
}

void KubernetesDiscovery::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& r : pod_reflectors_) r->stop();
  for (auto& r : deployment_reflectors_) r->stop();
  if (client_) client_->cancel();
}

void KubernetesDiscovery::changed() {
  if (change_posted_ || stopped_) return;
  change_posted_ = true;
  asio::post(io_, [this, alive = alive_] {
    if (!*alive) return;
    change_posted_ = false;
    if (!stopped_ && on_change_) on_change_();
  });
}

bool KubernetesDiscovery::synced() const {
  for (const auto& r : pod_reflectors_) {
    if (!r->synced()) return false;
  }
  return true;
}

bool KubernetesDiscovery::stale(TimeNs at) const {
  auto broken = [&](const Reflector& r) {
    if (!r.synced()) return at - started_at_ > settings_.stale_after;
    return !r.healthy() && at - r.unhealthySince() > settings_.stale_after;
  };
  for (const auto& r : pod_reflectors_) {
    if (broken(*r)) return true;
  }
  for (const auto& r : deployment_reflectors_) {
    if (broken(*r)) return true;
  }
  return false;
}

std::vector<const PodInfo*> KubernetesDiscovery::pods() const {
  std::vector<const PodInfo*> out;
  for (const auto& r : pod_reflectors_) {
    for (const auto& [key, pod] : r->store().pods) out.push_back(&pod);
  }
  return out;
}

std::vector<const DeploymentInfo*> KubernetesDiscovery::deployments() const {
  std::vector<const DeploymentInfo*> out;
  for (const auto& r : deployment_reflectors_) {
    for (const auto& [key, d] : r->store().deployments) out.push_back(&d);
  }
  return out;
}

const PodInfo* KubernetesDiscovery::findPod(std::string_view name) const {
  const PodInfo* found = nullptr;
  const bool qualified = name.find('/') != std::string_view::npos;
  for (const auto& r : pod_reflectors_) {
    for (const auto& [key, pod] : r->store().pods) {
      if (qualified ? key == name : pod.name == name) {
        if (found != nullptr) return nullptr;  // the same name in two namespaces
        found = &pod;
      }
    }
  }
  return found;
}

std::vector<DiscoveredReplica> KubernetesDiscovery::replicas() {
  if (!synced()) return {};
  const std::vector<const PodInfo*> all = pods();
  // Forget Pods that are gone, so a name reused later starts afresh.
  std::set<std::string> present;
  for (const PodInfo* pod : all) present.insert(pod->uid.empty() ? pod->key() : pod->uid);
  std::erase_if(admitted_, [&](const std::string& uid) { return !present.count(uid); });
  if (!settings_.mapping.node_gpu_label.empty() && !nodes_forbidden_) lookUpNodes(all);
  MappingContext context;
  context.node_gpus = &node_gpus_;
  context.admitted = &admitted_;
  context.initial = !mapped_once_;
  mapped_once_ = true;
  std::vector<std::string> problems;
  std::vector<DiscoveredReplica> out = mapPods(all, settings_.mapping, context, &problems);
  for (const std::string& p : problems) {
    if (std::find(problems_.begin(), problems_.end(), p) == problems_.end()) {
      spdlog::warn("kubernetes: pod {} is kept out of the fleet", p);
    }
  }
  problems_ = std::move(problems);
  return out;
}

void KubernetesDiscovery::lookUpNodes(const std::vector<const PodInfo*>& pods) {
  for (const PodInfo* pod : pods) {
    if (pod->node_name.empty() || node_lookups_.count(pod->node_name)) continue;
    node_lookups_.insert(pod->node_name);
    asio::co_spawn(
        io_,
        [this, alive = alive_, node = pod->node_name]() -> asio::awaitable<void> {
          const ApiResponse response = co_await client_->request(
              ApiMethod::kGet, "/api/v1/nodes/" + urlEncode(node), {}, {},
              settings_.request_timeout);
          if (!*alive) co_return;
          if (response.status == 403) {
            if (!nodes_forbidden_) {
              spdlog::warn("kubernetes: reading nodes is not permitted; GPU types come from Pod "
                           "labels only (grant get on nodes to use {})",
                           settings_.mapping.node_gpu_label);
            }
            nodes_forbidden_ = true;
            co_return;
          }
          std::map<std::string, std::string> labels;
          if (response.status != 200 || !parseNodeLabels(response.body, labels).ok()) {
            node_lookups_.erase(node);  // try again on the next change
            co_return;
          }
          const auto it = labels.find(settings_.mapping.node_gpu_label);
          node_gpus_[node] = it == labels.end() ? std::string() : it->second;
          if (it != labels.end()) changed();
        },
        asio::detached);
  }
}

std::vector<const Reflector*> KubernetesDiscovery::reflectors() const {
  std::vector<const Reflector*> out;
  for (const auto& r : pod_reflectors_) out.push_back(r.get());
  for (const auto& r : deployment_reflectors_) out.push_back(r.get());
  return out;
}

}  // namespace switchyard::fleet::kubernetes
