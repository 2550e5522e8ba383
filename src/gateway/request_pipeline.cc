// One proxied request, stage by stage: identify and observe it, inspect its body once, resolve
// its model and strategy, pass the admission stage, find its session's pin, then route, admit on
// the chosen replica and forward, failing over while nothing has reached the client.
#include <simdjson.h>

#include <algorithm>

#include "gateway/worker_impl.h"
#include "routing/router.h"

namespace switchyard::gateway {
namespace {

Refusal invalidStrategy(std::string_view text, std::string_view bad_part) {
  return {400,
          "invalid routing strategy '" + std::string(text) + "' at '" + std::string(bad_part) +
              "'",
          "invalid_request_error", "invalid_routing_strategy", "routing-strategy"};
}

}  // namespace

asio::awaitable<bool> Worker::Impl::proxy(ClientConnection& conn, Request& req, bool keep_alive,
                                          JobPath job) {
  const std::string_view request_id = requestId(conn, req);
  const bool generated_id = request_id.data() == conn.generated_id;  // also sent upstream
  observe::RequestScope observed(observer, conn.observed, now(), request_id, req["traceparent"],
                                 req["x-switchyard-explain"]);

  // Inspect the body once. simdjson reads up to SIMDJSON_PADDING bytes past the end: reserve
  // them instead of copying.
  std::string& body = req.body();
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  api::InspectedRequest info;
  const api::InspectError inspect_error =
      inspector.inspect(body.data(), body.size(), body.capacity(), info);
  const std::shared_ptr<const fleet::FleetSnapshot> snapshot = snapshots.get();

  // The model.
  const fleet::ModelEntry* model = nullptr;
  if (inspect_error != api::InspectError::kNone) {
    // Async-job endpoints need not carry a JSON body naming a model (file uploads are
    // multipart, listings have no body): they go to the default job model.
    const bool job_without_model =
        job.kind != JobRequest::kNone && (inspect_error == api::InspectError::kMissingModel ||
                                          inspect_error == api::InspectError::kMalformedJson);
    if (!job_without_model) {
      co_return co_await sendError(conn, 400, inspector.errorMessage(), "invalid_request_error",
                                   "", inspect_error == api::InspectError::kMissingModel
                                           ? "model"
                                           : "",
                                   request_id, keep_alive);
    }
    model = snapshot ? defaultJobModel(*snapshot) : nullptr;
    if (model == nullptr) {
      co_return co_await sendError(
          conn, 400,
          "this request names no model and no default is configured "
          "(async_jobs.default_model)",
          "invalid_request_error", "model_required", "model", request_id, keep_alive);
    }
  } else {
    model = snapshot ? snapshot->findModel(info.model) : nullptr;
    if (model == nullptr) {
      co_return co_await sendError(
          conn, 404, "The model `" + std::string(info.model) + "` does not exist.",
          "invalid_request_error", "model_not_found", "model", request_id, keep_alive);
    }
  }

  // The strategy: the request's header, else the model's, else the gateway's default.
  std::string_view strategy_text = req["routing-strategy"];
  if (strategy_text.empty()) strategy_text = model->routing_strategy;
  if (strategy_text.empty()) strategy_text = snapshot->default_strategy;
  routing::StrategySpec spec;
  std::string_view bad_part;
  if (routing::parseStrategySpec(strategy_text, spec, &bad_part) != routing::SpecError::kNone) {
    co_return co_await sendRefusal(conn, invalidStrategy(strategy_text, bad_part), request_id,
                                   keep_alive);
  }
  observer.onModel(conn.observed, *snapshot, *model, spec.text);

  // Admission before routing.
  if (std::optional<Refusal> refused = admission.beforeRouting(*model, now())) {
    co_return co_await sendRefusal(conn, *refused, request_id, keep_alive);
  }

  const int64_t prompt_estimate =
      static_cast<int64_t>(info.prompt_bytes / api::RequestInspector::kBytesPerPromptToken);
  std::array<int, kMaxAttempts + kMaxAdmissionRaces> tried{};
  size_t tried_count = 0;
  routing::RouteRequest route_request{&spec, now(), {}, {}};
  route_request.shape.prompt_tokens = static_cast<double>(prompt_estimate);
  route_request.shape.max_tokens = static_cast<double>(info.max_tokens);

  // Session affinity: the session's pinned replica is kept while it passes the filters.
  const std::string_view session_header = sessions.header();
  const std::string_view session =
      session_header.empty() ? std::string_view() : std::string_view(req[session_header]);
  conn.session_pin.clear();
  if (!session.empty()) {
    co_await sessions.findPin(model->name, session, route_request.now, conn.session_pin);
    route_request.preferred = model->replicaIndex(conn.session_pin);
  }

  // Route, admit, forward; fail over while nothing has reached the client.
  retry_budget.onRequest(route_request.now);
  const int max_attempts = std::min(config.retry.max_attempts, kMaxAttempts);
  int attempts = 0;
  int admission_races = 0;
  bool saturated = false;
  bool unavailable = false;  // every replica is draining or not ready
  while (attempts < max_attempts) {
    route_request.tried = std::span<const int>(tried.data(), tried_count);
    const TimeNs routing_started = now();
    const routing::Decision decision =
        routing::route(*snapshot, *model, route_request, rng, scratch);
    observer.onDecision(conn.observed, decision, routing_started, now());
    if (decision.chosen < 0) {
      // Replicas lost to an admission race are at their limit too (set aside as "tried").
      saturated = decision.saturated > 0 || admission_races > 0;
      unavailable = decision.unavailable > 0 && decision.unavailable == decision.ready;
      break;
    }
    const std::shared_ptr<fleet::ReplicaState>& replica = model->replicas[decision.chosen].state;
    if (decision.affinity) {  // a pinned session's request: scale-down prefers other victims
      replica->counters().affinity_requests_total.fetch_add(1, std::memory_order_relaxed);
    }

    if (!session.empty() && !decision.affinity) {
      // First request of the session, or its replica is gone: pin (or re-pin) atomically. If
      // another gateway pinned it first, its choice wins and this request follows it.
      co_await sessions.pinTo(model->name, session, replica->name(), now(), conn.session_pin);
      const int winner_index = model->replicaIndex(conn.session_pin);
      if (conn.session_pin != replica->name() && winner_index >= 0 &&
          ++admission_races <= kMaxAdmissionRaces) {
        route_request.preferred = winner_index;
        continue;
      }
    }

    // Admission on the chosen replica.
    SharedAdmission shared_admission;
    std::optional<Refusal> refusal;
    const ReplicaAdmission admitted =
        co_await admission.onReplica(*model, *replica, now(), shared_admission, refusal);
    if (admitted == ReplicaAdmission::kRateLimited) {
      co_return co_await sendRefusal(conn, *refusal, request_id, keep_alive);
    }
    if (admitted == ReplicaAdmission::kAtLimit) {
      if (++admission_races > kMaxAdmissionRaces) {
        saturated = true;
        break;
      }
      tried[tried_count++] = decision.chosen;
      route_request.preferred = -1;
      continue;
    }

    // Forward. A failed attempt can be retried only if another replica is left and the budget
    // allows; otherwise the upstream's own error answer goes to the client.
    ++attempts;
    const bool may_retry = attempts < max_attempts &&
                           tried_count + 1 < model->replicas.size() &&
                           retry_budget.canSpend(now());
    conn.capture_job_id = job.kind == JobRequest::kCreate;
    conn.job_id_scanned = 0;
    conn.job_id.clear();
    const ForwardResult result =
        co_await forward(conn, req, replica, *model,
                         {spec.text, request_id, generated_id, prompt_estimate, keep_alive,
                          may_retry, ForwardMode::kNormal});
    if (!conn.job_id.empty()) {
      shared->recordJob(conn.job_id, model->name, replica->name(), config.async_jobs.ttl);
      replica->counters().jobs_created_total.fetch_add(1, std::memory_order_relaxed);
    }
    if (result == ForwardResult::kDone) co_return keep_alive;
    if (result == ForwardResult::kAborted) co_return false;
    // Nothing reached the client yet: try another replica if the retry budget allows.
    tried[tried_count++] = decision.chosen;
    route_request.preferred = -1;
    route_request.now = now();
    if (!may_retry || !retry_budget.trySpend(route_request.now)) break;
  }
  if (saturated) {
    co_return co_await sendRefusal(conn, admission.saturated(), request_id, keep_alive);
  }
  if (model->replicas.empty() || unavailable) {
    co_return co_await sendError(conn, 503,
                                 unavailable ? "every replica of the model is draining or not ready"
                                             : "no replica serves this model",
                                 "server_error", "no_replica", "", request_id, keep_alive);
  }
  co_return co_await sendError(conn, 502, "the model's replicas could not be reached",
                               "server_error", "upstream_unavailable", "", request_id,
                               keep_alive);
}

// The client's x-request-id, or a fresh one (kept in the connection) that is also sent upstream.
std::string_view Worker::Impl::requestId(ClientConnection& conn, const Request& req) {
  const std::string_view given = req["x-request-id"];
  if (!given.empty()) return given;
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t bits = rng.next();
  for (int i = 0; i < 16; ++i) conn.generated_id[i] = kHex[(bits >> (i * 4)) & 0xF];
  return std::string_view(conn.generated_id, 16);
}

const fleet::ModelEntry* Worker::Impl::defaultJobModel(const fleet::FleetSnapshot& snapshot) const {
  if (!config.async_jobs.default_model.empty()) {
    return snapshot.findModel(config.async_jobs.default_model);
  }
  return snapshot.models.size() == 1 ? &snapshot.models[0] : nullptr;
}

asio::awaitable<bool> Worker::Impl::proxyToOwner(ClientConnection& conn, Request& req,
                                                 bool keep_alive, JobPath job) {
  const std::string_view request_id = requestId(conn, req);
  const bool generated_id = request_id.data() == conn.generated_id;  // also sent upstream
  observe::RequestScope observed(observer, conn.observed, now(), request_id, req["traceparent"],
                                 req["x-switchyard-explain"]);
  conn.capture_job_id = false;  // a follow-up names its resource; nothing new to record
  const std::shared_ptr<const fleet::FleetSnapshot> snapshot = snapshots.get();
  const state::JobOwner owner = co_await shared->lookupJob(job.id);
  shared_notice.note(owner.degraded);

  // The recorded owner first. If the owner is unknown (shared state unreachable, or the record
  // expired) every replica is asked in turn; only the owner answers other than 404, and it is
  // recorded again.
  const fleet::ModelEntry* owner_model = snapshot ? snapshot->findModel(owner.model) : nullptr;
  const int owner_index = owner_model ? owner_model->replicaIndex(owner.replica) : -1;
  if (snapshot == nullptr) {
    co_return co_await sendError(conn, 503, "no replica serves this model", "server_error",
                                 "no_replica", "", request_id, keep_alive);
  }
  const bool search = owner_index < 0;
  for (size_t m = 0; m < snapshot->models.size(); ++m) {
    const fleet::ModelEntry& model = search ? snapshot->models[m] : *owner_model;
    observer.onModel(conn.observed, *snapshot, model, "async-job");
    const size_t count = search ? model.replicas.size() : 1;
    for (size_t i = 0; i < count; ++i) {
      const auto& replica = model.replicas[search ? i : static_cast<size_t>(owner_index)].state;
      replica->counters().running.fetch_add(1, std::memory_order_relaxed);  // forward releases
      const ForwardResult result = co_await forward(
          conn, req, replica, model,
          {"async-job", request_id, generated_id, 0, keep_alive, /*may_retry=*/false,
           search ? ForwardMode::kFindOwner : ForwardMode::kNormal});
      if (result == ForwardResult::kDone) {
        if (search) shared->recordJob(job.id, model.name, replica->name(), config.async_jobs.ttl);
        co_return keep_alive;
      }
      if (result == ForwardResult::kAborted) co_return false;
    }
    if (!search) break;
  }
  if (!search) {
    co_return co_await sendError(conn, 502,
                                 "the replica that owns " + std::string(job.id) +
                                     " could not be reached",
                                 "server_error", "owner_unavailable", "", request_id, keep_alive);
  }
  co_return co_await sendError(
      conn, 404, "No " + std::string(job.collection) + " resource with id " + std::string(job.id),
      "invalid_request_error", "not_found", "", request_id, keep_alive);
}

}  // namespace switchyard::gateway
