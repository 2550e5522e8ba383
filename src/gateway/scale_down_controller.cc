#include "gateway/scale_down_controller.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "api/openai_error.h"
#include "fleet/discovery/kubernetes/victim_choice.h"
#include "observe/prometheus_writer.h"
#include "state/mark_sets.h"

namespace switchyard::gateway {

namespace asio = boost::asio;
namespace k8s = fleet::kubernetes;

namespace {

constexpr std::string_view kLease = "scale-down";
constexpr std::string_view kChoiceSet = "scale-down";
constexpr TimeNs kExpectFor = 10 * kNsPerSec;  // how long a patch waits for the watch to show it

TimeNs now() { return SteadyClock::instance().now(); }

void appendString(std::string& out, std::string_view value) {
  out.push_back('"');
  api::appendJsonEscaped(out, value);
  out.push_back('"');
}

void appendList(std::string& out, const std::vector<std::string>& values) {
  out.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out.push_back(',');
    appendString(out, values[i]);
  }
  out.push_back(']');
}

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

int64_t labelNumber(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto it = labels.find(key);
  if (it == labels.end()) return -1;
  char* end = nullptr;
  const long value = std::strtol(it->second.c_str(), &end, 10);
  return end != it->second.c_str() && *end == '\0' && value >= 0 ? value : -1;
}

}  // namespace

ScaleDownController::ScaleDownController(asio::io_context& io,
                                         const fleet::FleetRegistry& registry,
                                         k8s::KubernetesDiscovery& discovery,
                                         state::SharedStateSync& sync, DrainController& drain,
                                         k8s::ScaleDownSettings settings)
    : io_(io),
      registry_(registry),
      discovery_(discovery),
      sync_(sync),
      drain_(drain),
      settings_(std::move(settings)),
      victim_value_(std::to_string(settings_.victim_cost)),
      alive_(std::make_shared<bool>(true)),
      cycle_(io, "scale-down", settings_.interval, [this] { return cycle(); }) {
  tokens_ = std::max(2.0, settings_.max_patches_per_minute / 6);
  tokens_at_ = now();
  if (!settings_.optimizer_url.empty()) {
    std::string address;
    fleet::splitHttpUrl(settings_.optimizer_url, optimizer_host_, optimizer_port_,
                        &address);  // checked at config load
    optimizer_ = std::make_unique<http::ControlHttpClient>(io_, optimizer_host_, optimizer_port_,
                                                           address);
  }
}

ScaleDownController::~ScaleDownController() { stop(); }

void ScaleDownController::start() {
  if (settings_.enabled) cycle_.start();
}

void ScaleDownController::stop() {
  *alive_ = false;
  cycle_.stop();
}

asio::awaitable<void> ScaleDownController::cycle() {
  const auto alive = alive_;
  if (!discovery_.synced()) co_return;
  const std::optional<bool> held = co_await sync_.holdLease(kLease, settings_.lease);
  if (!*alive) co_return;
  const bool leader = held.value_or(false);
  if (leader != leader_) {
    spdlog::info("scale-down: this gateway {} the deciding one",
                 leader ? "is now" : "is no longer");
    leader_ = leader;
  }
  if (!leader) {
    // Another gateway decides; show its choice.
    if (auto marks = co_await sync_.readMarks(kChoiceSet); marks && *alive) {
      shared_choice_.clear();
      for (const state::Mark& m : *marks) shared_choice_[m.key] = m.value;
    }
    co_return;
  }
  co_await review(now());
}

void ScaleDownController::sample(const fleet::FleetSnapshot& snapshot, TimeNs at) {
  std::map<const fleet::ReplicaState*, std::deque<Sample>> next;
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      const fleet::ReplicaState* state = replica.state.get();
      auto& samples = next[state];
      if (auto it = samples_.find(state); it != samples_.end()) samples = std::move(it->second);
      const auto& c = state->counters();
      samples.push_back({at, c.affinity_requests_total.load(std::memory_order_relaxed),
                         c.jobs_created_total.load(std::memory_order_relaxed)});
      while (samples.size() > 1 && at - samples.front().at > settings_.window) {
        samples.pop_front();
      }
    }
  }
  samples_ = std::move(next);
}

