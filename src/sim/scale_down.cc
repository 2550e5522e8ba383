// Scale-down in the simulated fleet: which replicas leave when the fleet shrinks (a
// `remove_replicas` event, an autoscaling step) and how they stop, as the gateways'
// `scale_down:` says. Victims are Kubernetes' own pick (the newest) or the scale-down
// controller's (the production victim choice, fleet/discovery/kubernetes/victim_choice.h, fed
// from the deciding gateway's view as the controller's review feeds it); they drain (excluded
// from routing, removed when empty: drain-wait in the preStop hook) or are killed at once.
#include <algorithm>

#include "fleet/discovery/kubernetes/victim_choice.h"
#include "sim/simulator_impl.h"

namespace switchyard::sim {

namespace k8s = fleet::kubernetes;

const SimGateway* Simulator::decidingGateway() const {
  // The holder of the scale-down lease: the first gateway alive.
  for (const SimGateway& g : gateways_) {
    if (g.alive) return &g;
  }
  return nullptr;
}

void Simulator::sampleSessionRequests() {
  const SimGateway* g = decidingGateway();
  if (g == nullptr) return;
  const TimeNs window = k8s::ScaleDownSettings{}.window;
  session_samples_.resize(replicas_.size());
  for (size_t i = 0; i < replicas_.size() && i < g->states.size(); ++i) {
    if (!g->states[i] || replicas_[i].removed) continue;
    auto& samples = session_samples_[i];
    samples.emplace_back(
        now_, g->states[i]->counters().affinity_requests_total.load(std::memory_order_relaxed));
    while (samples.size() > 1 && samples.front().first < now_ - window) samples.pop_front();
  }
}

std::vector<uint32_t> Simulator::chooseVictims(const std::string& gpu, int count) const {
  const auto* type = catalog_.findGpu(gpu);
  std::vector<uint32_t> chosen;
  const SimGateway* g = decidingGateway();
  if (scenario_.gateways.scale_down.victims == ScaleDownSpec::Victims::kCheapest && g) {
    // The controller's candidates: the type's replicas in service, costed from its view.
    std::vector<k8s::VictimCandidate> candidates;
    for (const SimReplica& r : replicas_) {
      if (r.removed || r.ready_at > now_ || catalog_.findGpu(gpu_types_[r.gpu_type]) != type ||
          r.index >= g->states.size() || !g->states[r.index]) {
        continue;
      }
      const fleet::ReplicaState& state = *g->states[r.index];
      k8s::VictimCandidate c;
      c.pod = r.name;
      c.in_flight = static_cast<double>(state.globalRunning());
      if (r.index < session_samples_.size() && !session_samples_[r.index].empty()) {
        const auto& samples = session_samples_[r.index];
        c.session_requests = static_cast<double>(samples.back().second - samples.front().second);
      }
      const TimeNs since = state.readySince();
      c.warming = since != fleet::ReplicaState::kEstablished && now_ - since < k8s::kWarmingWindow;
      candidates.push_back(std::move(c));
    }
    for (const std::string& pod : k8s::chooseVictims(candidates, {}, static_cast<size_t>(count),
                                                     k8s::ScaleDownSettings{})) {
      chosen.push_back(replica_by_name_.at(pod));
    }
  }
  // Kubernetes' own order without a deletion cost, and whatever the choice left: the newest.
  for (auto it = replicas_.rbegin();
       it != replicas_.rend() && chosen.size() < static_cast<size_t>(count); ++it) {
    if (it->removed || catalog_.findGpu(gpu_types_[it->gpu_type]) != type ||
        std::find(chosen.begin(), chosen.end(), it->index) != chosen.end()) {
      continue;
    }
    chosen.push_back(it->index);
  }
  return chosen;
}

void Simulator::removeReplicas(const std::string& gpu, int count) {
  const std::vector<uint32_t> victims = chooseVictims(gpu, count);
  RemovedReplicas& out = result_.removed;
  for (uint32_t index : victims) {
    SimReplica& r = replicas_[index];
    catchUp(r);
    r.removed = true;
    r.removed_at = now_;
    ++out.victims;
    out.in_flight_at_decision += r.inflight;
    if (index < session_samples_.size() && !session_samples_[index].empty()) {
      const auto& samples = session_samples_[index];
      out.session_requests += samples.back().second - samples.front().second;
    }
  }
  // The gateways stop routing to them (a deleted Pod's watch event, or the drain).
  applyFleet(now_);
  if (scenario_.gateways.scale_down.stop == ScaleDownSpec::Stop::kDrain) {
    for (uint32_t index : victims) {
      if (replicas_[index].inflight == 0) noteDrained(replicas_[index], now_);
    }
    return;
  }
  // Killed: the engine stops and cuts what it serves (failReplica: re-routed if no token went
  // out and the retry budget allows, failed otherwise).
  for (const SimRequest& q : requests_) {
    if (!q.live || !q.at_engine || !replicas_[q.replica].removed ||
        replicas_[q.replica].removed_at != now_ || replicas_[q.replica].drained_at >= 0) {
      continue;
    }
    ++(q.first_token >= 0 ? out.cut_mid_stream : out.cut_before_first_token);
  }
  for (uint32_t index : victims) {
    failReplica(replicas_[index]);
    replicas_[index].drained_at = now_;
  }
}

void Simulator::noteDrained(SimReplica& r, TimeNs at) {
  if (r.drained_at >= 0) return;
  r.drained_at = at;
  result_.removed.drain_s.add(static_cast<double>(at - r.removed_at) / kNsPerSec);
}

}  // namespace switchyard::sim
