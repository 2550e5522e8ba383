// Pod -> replica: which Pods are replicas, of which model, at which address, with which labels
// and lifecycle; and how discovered replicas join the static fleet. Pure (no I/O, no clock).
//
// A Pod is a replica of the model in its `model.aibrix.ai/name` label once it has an IP and has
// been seen Ready (it is then "admitted": a Pod that never was Ready is still starting and stays
// out of the fleet). An admitted Pod stays in the fleet until it is gone, with lifecycle bits:
// NotReady -> kNotReady (excluded at once), deletionTimestamp -> kTerminating (draining), the
// label aibrix.ai/draining=true -> kDrainLabel (draining). Succeeded/Failed Pods are gone.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fleet/discovery/kubernetes/kube_objects.h"
#include "fleet/discovery/kubernetes/settings.h"
#include "fleet/fleet_registry.h"

namespace switchyard::fleet::kubernetes {

struct DiscoveredReplica {
  std::string model;
  ReplicaSpec spec;
};

struct MappingContext {
  // Node name -> its GPU label value, for Pods whose own labels name no GPU (may be null).
  const std::map<std::string, std::string>* node_gpus = nullptr;
  // UIDs of Pods seen Ready with an IP; mapPods adds to it. The caller prunes Pods that are gone.
  std::set<std::string>* admitted = nullptr;
  // The first mapping after the first complete list: Ready Pods were serving before this gateway
  // started and are not eased in by slow start.
  bool initial = false;
};

// The port a Pod serves on (label/annotation, named container port, default); -1 with `why` set
// when the label or annotation is present but not a port.
int podPort(const PodInfo& pod, const MappingSettings& settings, std::string* why = nullptr);

// The replicas among `pods` (any order; the result is sorted by model, then address). Problems
// that keep a labelled Pod out (bad port label) are appended to `problems`, one line each.
std::vector<DiscoveredReplica> mapPods(const std::vector<const PodInfo*>& pods,
                                       const MappingSettings& settings,
                                       const MappingContext& context,
                                       std::vector<std::string>* problems = nullptr);

// The static fleet plus the discovered replicas: a discovered replica joins the static model of
// its name (after its static replicas; an address listed statically wins), or a new model built
// from `defaults` (every knob but the name and replicas). Model order: static models first, then
// discovered ones by name.
std::vector<ModelSpec> composeFleet(const std::vector<ModelSpec>& static_models,
                                    const std::vector<DiscoveredReplica>& discovered,
                                    const ModelSpec& defaults);

}  // namespace switchyard::fleet::kubernetes
