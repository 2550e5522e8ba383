#include "gateway/drain_controller.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>


#include "api/openai_error.h"
#include "core/url_text.h"

namespace switchyard::gateway {

namespace asio = boost::asio;

namespace {

constexpr std::string_view kMarkSet = "drain";
constexpr std::string_view kPrefix = "/admin/drain";

TimeNs now() { return SteadyClock::instance().now(); }

void appendString(std::string& out, std::string_view value) {
  out.push_back('"');
  api::appendJsonEscaped(out, value);
  out.push_back('"');
}

AdminResponse errorResponse(unsigned status, std::string_view message, std::string_view code,
                            std::string_view param = {}) {
  api::OpenAiError error{message, api::kInvalidRequestError, std::nullopt, code};
  if (!param.empty()) error.param = param;
  return AdminResponse{status, "application/json", api::errorBody(error)};
}

struct Match {
  const fleet::ModelEntry* model = nullptr;
  const fleet::ReplicaEntry* replica = nullptr;
};

// The replicas that `name` names: an address, a Pod name, or namespace/name.
std::vector<Match> findReplicas(const fleet::FleetSnapshot& snapshot, std::string_view name) {
  std::vector<Match> out;
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      const bool hit =
          replica.state->name() == name ||
          (!replica.pod.empty() &&
           (replica.pod.name == name || replica.pod.namespace_ + "/" + replica.pod.name == name));
      if (hit) out.push_back({&model, &replica});
    }
  }
  return out;
}

}  // namespace

DrainController::DrainController(asio::io_context& io, const fleet::FleetRegistry& registry,
                                 state::SharedStateSync& sync, DrainSettings settings)
    : registry_(registry),
      sync_(sync),
      settings_(settings),
      alive_(std::make_shared<bool>(true)),
      cycle_(io, "drain", settings.sync_interval, [this] { return cycle(); }) {}

DrainController::~DrainController() { stop(); }

void DrainController::start() { cycle_.start(); }

void DrainController::stop() {
  *alive_ = false;
  cycle_.stop();
}

asio::awaitable<void> DrainController::cycle() {
  const auto alive = alive_;
  // This gateway's changes first, then read everyone's back (same connection, in order).
  std::vector<std::pair<std::string, LocalMark>> pending;
  for (const auto& [address, mark] : local_) {
    if (!mark.written) pending.emplace_back(address, mark);
  }
  for (const auto& [address, mark] : pending) {
    const bool ok = co_await sync_.putMark(kMarkSet, address, mark.pod,
                                           mark.drain ? settings_.mark_ttl : 0);
    if (!*alive) co_return;
    if (!ok) continue;
    if (auto it = local_.find(address);
        it != local_.end() && it->second.drain == mark.drain && it->second.pod == mark.pod) {
      it->second.written = true;
    }
  }
  const std::optional<std::vector<state::Mark>> marks = co_await sync_.readMarks(kMarkSet);
  if (!*alive) co_return;
  if (marks) {
    shared_.clear();
    for (const state::Mark& mark : *marks) shared_[mark.key] = mark.value;
    std::erase_if(local_, [](const auto& entry) { return entry.second.written; });
  }
  refresh();
}

bool DrainController::wanted(const fleet::ReplicaEntry& replica) const {
  const std::string& address = replica.state->name();
  if (auto it = local_.find(address); it != local_.end()) {
    return it->second.drain && it->second.pod == replica.pod.name;
  }
  if (auto it = shared_.find(address); it != shared_.end()) return it->second == replica.pod.name;
  return false;
}

void DrainController::refresh() {
  const auto snapshot = registry_.latest();
  if (!snapshot) return;
  const TimeNs at = now();
  std::map<const fleet::ReplicaState*, TimeNs> next;
  for (const fleet::ModelEntry& model : snapshot->models) {
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      const bool want = wanted(replica);
      const uint8_t before = replica.state->storeLifecycle(
          fleet::kDrainRequested, want ? fleet::kDrainRequested : 0);
      if (want != ((before & fleet::kDrainRequested) != 0)) {
        spdlog::info("drain: {} {} ({})", want ? "draining" : "no longer draining",
                     replica.state->name(), model.name);
      }
      if (replica.state->draining()) {
        const auto it = since_.find(replica.state.get());
        next[replica.state.get()] = it == since_.end() ? at : it->second;
      }
    }
  }
  since_ = std::move(next);
}

void DrainController::setDrain(const std::string& address, const std::string& pod, bool drain) {
  local_[address] = LocalMark{pod, drain, false};
  refresh();
  cycle_.runNow();  // write it now rather than at the next tick: other gateways stop sooner
}

TimeNs DrainController::drainingSince(const fleet::ReplicaState* replica) const {
  const auto it = since_.find(replica);
  return it == since_.end() ? -1 : it->second;
}

std::map<std::string, std::string> DrainController::marks() const {
  std::map<std::string, std::string> out = shared_;
  for (const auto& [address, mark] : local_) {
    if (mark.drain) {
      out[address] = mark.pod;
    } else {
      out.erase(address);
    }
  }
  return out;
}

