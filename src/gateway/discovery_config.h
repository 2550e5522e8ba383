// The `discovery:` section: where the fleet comes from besides the static `models:` list.
//
//   discovery:
//     kubernetes:
//       namespaces: [llm]                       # default: the gateway's own namespace
//       label_selector: model.aibrix.ai/name
//       kubeconfig: /path/to/kubeconfig         # default: the in-cluster service account
//       scale_down: { max_patches_per_minute: 12, optimizer_url: http://optimizer:8080 }
//
// Every key is listed in docs/kubernetes.md. Throws ConfigError naming the key on a bad value.
#pragma once

#include "fleet/discovery/kubernetes/settings.h"

namespace YAML {
class Node;
}

namespace switchyard::gateway {

void parseDiscovery(const YAML::Node& node, fleet::kubernetes::KubernetesSettings& settings);

}  // namespace switchyard::gateway