asio::awaitable<bool> ScaleDownController::patchCost(const std::string& ns,
                                                     const std::string& pod, bool victim) {
  const auto alive = alive_;
  const std::string body =
      victim ? fmt::format(R"({{"metadata":{{"annotations":{{"{}":"{}"}}}}}})",
                           kDeletionCostAnnotation, victim_value_)
             : fmt::format(R"({{"metadata":{{"annotations":{{"{}":null}}}}}})",
                           kDeletionCostAnnotation);
  const k8s::ApiResponse response = co_await discovery_.client().request(
      k8s::ApiMethod::kPatch,
      "/api/v1/namespaces/" + urlEncode(ns) + "/pods/" + urlEncode(pod), body,
      "application/merge-patch+json", discovery_.settings().request_timeout);
  if (!*alive) co_return false;
  if (response.status != 200) {
    ++stats_.patch_failures;
    spdlog::warn("scale-down: patching {}/{} failed: {}", ns, pod,
                 response.status == 0 ? response.error
                                      : std::to_string(response.status) + " " +
                                            response.body.substr(0, 200));
    co_return false;
  }
  ++stats_.patches;
  const std::string key = ns + "/" + pod;
  expected_[key] = now();
  expected_value_[key] = victim ? victim_value_ : std::string();
  spdlog::info("scale-down: {}/{} {}", ns, pod,
               victim ? "marked to go first (" + std::string(kDeletionCostAnnotation) + "=" +
                            victim_value_ + ")"
                      : "no longer marked");
  co_return true;
}

asio::awaitable<int> ScaleDownController::recommendation(const std::string& ns,
                                                         const std::string& name) {
  if (!optimizer_) co_return -1;
  const auto alive = alive_;
  const http::GetResult result = co_await optimizer_->get(
      "/metrics/" + urlEncode(ns) + "/" + urlEncode(name),
      std::chrono::seconds(1), 64 * 1024);
  if (!*alive || result.status != 200) co_return -1;
  co_return k8s::parseRecommendedReplicas(result.body, settings_.optimizer_replicas_unit);
}

void ScaleDownController::collect(const fleet::FleetSnapshot& snapshot, TimeNs at, Review& r) {
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      if (replica.pod.empty()) continue;
      const std::string key = replica.pod.namespace_ + "/" + replica.pod.name;
      r.by_pod[key] = &replica;
      r.model_of_pod[key] = model.name;
    }
  }
  const k8s::MappingSettings& mapping = discovery_.settings().mapping;
  for (const k8s::DeploymentInfo* d : discovery_.deployments()) {
    DeploymentView& v = r.views[d->key()];
    v.namespace_ = d->namespace_;
    v.name = d->name;
    v.desired = d->replicas;
    v.min_replicas = labelNumber(d->labels, mapping.min_replicas_label);
    if (auto it = d->labels.find(mapping.model_label); it != d->labels.end()) v.model = it->second;
  }
  for (const k8s::PodInfo* pod : discovery_.pods()) {
    const std::string deployment = pod->deployment();
    if (deployment.empty()) continue;
    const std::string dkey = pod->namespace_ + "/" + deployment;
    DeploymentView& v = r.views[dkey];
    v.namespace_ = pod->namespace_;
    v.name = deployment;
    if (v.min_replicas < 0) v.min_replicas = labelNumber(pod->labels, mapping.min_replicas_label);
    std::string value;
    bool has_value = false;
    if (auto it = pod->annotations.find(std::string(kDeletionCostAnnotation));
        it != pod->annotations.end()) {
      value = it->second;
      has_value = true;
    }
    if (auto it = expected_.find(pod->key()); it != expected_.end()) {
      value = expected_value_[pod->key()];
      has_value = !value.empty();
    }
    const bool ours = has_value && value == victim_value_;
    if (ours) v.annotated.push_back(pod->name);
    if (pod->deleting) r.leaving[dkey].insert(pod->name);
    const auto entry = r.by_pod.find(pod->key());
    if (entry == r.by_pod.end()) continue;  // not (yet) a replica
    if (v.model.empty()) v.model = r.model_of_pod[pod->key()];
    const fleet::ReplicaState& state = *entry->second->state;
    if (predrained_.count(pod->key()) && !pod->deleting) {
      // Drained ahead of a shrink: still capacity until it is deleted, and still a victim.
      v.predrained.push_back(pod->name);
      ++v.active;
      continue;
    }
    if (state.lifecycle() != 0) continue;
    ++v.active;
    if (has_value && !ours) continue;  // someone else manages this Pod's cost: leave it alone
    k8s::VictimCandidate candidate;
    candidate.pod = pod->name;
    candidate.in_flight = static_cast<double>(state.globalRunning());
    if (auto s = samples_.find(&state); s != samples_.end() && !s->second.empty()) {
      candidate.session_requests =
          static_cast<double>(s->second.back().affinity - s->second.front().affinity);
      candidate.jobs = static_cast<double>(s->second.back().jobs - s->second.front().jobs);
    }
    const TimeNs since = state.readySince();
    candidate.warming =
        since != fleet::ReplicaState::kEstablished && at - since < k8s::kWarmingWindow;
    r.candidates[dkey].push_back(std::move(candidate));
  }
}

