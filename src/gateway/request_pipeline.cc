// One proxied request, stage by stage: identify and observe it, inspect its body once, resolve
// its model and strategy, pass the admission stage, find its session's pin, then route, admit on
// the chosen replica and forward, failing over while nothing has reached the client.
#include <simdjson.h>

#include <algorithm>

#include "admission/deadline.h"
#include "admission/deadline_admission.h"
#include "profile/slo_profiles.h"
#include "gateway/queue_seat.h"
#include "gateway/worker_impl.h"
#include "routing/router.h"

namespace switchyard::gateway {
namespace {

// Planned when a request gives no max_tokens and nothing was learned for its model yet.
constexpr double kDefaultOutputTokens = 256;

Refusal invalidDeadline(std::string_view header) {
  return {400,
          std::string(header) + " must be a non-negative number (" +
              std::string(admission::kDeadlineMsHeader) + ": milliseconds; " +
              std::string(admission::kTimeoutHeader) + ": seconds, or a duration like 30s)",
          "invalid_request_error", "invalid_deadline", header};
}

void wakeWaiter(void* timer) { static_cast<asio::steady_timer*>(timer)->cancel(); }

}  // namespace

// What admission decided, on the request's decision record, when a deadline, the queue or a
// shared in-flight limit took part (docs/admission.md).
void Worker::Impl::noteAdmission(ClientConnection& conn, const ProxyPlan& plan, TimeNs waited,
                                 const std::optional<Refusal>& refusal) {
  const bool refused = refusal.has_value() && refusal->limit != observe::LimitKind::kCount;
  if (plan.deadline_at < 0 && waited < 0 && !refused &&
      plan.inflight == observe::InflightAdmission::kNone) {
    return;
  }
  observer.onAdmission(conn.observed,
                       {waited, plan.deadline_at >= 0 ? plan.deadline_at - plan.arrived : -1,
                        plan.predicted, refused ? refusal->limit : observe::LimitKind::kCount,
                        plan.inflight});
}

// The peer's address, looked up once per connection and only when a request queues without
// naming a user.
std::string_view Worker::Impl::clientAddress(ClientConnection& conn) {
  if (conn.client_address.empty()) {
    boost::system::error_code ec;
    const tcp::endpoint peer = conn.stream.socket().remote_endpoint(ec);
    conn.client_address = ec ? "unknown" : peer.address().to_string();
  }
  return conn.client_address;
}

namespace {

Refusal invalidStrategy(std::string_view text, std::string_view bad_part) {
  return {400,
          "invalid routing strategy '" + std::string(text) + "' at '" + std::string(bad_part) +
              "'",
          "invalid_request_error", "invalid_routing_strategy", "routing-strategy"};
}

}  // namespace

asio::awaitable<bool> Worker::Impl::proxy(ClientConnection& conn, Request& req, bool keep_alive,
                                          JobPath job, api::ApiEndpoint endpoint) {
  ProxyPlan plan;
  plan.arrived = now();
  plan.request_id = requestId(conn, req);
  plan.generated_id = plan.request_id.data() == conn.generated_id;  // also sent upstream
  plan.keep_alive = keep_alive;
  plan.creates_job = job.kind == JobRequest::kCreate;
  observe::RequestScope observed(observer, conn.observed, plan.arrived, plan.request_id,
                                 req["traceparent"], req["x-switchyard-explain"]);

  // The API key (auth_stage.h), before anything else is looked at.
  std::optional<Refusal> refusal =
      auth.authenticate(req[http::field::authorization], conn.auth, conn.observed);
  if (refusal) co_return co_await sendRefusal(conn, *refusal, plan.request_id, keep_alive);
  const AuthSettlement settlement(auth, conn.auth, conn.observed);

  refusal = planRequest(conn, req, job, endpoint, plan);
  // The key's budgets: checked here, or with the shared admission on the replica.
  // Without a key (auth off) there are none: no coroutine frame is spent on saying so.
  if (!refusal && conn.auth.key != nullptr) {
    co_await checkKeyBudgets(conn, plan, refusal);
    if (!refusal) refusal = planRoute(req, plan, now());
  } else if (!refusal) {
    refusal = planRoute(req, plan, plan.arrived);  // no wait since the arrival's reading
  }
  if (refusal) co_return co_await sendRefusal(conn, *refusal, plan.request_id, keep_alive);

  // Session affinity: the session's pinned replica is kept while it passes the filters.
  plan.session = sessions.header().empty() ? std::string_view()
                                           : std::string_view(req[sessions.header()]);
  conn.session_pin.clear();
  if (!plan.session.empty()) {
    co_await sessions.findPin(plan.model->name, plan.session, plan.route.now, conn.session_pin);
    plan.route.preferred = plan.model->replicaIndex(conn.session_pin);
  }
  retry_budget.onRequest(plan.route.now);

  // Route, admit and forward. Requests queued before this one go first; when every replica is
  // at its limit, it queues (if the model has a queue) and tries again from the queue's head.
  AttemptOutcome outcome = AttemptOutcome::kSaturated;  // behind others: as if full
  if (plan.model->admission.queue == fleet::QueueMode::kOff || !queue.hasWaiters(*plan.model)) {
    outcome = co_await attempt(conn, req, *plan.snapshot, *plan.model, plan, refusal);
    if (outcome != AttemptOutcome::kSaturated && outcome != AttemptOutcome::kHeld) {
      settleAttempts(conn, plan, outcome, -1, refusal);
      if (outcome == AttemptOutcome::kAnswered) co_return keep_alive;
      if (outcome == AttemptOutcome::kClosed) co_return false;
      co_return co_await sendRefusal(conn, *refusal, plan.request_id, keep_alive);
    }
  }
  co_return co_await proxyQueued(conn, req, plan, outcome, refusal);
}

std::optional<Refusal> Worker::Impl::planRequest(ClientConnection& conn, Request& req,
                                                 JobPath job, api::ApiEndpoint endpoint,
                                                 ProxyPlan& plan) {
  // Read the body once: JSON through the inspector, forms through the multipart reader.
  const api::BodyReading reading =
      api::readRequestBody(endpoint, job.kind == JobRequest::kCreate,
                           req[http::field::content_type], req.body(), inspector, multipart);
  const api::InspectedRequest& info = reading.info;
  plan.client_user = info.user;
  plan.snapshot = snapshots.get();
  const fleet::FleetSnapshot* snapshot = plan.snapshot.get();
  // A video's generation happens after its creation answers: no latency here measures speed.
  plan.work_units = job.collection == "videos" ? 0 : reading.work_units;

  // The model.
  const fleet::ModelEntry* model = nullptr;
  if (reading.error != api::InspectError::kNone) {
    // Async-job endpoints need not carry a JSON body naming a model (file uploads are
    // multipart, listings have no body): they go to the default job model. A form that cannot
    // be read is refused all the same.
    const bool job_without_model =
        job.kind != JobRequest::kNone &&
        (reading.error == api::InspectError::kMissingModel ||
         (reading.error == api::InspectError::kMalformedJson && !reading.multipart));
    if (!job_without_model) {
      return Refusal{reading.status, std::string(reading.message), "invalid_request_error",
                     reading.code, reading.param};
    }
    model = snapshot ? defaultJobModel(*snapshot) : nullptr;
    if (model == nullptr || !auth.mayUse(conn.auth, model->name)) {
      return Refusal{400,
                     "this request names no model and no default is configured "
                     "(async_jobs.default_model)",
                     "invalid_request_error", "model_required", "model"};
    }
  } else {
    model = snapshot ? snapshot->findModel(info.model) : nullptr;
    // A model the key may not use is answered like one that does not exist.
    if (model == nullptr || !auth.mayUse(conn.auth, model->name)) {
      return Refusal{404, "The model `" + std::string(info.model) + "` does not exist.",
                     "invalid_request_error", "model_not_found", "model"};
    }
  }
  plan.model = model;

  // The strategy: the request's header, else the model's, else the gateway's default.
  std::string_view strategy_text = req["routing-strategy"];
  if (strategy_text.empty()) strategy_text = model->routing_strategy;
  if (strategy_text.empty()) strategy_text = snapshot->default_strategy;
  std::string_view bad_part;
  if (routing::parseStrategySpec(strategy_text, plan.spec, &bad_part) !=
      routing::SpecError::kNone) {
    return invalidStrategy(strategy_text, bad_part);
  }
  // Prefix-cache routing: the chain hashed while the body was inspected (no co_await since).
  plan.prefix = prefix.capture(plan.spec, conn.prompt_blocks);
  observer.onModel(conn.observed, *snapshot, *model, plan.spec.text);
  observer.countDemand(conn.observed);

  // The deadline: the request's own, else the model's default.
  const admission::RequestDeadline deadline = admission::parseDeadline(
      req[admission::kDeadlineMsHeader], req[admission::kTimeoutHeader]);
  if (deadline.malformed) return invalidDeadline(deadline.header);
  plan.deadline_at = admission::deadlineAt(plan.arrived, deadline.remaining, model->admission);

  // Admission before routing. The clock is read again only after a wait (a co_await).
  if (std::optional<Refusal> refused = admission.beforeRouting(*model, plan.arrived)) {
    return refused;
  }

  plan.prompt_estimate =
      static_cast<int64_t>(info.prompt_bytes / api::RequestInspector::kBytesPerPromptToken);
  plan.streamed = info.stream;
  // max_tokens is the output length admission plans with: a request that stops early finishes
  // sooner than planned, so deadline refusals err on the cautious side.
  plan.output_estimate =
      !api::plansOutputTokens(endpoint) ? 0.0
      : info.max_tokens > 0
          ? static_cast<double>(info.max_tokens)
          : model->runtime->output_lengths.estimate(static_cast<double>(plan.prompt_estimate),
                                                    kDefaultOutputTokens);
  plan.route = routing::RouteRequest{&plan.spec, plan.arrived, {}, {}};
  plan.route.shape.prompt_tokens = static_cast<double>(plan.prompt_estimate);
  plan.route.shape.max_tokens = static_cast<double>(info.max_tokens);
  return std::nullopt;
}

asio::awaitable<void> Worker::Impl::checkKeyBudgets(ClientConnection& conn, ProxyPlan& plan,
                                                    std::optional<Refusal>& refusal) {
  refusal = co_await auth.beforeRouting(
      conn.auth, *plan.model, plan.prompt_estimate + static_cast<int64_t>(plan.output_estimate),
      admission.sharesLimits(*plan.model), plan.arrived);
}

std::optional<Refusal> Worker::Impl::planRoute(const Request& req, ProxyPlan& plan, TimeNs now) {
  plan.route.now = now;
  // A hardware class the client asked for: only replicas of that GPU type.
  plan.route.gpu = req["x-switchyard-gpu"];
  const std::vector<fleet::ReplicaEntry>& replicas = plan.model->replicas;
  if (!plan.route.gpu.empty() &&
      std::none_of(replicas.begin(), replicas.end(),
                   [&](const fleet::ReplicaEntry& r) { return r.gpu == plan.route.gpu; })) {
    return Refusal{400,
                   "no replica of GPU type '" + std::string(plan.route.gpu) +
                       "' serves this model",
                   "invalid_request_error", "gpu_not_served", "x-switchyard-gpu"};
  }
  return std::nullopt;
}

asio::awaitable<bool> Worker::Impl::proxyQueued(ClientConnection& conn, Request& req,
                                                ProxyPlan& plan, AttemptOutcome outcome,
                                                std::optional<Refusal>& refusal) {
  const fleet::ModelEntry& model = *plan.model;
  const fleet::AdmissionParams& params = model.admission;
  RequestQueue::Waiter waiter(io.get_executor());
  QueueSeat seat{queue, waiter, observer, conn.observed};
  plan.seat = &seat;
  for (;;) {
    // SLO routing's pulling variant holds a request at the gateway whatever the queue mode, and
    // refuses it once its SLO can no longer be met (its TTFT or E2E objective has passed).
    if (outcome == AttemptOutcome::kHeld) plan.held = true;
    if (outcome == AttemptOutcome::kHeld && plan.slo_breach_at < 0 && model.slo) {
      const profile::Slo& objective = model.slo->objective;
      const double limit = objective.ttft > 0 ? objective.ttft : objective.e2e;
      if (limit > 0) plan.slo_breach_at = plan.arrived + static_cast<TimeNs>(limit * 1e9);
    }
    if (params.queue == fleet::QueueMode::kOff && outcome != AttemptOutcome::kHeld &&
        waiter.queue == nullptr) {
      refusal = admission.saturated();
      co_return co_await sendRefusal(conn, *refusal, plan.request_id, plan.keep_alive);
    }
    if (waiter.queue == nullptr) {
      waiter.client =
          plan.client_user.empty() ? clientAddress(conn) : std::string_view(plan.client_user);
      const RequestQueue::Entry entry = queue.enter(model, waiter, now());
      if (entry != RequestQueue::Entry::kQueued) {
        refusal = admission.queueFull(entry == RequestQueue::Entry::kClientFull);
        noteAdmission(conn, plan, seat.waited(), refusal);
        co_return co_await sendRefusal(conn, *refusal, plan.request_id, plan.keep_alive);
      }
    }
    switch (co_await waitTurn(conn, model, plan, waiter, refusal)) {
      case QueueTurn::kTurn:
        // Replicas lost to admission races may have room now; those that failed stay out.
        plan.tried_count = plan.failed_count;
        plan.admission_races = 0;
        plan.route.preferred = model.replicaIndex(conn.session_pin);
        break;
      case QueueTurn::kRefused:
        seat.release(now());
        noteAdmission(conn, plan, seat.waited(), refusal);
        co_return co_await sendRefusal(conn, *refusal, plan.request_id, plan.keep_alive);
      case QueueTurn::kClientGone:
        seat.release(now());
        observer.onClientCancelled(conn.observed, observe::CancelStage::kQueued);
        co_return false;
    }
    outcome = co_await attempt(conn, req, *plan.snapshot, model, plan, refusal);
    if (outcome != AttemptOutcome::kSaturated && outcome != AttemptOutcome::kHeld) {
      if (seat.queued()) seat.release(now());
      settleAttempts(conn, plan, outcome, seat.waited(), refusal);
      if (outcome == AttemptOutcome::kAnswered) co_return plan.keep_alive;
      if (outcome == AttemptOutcome::kClosed) co_return false;
      co_return co_await sendRefusal(conn, *refusal, plan.request_id, plan.keep_alive);
    }
  }
}

void Worker::Impl::settleAttempts(ClientConnection& conn, const ProxyPlan& plan,
                                  AttemptOutcome outcome, TimeNs waited,
                                  std::optional<Refusal>& refusal) {
  noteAdmission(conn, plan, waited, refusal);
  if (outcome != AttemptOutcome::kUnreachable && outcome != AttemptOutcome::kUnavailable) return;
  const fleet::ModelEntry& model = *plan.model;
  if (model.replicas.empty() || outcome == AttemptOutcome::kUnavailable) {
    const char* message = model.replicas.empty()
                              ? "no replica serves this model"
                              : "every replica of the model is draining or not ready";
    refusal = Refusal{503, message, "server_error", "no_replica", ""};
  } else {
    refusal = Refusal{502, "the model's replicas could not be reached", "server_error",
                      "upstream_unavailable", ""};
  }
}

asio::awaitable<AttemptOutcome> Worker::Impl::attempt(ClientConnection& conn, Request& req,
                                                      const fleet::FleetSnapshot& snapshot,
                                                      const fleet::ModelEntry& model,
                                                      ProxyPlan& plan,
                                                      std::optional<Refusal>& refusal) {
  const int max_attempts = std::min(config.retry.max_attempts, kMaxAttempts);
  const bool deadline_aware = admission::deadlineAware(model.admission, plan.deadline_at);
  const PrefixStage::Probe prefix_probe = prefix.probe(conn.prompt_blocks);
  const bool prefix_routing = plan.prefix;
  plan.route.prefix = prefix_routing ? &prefix_probe : nullptr;
  while (plan.attempts < max_attempts) {
    plan.route.tried = std::span<const int>(plan.tried.data(), plan.tried_count);
    const TimeNs routing_started = now();
    plan.route.now = routing_started;
    const routing::Decision decision = routing::route(snapshot, model, plan.route, rng, scratch);
    if (prefix_routing) prefix.onRouted(snapshot, model, decision.chosen, conn.prompt_blocks);
    const TimeNs decided_at = now();
    observer.onDecision(conn.observed, decision, routing_started, decided_at);
    if (decision.hold) co_return AttemptOutcome::kHeld;
    if (decision.chosen < 0) {
      // Replicas lost to an admission race are at their limit too (set aside as "tried").
      if (decision.saturated > 0 || plan.admission_races > 0) co_return AttemptOutcome::kSaturated;
      // Every replica the request could use (of its pinned GPU type, if any) is leaving.
      if (decision.unavailable > 0 &&
          decision.unavailable + decision.other_gpu == decision.ready) {
        co_return AttemptOutcome::kUnavailable;
      }
      co_return AttemptOutcome::kUnreachable;
    }
    const std::shared_ptr<fleet::ReplicaState>& replica = model.replicas[decision.chosen].state;
    if (decision.affinity) {  // a pinned session's request: scale-down prefers other victims
      replica->counters().affinity_requests_total.fetch_add(1, std::memory_order_relaxed);
    }

    if (!plan.session.empty() && !decision.affinity) {
      // First request of the session, or its replica is gone: pin (or re-pin) atomically. If
      // another gateway pinned it first, its choice wins and this request follows it.
      co_await sessions.pinTo(model.name, plan.session, replica->name(), now(), conn.session_pin);
      const int winner_index = model.replicaIndex(conn.session_pin);
      if (conn.session_pin != replica->name() && winner_index >= 0 &&
          ++plan.admission_races <= kMaxAdmissionRaces) {
        plan.route.preferred = winner_index;
        continue;
      }
    }

    // Deadline: a request that cannot finish in time even if it starts now is refused before it
    // costs any GPU time.
    const admission::ExecutionEstimate predicted = admission::executionIfStartedNow(
        *replica, model, static_cast<double>(plan.prompt_estimate), plan.output_estimate);
    plan.predicted = predicted.total;
    if (deadline_aware &&
        admission::cannotFinishIfStartedNow(now(), predicted.total, plan.deadline_at)) {
      refusal = admission.deadlineUnattainable(plan.deadline_at - now(), predicted.total);
      co_return AttemptOutcome::kRefused;
    }

    // Admission on the chosen replica.
    SharedAdmission shared_admission;
    const ReplicaAdmission admitted =
        admission.admitsAlone(model)
            ? AdmissionStage::onReplicaHere(model, *replica)
            : co_await admission.onReplica(model, *replica, now(), shared_admission, refusal,
                                           AuthStage::deferredQuota(conn.auth));
    if (admitted == ReplicaAdmission::kRateLimited) co_return AttemptOutcome::kRefused;
    if (admitted == ReplicaAdmission::kAtLimit) {
      if (++plan.admission_races > kMaxAdmissionRaces) co_return AttemptOutcome::kSaturated;
      plan.tried[plan.tried_count++] = decision.chosen;
      plan.route.preferred = -1;
      continue;
    }

    // Admitted: a queued request gives up its place now, not when its answer ends.
    plan.inflight = shared_admission.how();
    if (plan.seat != nullptr && plan.seat->queued()) plan.seat->release(now());

    // Forward. A failed attempt can be retried only if another replica is left and the budget
    // allows; otherwise the upstream's own error answer goes to the client.
    ++plan.attempts;
    const bool may_retry = plan.attempts < max_attempts &&
                           plan.tried_count + 1 < model.replicas.size() &&
                           retry_budget.canSpend(now());
    conn.capture_job_id = plan.creates_job;
    conn.job_id_scanned = 0;
    conn.job_id.clear();
    const ForwardResult result =
        co_await forward(conn, req, replica, model,
                         {plan.spec.text, plan.request_id, plan.generated_id,
                          plan.prompt_estimate, plan.keep_alive, may_retry,
                          ForwardMode::kNormal, plan.work_units,
                          plan.streamed ? plan.prompt_estimate : 0, plan.arrived});
    queue.slotFreed(model);  // this request's slot (whatever the result) may serve a waiter
    if (!conn.job_id.empty()) {
      shared->recordJob(conn.job_id, model.name, replica->name(), config.async_jobs.ttl);
      replica->counters().jobs_created_total.fetch_add(1, std::memory_order_relaxed);
    }
    if (result == ForwardResult::kDone) co_return AttemptOutcome::kAnswered;
    if (result == ForwardResult::kAborted) co_return AttemptOutcome::kClosed;
    // Nothing reached the client yet: try another replica if the retry budget allows. The
    // failed replica goes before any race losers, which a queue wait forgets.
    std::copy_backward(plan.tried.begin() + static_cast<ptrdiff_t>(plan.failed_count),
                       plan.tried.begin() + static_cast<ptrdiff_t>(plan.tried_count),
                       plan.tried.begin() + static_cast<ptrdiff_t>(plan.tried_count) + 1);
    plan.tried[plan.failed_count++] = decision.chosen;
    ++plan.tried_count;
    plan.route.preferred = -1;
    plan.route.now = now();
    if (!may_retry || !retry_budget.trySpend(plan.route.now)) break;
  }
  co_return AttemptOutcome::kUnreachable;
}

asio::awaitable<QueueTurn> Worker::Impl::waitTurn(ClientConnection& conn,
                                                  const fleet::ModelEntry& model,
                                                  const ProxyPlan& plan,
                                                  RequestQueue::Waiter& waiter,
                                                  std::optional<Refusal>& refusal) {
  // Re-entered at every re-check while at the queue's head: the watch's delay counts from the
  // request's arrival, not from this wait.
  const switchyard::http::PeerWatchScope watching(
      conn.watch, conn.stream.socket(), &wakeWaiter, &waiter.timer,
      {&peer_arming, std::chrono::nanoseconds(now() - plan.arrived)});
  const fleet::AdmissionParams& params = model.admission;
  for (;;) {
    waiter.timer.expires_after(asDuration(params.recheck));
    co_await waiter.timer.async_wait(kTuple);  // a re-check, or woken: a slot may be free
    if (conn.watch->gone) co_return QueueTurn::kClientGone;
    const TimeNs t = now();
    if (plan.slo_breach_at >= 0 && t > plan.slo_breach_at) {
      refusal = admission.sloBreached(t - plan.arrived);
      co_return QueueTurn::kRefused;
    }
    // Too old, or (deadline mode) its turn comes after the requests ahead of it drain, at the
    // rate this gateway has been completing the model's requests, then it runs: refused the
    // moment that no longer fits.
    const admission::QueuedCheck check = admission::recheckQueued(
        model, t, waiter.enqueued_at, plan.deadline_at, static_cast<double>(plan.prompt_estimate),
        plan.output_estimate, [&] { return queue.positionOf(waiter); });
    if (check.verdict == admission::QueuedVerdict::kTooOld) {
      refusal = admission.queueTimeout(params.max_wait);
      co_return QueueTurn::kRefused;
    }
    if (check.verdict == admission::QueuedVerdict::kCannotFinish) {
      refusal = admission.deadlineUnattainable(plan.deadline_at - t, check.wait + check.run);
      co_return QueueTurn::kRefused;
    }
    // Waiting for room goes first come first served: only the head tries. A request held for
    // its SLO tries on every re-check: whether a replica would meet it depends on its own shape,
    // so it must neither block those behind it nor wait behind them.
    if (queue.isHead(waiter) || plan.held) co_return QueueTurn::kTurn;
  }
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
  if (std::optional<Refusal> refused =
          auth.authenticate(req[http::field::authorization], conn.auth, conn.observed)) {
    co_return co_await sendRefusal(conn, *refused, request_id, keep_alive);
  }
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
           search ? ForwardMode::kFindOwner : ForwardMode::kNormal,
           job.collection == "videos" ? 0 : 1});  // a video poll says nothing of speed
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
