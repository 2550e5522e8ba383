// Settings of Kubernetes discovery and traffic-aware scale-down, as read from the gateway's
// `discovery.kubernetes:` section (gateway/discovery_config.h; docs/kubernetes.md lists them).
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "fleet/discovery/kubernetes/credentials.h"

namespace switchyard::fleet::kubernetes {

// How a Pod becomes a replica (pod_mapping.h).
struct MappingSettings {
  std::string model_label = "model.aibrix.ai/name";
  std::string min_replicas_label = "model.aibrix.ai/min_replicas";
  std::string drain_label = "aibrix.ai/draining";  // "true": drained
  // The port: this label or annotation, else the container port named `port_name`, else
  // `default_port`.
  std::string port_label = "model.aibrix.ai/port";
  std::string port_name = "http";
  int default_port = 8000;
  // The GPU type and engine flavour: the first of these Pod labels that is set; the GPU type
  // then falls back to the node's `node_gpu_label` (when set and readable), else "unknown".
  std::vector<std::string> gpu_labels = {"gpu", "model.aibrix.ai/gpu",
                                         "nvidia.com/gpu.product"};
  std::vector<std::string> engine_labels = {"engine", "model.aibrix.ai/engine"};
  std::string node_gpu_label;  // e.g. nvidia.com/gpu.product; "" = do not read Nodes
};

// Traffic-aware scale-down (scale_down.h).
struct ScaleDownSettings {
  bool enabled = true;
  // The deletion cost given to the chosen victims (lower goes first; unmarked Pods count 0).
  int victim_cost = -100;
  int victims_per_deployment = 1;   // marked ahead of a scale-down of one replica
  // Kubernetes warns against updating the annotation often: patches are rate-limited across
  // the whole fleet, and a standing choice changes only when another Pod has been clearly
  // cheaper (by `switch_margin` units of cost) for `hold`.
  double max_patches_per_minute = 12;
  double switch_margin = 2;
  TimeNs hold = 30 * kNsPerSec;
  TimeNs interval = 2 * kNsPerSec;   // how often the choice is reviewed
  TimeNs lease = 10 * kNsPerSec;     // the deciding gateway's lease in shared state
  // Cost units: one request in flight counts 1; per request that followed a session's pin in
  // the last window, and per async resource created on the replica in the window:
  double session_weight = 0.5;
  double job_weight = 2;
  TimeNs window = 300 * kNsPerSec;
  // The optimizer service (`switchyard optimize`): when set, its recommendation per Deployment
  // (GET <url>/metrics/<namespace>/<deployment>) below the Ready Pods drains the chosen victims
  // ahead of the autoscaler; "" = only the standing choice.
  std::string optimizer_url;
  double optimizer_replicas_unit = 100;  // the value is in hundredths of a replica by default
  TimeNs predrain_timeout = 600 * kNsPerSec;  // a pre-drain not followed by a scale-down ends
};

struct KubernetesSettings {
  bool enabled = false;
  // Namespaces to watch; empty = the gateway's own (service account or kubeconfig context,
  // else "default"); ["*"] = every namespace (needs a ClusterRole).
  std::vector<std::string> namespaces;
  std::string label_selector = "model.aibrix.ai/name";
  std::string kubeconfig;  // "" = in-cluster service account
  std::string context;     // kubeconfig context; "" = current-context
  InClusterPaths in_cluster;  // api_server, token_file, ca_file, namespace_file overrides
  bool watch_deployments = true;  // replica counts and min_replicas, for scale-down
  TimeNs request_timeout = 10 * kNsPerSec;
  TimeNs watch_timeout = 300 * kNsPerSec;
  TimeNs resync = 600 * kNsPerSec;
  TimeNs backoff_min = 200 * kNsPerMs;
  TimeNs backoff_max = 30 * kNsPerSec;
  // The fleet is reported stale once a watch has been broken this long.
  TimeNs stale_after = 10 * kNsPerSec;
  MappingSettings mapping;
  ScaleDownSettings scale_down;
};

}  // namespace switchyard::fleet::kubernetes
