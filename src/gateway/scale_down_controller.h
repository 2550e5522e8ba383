// ScaleDownController: traffic-aware scale-down. Makes the ReplicaSet controller delete the
// replica that is cheapest to lose, and drains replicas before capacity is removed.
//
// Every `interval`, one gateway (the holder of the "scale-down" lease in shared state, so that
// several gateways agree on one choice) reviews each Deployment of the discovered fleet:
//  - the standing choice: with two or more active Pods, the cheapest victim(s)
//    (fleet/discovery/kubernetes/victim_choice.h) carry the annotation
//    controller.kubernetes.io/pod-deletion-cost = victim_cost, so whenever the Deployment
//    shrinks the ReplicaSet controller deletes them first. Only the few victims are patched
//    (the annotation is removed from a former victim), only when the choice changes (with a
//    margin and a minimum hold), and every patch is rate-limited (max_patches_per_minute);
//    Pods whose annotation someone else set are left alone;
//  - ahead of a shrink: when the optimizer service recommends fewer replicas than the
//    Deployment's active Pods, the victims are also drained (DrainController), so their requests
//    finish while new traffic goes elsewhere; the autoscaler then removes already-empty Pods. A
//    pre-drain that no shrink follows within predrain_timeout, or that the recommendation no
//    longer wants, is undone.
// The choice is published in shared state for the other gateways' views. Deleted Pods drain
// whatever chose them (discovery marks them terminating); `switchyard drain-wait` in the Pod's
// preStop hook holds the engine until its requests are done. Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fleet/discovery/kubernetes/kubernetes_discovery.h"
#include "fleet/discovery/kubernetes/victim_choice.h"
#include "fleet/fleet_registry.h"
#include "gateway/drain_controller.h"
#include "gateway/periodic_cycle.h"
#include "http/control_client.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

inline constexpr std::string_view kDeletionCostAnnotation =
    "controller.kubernetes.io/pod-deletion-cost";

struct ScaleDownStats {
  int64_t reviews = 0;           // reviews run as the deciding gateway
  int64_t patches = 0;           // annotation patches that succeeded
  int64_t patch_failures = 0;
  int64_t choice_changes = 0;    // a Deployment's victims changed
  int64_t rate_limited = 0;      // changes put off by the patch rate limit
  int64_t predrains = 0;         // victims drained ahead of a shrink
  int64_t predrains_undone = 0;
};

class ScaleDownController {
 public:
  ScaleDownController(boost::asio::io_context& io, const fleet::FleetRegistry& registry,
                      fleet::kubernetes::KubernetesDiscovery& discovery,
                      state::SharedStateSync& sync, DrainController& drain,
                      fleet::kubernetes::ScaleDownSettings settings);
  ~ScaleDownController();
  void start();
  void stop();

  bool leader() const { return leader_; }
  const ScaleDownStats& stats() const { return stats_; }
  // `"scale_down":{...}` for /debug/fleet (deployments, victims, pre-drains, the lease).
  void appendJson(std::string& out) const;
  void appendMetrics(std::string& out) const;

 private:
  struct Sample {
    TimeNs at;
    int64_t affinity;
    int64_t jobs;
  };
  struct DeploymentView {
    std::string namespace_;
    std::string name;
    std::string model;
    int64_t desired = -1;       // spec.replicas, -1 unknown
    int64_t min_replicas = -1;  // the model.aibrix.ai/min_replicas label, -1 absent
    int active = 0;             // Pods in the fleet that take traffic
    int recommended = -1;       // the optimizer's answer, -1 none
    std::vector<std::string> victims;     // chosen now (cheapest first)
    std::vector<std::string> annotated;   // carrying our annotation in the store
    std::vector<std::string> predrained;  // drained ahead of a shrink, not deleted yet
  };

  struct Patch {
    std::string namespace_;
    std::string pod;
    bool victim = false;
  };
  // One review's working set.
  struct Review {
    std::map<std::string, const fleet::ReplicaEntry*> by_pod;  // ns/pod
    std::map<std::string, std::string> model_of_pod;
    std::map<std::string, DeploymentView> views;  // ns/deployment
    std::map<std::string, std::vector<fleet::kubernetes::VictimCandidate>> candidates;
    std::map<std::string, std::set<std::string>> leaving;  // deleting Pods per Deployment
    std::set<std::string> keep_predrained;                 // ns/pod
    std::vector<Patch> patches;
  };

  void collect(const fleet::FleetSnapshot& snapshot, TimeNs now, Review& review);
  void decide(TimeNs now, Review& review);
  boost::asio::awaitable<void> cycle();
  boost::asio::awaitable<void> review(TimeNs now);
  boost::asio::awaitable<bool> patchCost(const std::string& ns, const std::string& pod,
                                         bool victim);
  boost::asio::awaitable<int> recommendation(const std::string& ns, const std::string& name);
  void sample(const fleet::FleetSnapshot& snapshot, TimeNs now);

  boost::asio::io_context& io_;
  const fleet::FleetRegistry& registry_;
  fleet::kubernetes::KubernetesDiscovery& discovery_;
  state::SharedStateSync& sync_;
  DrainController& drain_;
  fleet::kubernetes::ScaleDownSettings settings_;
  std::string victim_value_;  // the annotation's value for a victim
  std::shared_ptr<bool> alive_;
  bool leader_ = false;
  double tokens_ = 0;
  TimeNs tokens_at_ = 0;
  std::map<const fleet::ReplicaState*, std::deque<Sample>> samples_;
  std::map<std::string, TimeNs> chosen_at_;           // ns/deployment -> when the choice last changed
  std::map<std::string, TimeNs> expected_;            // ns/pod -> patched (the store catches up)
  std::map<std::string, std::string> expected_value_; // ns/pod -> the value patched
  std::map<std::string, TimeNs> predrained_;          // ns/pod -> when it was pre-drained
  std::map<std::string, DeploymentView> views_;       // ns/deployment -> last review
  std::map<std::string, std::string> shared_choice_;  // as last read (non-leaders)
  std::unique_ptr<http::ControlHttpClient> optimizer_;
  std::string optimizer_host_;
  uint16_t optimizer_port_ = 0;
  ScaleDownStats stats_;
  PeriodicCycle cycle_;  // last: stopped and destroyed first
};

}  // namespace switchyard::gateway