std::string DrainController::statusJson(const fleet::ModelEntry& model,
                                        const fleet::ReplicaEntry& replica, TimeNs at) const {
  const fleet::ReplicaState& state = *replica.state;
  const uint8_t lifecycle = state.lifecycle();
  const bool draining = state.draining();
  const int64_t here = state.counters().running.load(std::memory_order_relaxed);
  const int64_t others = state.remoteRunning();
  const TimeNs since = drainingSince(&state);
  const TimeNs draining_for = draining && since >= 0 ? at - since : 0;
  const bool settled = draining && since >= 0 && draining_for >= settings_.settle;
  std::string out = R"({"replica":)";
  appendString(out, state.name());
  out.append(R"(,"model":)");
  appendString(out, model.name);
  if (!replica.pod.empty()) {
    out.append(R"(,"pod":)");
    appendString(out, replica.pod.name);
    out.append(R"(,"namespace":)");
    appendString(out, replica.pod.namespace_);
    out.append(R"(,"deployment":)");
    appendString(out, replica.pod.deployment);
  }
  fmt::format_to(std::back_inserter(out), R"(,"lifecycle":"{}","reasons":)",
                 fleet::lifecycleName(lifecycle));
  fleet::appendLifecycleReasons(out, lifecycle);
  fmt::format_to(std::back_inserter(out),
                 R"(,"draining":{},"draining_for_ms":{},"in_flight":{},"in_flight_here":{},)"
                 R"("in_flight_other_gateways":{},"settled":{},"empty":{}}})",
                 draining, draining_for / kNsPerMs, here + others, here, others, settled,
                 settled && here + others == 0);
  return out;
}

AdminResponse DrainController::handle(const AdminRequest& request) {
  const auto snapshot = registry_.latest();
  std::string_view rest = request.path.substr(std::min(request.path.size(), kPrefix.size()));
  if (!rest.empty() && rest.front() != '/') {
    return errorResponse(404, "no such admin endpoint", "not_found");
  }
  if (!rest.empty()) rest.remove_prefix(1);
  const TimeNs at = now();
  if (rest.empty()) {
    if (request.method == "GET") {
      std::string out = R"({"draining":[)";
      bool first = true;
      for (const fleet::ModelEntry& model : snapshot->models) {
        for (const fleet::ReplicaEntry& replica : model.replicas) {
          if (!replica.state->draining()) continue;
          if (!first) out.push_back(',');
          first = false;
          out.append(statusJson(model, replica, at));
        }
      }
      out.append("]}");
      return AdminResponse{200, "application/json", std::move(out)};
    }
    if (request.method != "POST") {
      return errorResponse(405, "use POST to drain, GET to read", "method_not_allowed");
    }
    std::string name;
    bool drain = true;
    if (const auto q = queryParam(request.query, "replica")) name = urlDecode(*q);
    if (!request.body.empty()) {
      simdjson::dom::parser parser;
      simdjson::dom::element root;
      if (request.body.size() > 64 * 1024 ||
          parser.parse(request.body.data(), request.body.size(), true).get(root) !=
              simdjson::SUCCESS ||
          !root.is_object()) {
        return errorResponse(400, "the body must be a JSON object like {\"replica\": \"NAME\"}",
                             "invalid_body");
      }
      for (const char* key : {"replica", "pod"}) {
        simdjson::dom::element value;
        if (root[key].get(value) != simdjson::SUCCESS) continue;
        std::string_view text;
        if (value.get(text) != simdjson::SUCCESS) {
          return errorResponse(400, std::string(key) + " must be a string", "invalid_body", key);
        }
        name.assign(text);
      }
      simdjson::dom::element flag;
      if (root["drain"].get(flag) == simdjson::SUCCESS) {
        if (!flag.is_bool()) {
          return errorResponse(400, "drain must be true or false", "invalid_body", "drain");
        }
        drain = flag.get_bool().value();
      }
    }
    if (name.empty()) {
      return errorResponse(400, "name the replica: {\"replica\": \"ADDRESS or POD\"}",
                           "replica_required", "replica");
    }
    const std::vector<Match> matches = findReplicas(*snapshot, name);
    if (matches.empty()) {
      return errorResponse(404, "no replica named " + name + " in the fleet", "replica_not_found",
                           "replica");
    }
    for (const Match& m : matches) {
      if (m.replica->state != matches.front().replica->state) {
        return errorResponse(400, name + " names several replicas; use the address",
                             "ambiguous_replica", "replica");
      }
    }
    setDrain(matches.front().replica->state->name(), matches.front().replica->pod.name, drain);
    return AdminResponse{200, "application/json",
                         statusJson(*matches.front().model, *matches.front().replica, at)};
  }
  if (request.method != "GET") {
    return errorResponse(405, "use GET to read a replica's drain", "method_not_allowed");
  }
  const std::string name = urlDecode(rest);
  const std::vector<Match> matches = findReplicas(*snapshot, name);
  if (matches.empty()) {
    return errorResponse(404, "no replica named " + name + " in the fleet", "replica_not_found");
  }
  return AdminResponse{200, "application/json",
                       statusJson(*matches.front().model, *matches.front().replica, at)};
}

}  // namespace switchyard::gateway