void ScaleDownController::decide(TimeNs at, Review& r) {
  for (auto& [key, v] : r.views) {
    const auto& cands = r.candidates[key];
    size_t predrain = 0;
    if (v.recommended >= 0 && v.recommended < v.active) {
      predrain = static_cast<size_t>(v.active - std::max(1, v.recommended));  // never the last
    }
    const size_t want =
        v.active >= 2 ? std::max(static_cast<size_t>(settings_.victims_per_deployment), predrain)
                      : 0;
    // Pods already drained ahead of the shrink stay victims first, as many as still wanted.
    const size_t kept_count = std::min(predrain, v.predrained.size());
    std::vector<std::string> kept(v.predrained.begin(),
                                  v.predrained.begin() + static_cast<std::ptrdiff_t>(kept_count));
    for (const std::string& pod : kept) r.keep_predrained.insert(v.namespace_ + "/" + pod);
    // The standing choice holds while its Pods are still candidates and it is young.
    std::vector<std::string> current;
    for (const std::string& pod : v.annotated) {
      if (std::any_of(cands.begin(), cands.end(),
                      [&](const k8s::VictimCandidate& c) { return c.pod == pod; })) {
        current.push_back(pod);
      }
    }
    const size_t more = want - std::min(want, kept.size());
    const auto chosen_at = chosen_at_.find(key);
    const bool young = chosen_at != chosen_at_.end() && at - chosen_at->second < settings_.hold;
    const std::vector<std::string> fresh =
        young && current.size() == more ? current
                                        : k8s::chooseVictims(cands, current, more, settings_);
    v.victims = kept;
    v.victims.insert(v.victims.end(), fresh.begin(), fresh.end());
    std::vector<Patch> patches;
    for (const std::string& pod : v.victims) {
      if (!contains(v.annotated, pod)) patches.push_back({v.namespace_, pod, true});
    }
    for (const std::string& pod : v.annotated) {
      // A deleting Pod keeps its mark: it is going anyway.
      if (!contains(v.victims, pod) && !r.leaving[key].count(pod)) {
        patches.push_back({v.namespace_, pod, false});
      }
    }
    if (!patches.empty()) {
      const double cost = static_cast<double>(patches.size());
      if (tokens_ < cost) {
        ++stats_.rate_limited;
        v.victims = kept;
        v.victims.insert(v.victims.end(), current.begin(), current.end());
      } else {
        tokens_ -= cost;
        ++stats_.choice_changes;
        chosen_at_[key] = at;
        r.patches.insert(r.patches.end(), patches.begin(), patches.end());
      }
    }
    // Ahead of a shrink the optimizer asked for: drain the cheapest victims now (once their
    // annotation is in place, so the ReplicaSet controller deletes those), so their requests
    // finish while new ones go elsewhere.
    for (size_t i = kept.size(); i < predrain && i < v.victims.size(); ++i) {
      const std::string pod_key = v.namespace_ + "/" + v.victims[i];
      const auto entry = r.by_pod.find(pod_key);
      if (entry == r.by_pod.end() || !contains(v.annotated, v.victims[i])) continue;
      spdlog::info("scale-down: the optimizer wants {} of {} replicas of {}: draining {} first",
                   v.recommended, v.active, key, v.victims[i]);
      drain_.setDrain(entry->second->state->name(), v.victims[i], true);
      predrained_[pod_key] = at;
      r.keep_predrained.insert(pod_key);
      ++stats_.predrains;
    }
  }
  // Undo pre-drains that no longer apply: the recommendation rose, or no shrink followed.
  for (auto it = predrained_.begin(); it != predrained_.end();) {
    const k8s::PodInfo* pod = discovery_.findPod(it->first);
    if (pod == nullptr) {  // gone: the drain did its job
      it = predrained_.erase(it);
      continue;
    }
    if (pod->deleting || (r.keep_predrained.count(it->first) &&
                          at - it->second <= settings_.predrain_timeout)) {
      ++it;
      continue;
    }
    if (const auto entry = r.by_pod.find(it->first); entry != r.by_pod.end()) {
      drain_.setDrain(entry->second->state->name(), pod->name, false);
    }
    spdlog::info("scale-down: pre-drain of {} undone", it->first);
    ++stats_.predrains_undone;
    it = predrained_.erase(it);
  }
}

