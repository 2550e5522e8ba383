// Fuzz target: every parser of what the Kubernetes API server sends (a Pod, a Deployment, a list
// page, a watch event line, a Node, a Status) on arbitrary bytes. Each must answer a value or a
// defined error; a value must keep its promises (ports in range, errors carry a message).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/discovery/kubernetes/kube_objects.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void checkStatus(const switchyard::fleet::kubernetes::ParseStatus& status) {
  check(status.ok() == status.message.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::fleet::kubernetes;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  PodInfo pod;
  const ParseStatus pod_status = parsePod(text, pod);
  checkStatus(pod_status);
  if (pod_status.ok()) {
    check(!pod.name.empty());
    for (const ContainerPort& p : pod.ports) check(p.port >= 1 && p.port <= 65535);
    (void)pod.deployment();
  }
  DeploymentInfo deployment;
  const ParseStatus d_status = parseDeployment(text, deployment);
  checkStatus(d_status);
  if (d_status.ok()) check(deployment.replicas >= 0);
  for (const ResourceKind kind : {ResourceKind::kPod, ResourceKind::kDeployment}) {
    ListPage page;
    const ParseStatus list_status = parseList(text, kind, page);
    checkStatus(list_status);
    if (list_status.ok()) check(!page.resource_version.empty());
    WatchEvent event;
    const ParseStatus e_status = parseWatchEvent(text, kind, event);
    checkStatus(e_status);
    if (e_status.ok()) {
      const bool object_event = event.type == WatchEventType::kAdded ||
                                event.type == WatchEventType::kModified ||
                                event.type == WatchEventType::kDeleted;
      check(!object_event || event.pod.has_value() || event.deployment.has_value());
      check(event.type != WatchEventType::kBookmark || !event.resource_version.empty());
    }
  }
  std::map<std::string, std::string> labels;
  checkStatus(parseNodeLabels(text, labels));
  int code = 0;
  std::string message;
  if (parseStatus(text, code, message)) check(code >= 0 && code <= 999);
  return 0;
}
