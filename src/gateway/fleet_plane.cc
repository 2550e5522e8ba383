#include "gateway/fleet_plane.h"

#include <fmt/format.h>

#include <array>

#include "api/openai_error.h"
#include "observe/prometheus_writer.h"

namespace switchyard::gateway {

namespace k8s = fleet::kubernetes;

namespace {

void appendString(std::string& out, std::string_view value) {
  out.push_back('"');
  api::appendJsonEscaped(out, value);
  out.push_back('"');
}

void appendDiscoveryJson(std::string& out, const k8s::KubernetesDiscovery& discovery,
                         TimeNs now) {
  out.append(R"("discovery":{"source":"kubernetes","synced":)");
  out.append(discovery.synced() ? "true" : "false");
  fmt::format_to(std::back_inserter(out), R"(,"stale":{},"stale_after_ms":{},"namespaces":[)",
                 discovery.stale(now), discovery.settings().stale_after / kNsPerMs);
  for (size_t i = 0; i < discovery.namespaces().size(); ++i) {
    if (i) out.push_back(',');
    appendString(out, discovery.namespaces()[i].empty() ? "*" : discovery.namespaces()[i]);
  }
  out.append(R"(],"label_selector":)");
  appendString(out, discovery.settings().label_selector);
  out.append(R"(,"watches":[)");
  bool first = true;
  for (const k8s::Reflector* r : discovery.reflectors()) {
    if (!first) out.push_back(',');
    first = false;
    const k8s::ReflectorStats& s = r->stats();
    out.append(R"({"path":)");
    appendString(out, r->options().path);
    fmt::format_to(std::back_inserter(out),
                   R"(,"synced":{},"healthy":{},"unhealthy_for_ms":{},"resource_version":)",
                   r->synced(), r->healthy(),
                   r->healthy() ? 0 : (now - r->unhealthySince()) / kNsPerMs);
    appendString(out, r->resourceVersion());
    out.append(R"(,"last_error":)");
    appendString(out, r->lastError());
    fmt::format_to(std::back_inserter(out),
                   R"(,"objects":{},"lists":{},"list_failures":{},"watches":{},)"
                   R"("watch_failures":{},"expired":{},"events":{},"bookmarks":{},)"
                   R"("parse_errors":{},"unauthorized":{}}})",
                   r->store().pods.size() + r->store().deployments.size(), s.lists,
                   s.list_failures, s.watches, s.watch_failures, s.expired, s.events,
                   s.bookmarks, s.parse_errors, s.unauthorized);
  }
  out.append(R"(],"kept_out":[)");
  for (size_t i = 0; i < discovery.problems().size(); ++i) {
    if (i) out.push_back(',');
    appendString(out, discovery.problems()[i]);
  }
  fmt::format_to(std::back_inserter(out), R"(],"token_reloads":{}}})",
                 discovery.client().tokenReloads());
}

void appendDiscoveryMetrics(std::string& out, const k8s::KubernetesDiscovery& discovery,
                            TimeNs now) {
  using observe::appendHeader;
  using observe::appendSample;
  appendHeader(out, "switchyard_discovery_stale", "gauge",
               "1 while the discovered fleet is stale: a watch of the API server has been broken "
               "for stale_after (the last known fleet stays in force).");
  appendSample(out, "switchyard_discovery_stale", {{"source", "kubernetes"}},
               discovery.stale(now) ? 1 : 0);
  appendHeader(out, "switchyard_discovery_synced", "gauge",
               "1 once every watched namespace has been listed.");
  appendSample(out, "switchyard_discovery_synced", {{"source", "kubernetes"}},
               discovery.synced() ? 1 : 0);
  struct Family {
    const char* name;
    const char* help;
    int64_t k8s::ReflectorStats::*field;
  };
  static constexpr Family kFamilies[] = {
      {"switchyard_discovery_lists_total", "Complete lists of a resource.",
       &k8s::ReflectorStats::lists},
      {"switchyard_discovery_list_failures_total", "Lists that failed or were malformed.",
       &k8s::ReflectorStats::list_failures},
      {"switchyard_discovery_watches_total", "Watch streams established.",
       &k8s::ReflectorStats::watches},
      {"switchyard_discovery_watch_failures_total", "Watch requests that failed or broke.",
       &k8s::ReflectorStats::watch_failures},
      {"switchyard_discovery_expired_total",
       "410 Gone answers (the resourceVersion was too old): listed again.",
       &k8s::ReflectorStats::expired},
      {"switchyard_discovery_events_total", "Watch events applied.",
       &k8s::ReflectorStats::events},
      {"switchyard_discovery_bookmarks_total", "Watch bookmarks received.",
       &k8s::ReflectorStats::bookmarks},
      {"switchyard_discovery_parse_errors_total", "Malformed watch events or list pages.",
       &k8s::ReflectorStats::parse_errors},
  };
  for (const Family& family : kFamilies) {
    appendHeader(out, family.name, "counter", family.help);
    for (const k8s::Reflector* r : discovery.reflectors()) {
      appendSample(out, family.name,
                   {{"source", "kubernetes"},
                    {"resource",
                     r->options().kind == k8s::ResourceKind::kPod ? "pods" : "deployments"},
                    {"path", r->options().path}},
                   static_cast<double>(r->stats().*family.field));
    }
  }
}

}  // namespace

FleetPlane::FleetPlane(boost::asio::io_context& io, const fleet::FleetRegistry& registry,
                       state::SharedStateBackend& backend, const GatewayConfig& config,
                       std::function<void()> on_fleet_change)
    : sync_(backend.makeSync(io.get_executor())) {
  DrainSettings drain;
  drain.sync_interval = std::min<TimeNs>(500 * kNsPerMs, config.shared_state.sync_interval);
  // "Empty" is believed once every gateway has seen the drain and published its counts since.
  drain.settle = sync_->distributed() ? 2 * config.shared_state.sync_interval + drain.sync_interval
                                      : 0;
  drain_ = std::make_unique<DrainController>(io, registry, *sync_, drain);
  if (config.kubernetes.enabled) {
    discovery_ = std::make_unique<k8s::KubernetesDiscovery>(io, config.kubernetes,
                                                            std::move(on_fleet_change));
    scale_down_ = std::make_unique<ScaleDownController>(io, registry, *discovery_, *sync_,
                                                        *drain_, config.kubernetes.scale_down);
  }
}

FleetPlane::~FleetPlane() { stop(); }

void FleetPlane::start() {
  drain_->start();
  if (discovery_) discovery_->start();
  if (scale_down_) scale_down_->start();
}

void FleetPlane::stop() {
  if (scale_down_) scale_down_->stop();
  if (discovery_) discovery_->stop();
  drain_->stop();
}

std::vector<fleet::ModelSpec> FleetPlane::compose(const GatewayConfig& config) {
  if (!discovery_) return config.models;
  fleet::ModelSpec defaults;
  defaults.load_balance = config.load_balance;
  defaults.top_k = config.top_k;
  defaults.slow_start = config.slow_start;
  defaults.candidate_sample = config.candidate_sample;
  defaults.timeouts = {config.timeouts.upstream_connect, config.timeouts.upstream_first_byte,
                       config.timeouts.upstream_idle};
  return k8s::composeFleet(config.models, discovery_->replicas(), defaults);
}

void FleetPlane::afterApply() { drain_->refresh(); }

void FleetPlane::registerAdmin(AdminServer& admin) {
  admin.handlePrefix("/admin/drain",
                     [this](const AdminRequest& request) { return drain_->handle(request); });
}

std::string FleetPlane::debugJson(TimeNs now) const {
  std::string out;
  if (!discovery_) {
    out.append(R"("discovery":{"source":"static","stale":false})");
    return out;
  }
  appendDiscoveryJson(out, *discovery_, now);
  out.push_back(',');
  scale_down_->appendJson(out);
  return out;
}

void FleetPlane::appendMetrics(std::string& out, const fleet::FleetSnapshot& snapshot,
                               TimeNs now) const {
  using observe::appendHeader;
  using observe::appendSample;
  appendHeader(out, "switchyard_fleet_replicas", "gauge",
               "Replicas of a model by lifecycle: active, draining (its requests finish, new ones "
               "go elsewhere) or not_ready.");
  for (const fleet::ModelEntry& model : snapshot.models) {
    std::array<int, 3> counts{};
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      const uint8_t flags = replica.state->lifecycle();
      ++counts[(flags & fleet::kDrainingFlags) ? 1 : (flags & fleet::kNotReady) ? 2 : 0];
    }
    static constexpr std::string_view kStates[] = {"active", "draining", "not_ready"};
    for (size_t i = 0; i < counts.size(); ++i) {
      appendSample(out, "switchyard_fleet_replicas", {{"model", model.name}, {"lifecycle", kStates[i]}},
                   counts[i]);
    }
  }
  if (discovery_) {
    appendDiscoveryMetrics(out, *discovery_, now);
    scale_down_->appendMetrics(out);
  }
}

}  // namespace switchyard::gateway