asio::awaitable<void> ScaleDownController::review(TimeNs at) {
  const auto alive = alive_;
  ++stats_.reviews;
  const auto snapshot = registry_.latest();
  sample(*snapshot, at);
  const double burst = std::max(2.0, settings_.max_patches_per_minute / 6);
  tokens_ = std::min(burst, tokens_ + static_cast<double>(at - tokens_at_) / kNsPerSec *
                                          settings_.max_patches_per_minute / 60);
  tokens_at_ = at;
  std::erase_if(expected_, [&](const auto& e) { return at - e.second > kExpectFor; });
  auto r = std::make_shared<Review>();
  collect(*snapshot, at, *r);
  if (optimizer_) {
    for (auto it = r->views.begin(); it != r->views.end(); ++it) {
      const int recommended = co_await recommendation(it->second.namespace_, it->second.name);
      if (!*alive) co_return;
      it->second.recommended = recommended;
    }
  }
  decide(at, *r);
  for (const Patch& patch : r->patches) {
    co_await patchCost(patch.namespace_, patch.pod, patch.victim);
    if (!*alive) co_return;
  }
  for (auto it = r->views.begin(); it != r->views.end(); ++it) {
    if (it->second.min_replicas >= 0) {
      // The label's floor, for the optimize service (state/mark_sets.h).
      co_await sync_.putMark(state::kMinReplicasMarks, it->first,
                             std::to_string(it->second.min_replicas), 3 * settings_.lease);
      if (!*alive) co_return;
    }
    if (it->second.victims.empty()) continue;
    co_await sync_.putMark(kChoiceSet, it->first,
                           fmt::format("{}", fmt::join(it->second.victims, ",")),
                           3 * settings_.lease);
    if (!*alive) co_return;
  }
  views_ = std::move(r->views);
}

void ScaleDownController::appendJson(std::string& out) const {
  fmt::format_to(std::back_inserter(out),
                 R"("scale_down":{{"enabled":{},"deciding":{},"victim_cost":{},"deployments":[)",
                 settings_.enabled, leader_, settings_.victim_cost);
  bool first = true;
  for (const auto& [key, v] : views_) {
    if (!first) out.push_back(',');
    first = false;
    out.append(R"({"namespace":)");
    appendString(out, v.namespace_);
    out.append(R"(,"name":)");
    appendString(out, v.name);
    out.append(R"(,"model":)");
    appendString(out, v.model);
    fmt::format_to(std::back_inserter(out),
                   R"(,"replicas":{},"active":{},"min_replicas":{},"recommended":{},"victims":)",
                   v.desired, v.active, v.min_replicas, v.recommended);
    appendList(out, v.victims);
    out.append(R"(,"annotated":)");
    appendList(out, v.annotated);
    out.push_back('}');
  }
  out.append(R"(],"shared_choice":{)");
  first = true;
  for (const auto& [key, value] : shared_choice_) {
    if (!first) out.push_back(',');
    first = false;
    appendString(out, key);
    out.push_back(':');
    appendString(out, value);
  }
  out.append(R"(},"predrained":[)");
  first = true;
  for (const auto& [pod, since] : predrained_) {
    if (!first) out.push_back(',');
    first = false;
    appendString(out, pod);
  }
  fmt::format_to(std::back_inserter(out),
                 R"(],"patches":{},"patch_failures":{},"choice_changes":{},"rate_limited":{},)"
                 R"("predrains":{},"predrains_undone":{}}})",
                 stats_.patches, stats_.patch_failures, stats_.choice_changes,
                 stats_.rate_limited, stats_.predrains, stats_.predrains_undone);
}

void ScaleDownController::appendMetrics(std::string& out) const {
  using observe::appendHeader;
  using observe::appendSample;
  appendHeader(out, "switchyard_scale_down_deciding", "gauge",
               "1 while this gateway holds the scale-down lease and chooses the victims.");
  appendSample(out, "switchyard_scale_down_deciding", {}, leader_ ? 1 : 0);
  const std::pair<const char*, int64_t> counters[] = {
      {"switchyard_scale_down_patches_total", stats_.patches},
      {"switchyard_scale_down_patch_failures_total", stats_.patch_failures},
      {"switchyard_scale_down_choice_changes_total", stats_.choice_changes},
      {"switchyard_scale_down_rate_limited_total", stats_.rate_limited},
      {"switchyard_scale_down_predrains_total", stats_.predrains},
      {"switchyard_scale_down_predrains_undone_total", stats_.predrains_undone},
  };
  static constexpr const char* kHelp[] = {
      "Pod deletion-cost annotation patches that succeeded.",
      "Pod deletion-cost annotation patches that failed.",
      "Times a Deployment's chosen victims changed.",
      "Victim changes put off by the annotation patch rate limit.",
      "Victims drained ahead of a shrink the optimizer recommended.",
      "Pre-drains undone (no shrink followed, or the recommendation rose).",
  };
  for (size_t i = 0; i < std::size(counters); ++i) {
    appendHeader(out, counters[i].first, "counter", kHelp[i]);
    appendSample(out, counters[i].first, {}, static_cast<double>(counters[i].second));
  }
  appendHeader(out, "switchyard_deployment_min_replicas", "gauge",
               "The model.aibrix.ai/min_replicas label of a discovered Deployment (for the "
               "optimizer).");
  for (const auto& [key, v] : views_) {
    if (v.min_replicas < 0) continue;
    appendSample(out, "switchyard_deployment_min_replicas",
                 {{"namespace", v.namespace_}, {"deployment", v.name}, {"model", v.model}},
                 static_cast<double>(v.min_replicas));
  }
  appendHeader(out, "switchyard_deployment_active_replicas", "gauge",
               "Pods of a discovered Deployment that take traffic.");
  for (const auto& [key, v] : views_) {
    appendSample(out, "switchyard_deployment_active_replicas",
                 {{"namespace", v.namespace_}, {"deployment", v.name}, {"model", v.model}},
                 static_cast<double>(v.active));
  }
}

}  // namespace switchyard::gateway
