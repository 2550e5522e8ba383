// The request path. Every client connection is one coroutine on its worker's io_context:
// read (with size and time limits) -> inspect the body once -> look up the model -> route ->
// forward the body byte for byte -> relay the response piece by piece -> account.
// Responses are relayed, not re-serialised: the client head is written once from a reused
// buffer, and each upstream piece goes out as it arrives (chunk-framed when the length is not
// known), so a stream reaches the client token by token.
#include "gateway/worker.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "api/openai_error.h"
#include "api/request_inspector.h"
#include "admission/retry_budget.h"
#include "api/usage_scanner.h"
#include "gateway/async_jobs.h"
#include "gateway/session_cache.h"
#include "gateway/upstream_pool.h"
#include "http/listener.h"
#include "routing/router.h"

namespace switchyard::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kPieceSize = 32 * 1024;
constexpr uint64_t kUpstreamBodyLimit = uint64_t{4} << 30;
constexpr int kMaxAttempts = 10;        // upper bound of retry.max_attempts
constexpr int kMaxAdmissionRaces = 8;   // re-picks after losing an in-flight admission race
constexpr size_t kSessionCacheEntries = 65536;  // per worker
constexpr TimeNs kSessionCacheFresh = 5 * kNsPerSec;
constexpr size_t kJobIdScanBytes = 8 * 1024;  // a creation response names its id up front

std::chrono::nanoseconds asDuration(TimeNs ns) { return std::chrono::nanoseconds(ns); }

bool isHopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::transfer_encoding:
    case http::field::content_length:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
    case http::field::proxy_authorization:
    case http::field::proxy_connection:
    case http::field::host:
    case http::field::expect:
      return true;
    default:
      return false;
  }
}

void appendHeader(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

void appendStatusLine(std::string& out, unsigned status) {
  out.append("HTTP/1.1 ");
  out.append(std::to_string(status));
  out.push_back(' ');
  out.append(http::obsolete_reason(static_cast<http::status>(status)));
  out.append("\r\n");
}

enum class ForwardResult {
  kDone,                 // the response was relayed
  kFailedBeforeSending,  // upstream failed and nothing reached the client: may fail over
  kAborted,              // failed after bytes reached the client, or the client went away
};

// Per-connection state, allocated once per client connection and reused by its requests.
struct ClientConnection {
  explicit ClientConnection(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  beast::flat_buffer upstream_buffer;
  std::string head;           // response head or upstream request head
  std::string aux;            // error bodies
  std::unique_ptr<char[]> piece{new char[kPieceSize]};
  char generated_id[17] = {};
  observe::RequestRecord observed;  // metrics, decision record, spans, access log
  std::string session_pin;  // the replica the request's session is pinned to ("" if none)
  // Async jobs: scan the response for the id of the resource it created.
  bool capture_job_id = false;
  size_t job_id_scanned = 0;
  std::string job_id;
};

// Upstream responses a forward() treats specially.
enum class ForwardMode {
  kNormal,
  kFindOwner,  // looking for a resource's owner: a 404 means "not here", try the next replica
};

// Requests admitted in shared state are released when their attempt ends, however it ends.
struct SharedAdmission {
  state::SharedStateClient* client = nullptr;
  std::string_view model;
  std::string_view replica;
  SharedAdmission() = default;
  SharedAdmission(const SharedAdmission&) = delete;
  SharedAdmission& operator=(const SharedAdmission&) = delete;
  ~SharedAdmission() {
    if (client != nullptr) client->release(model, replica);
  }
};

}  // namespace

struct Worker::Impl {
  Impl(int index_in, const GatewayConfig& config_in, const fleet::FleetRegistry& registry,
       const tcp::endpoint& listen, observe::WorkerObserver& observer_in,
       state::SharedStateBackend& shared_state)
      : index(index_in),
        config(config_in),
        io(1),
        acceptor(switchyard::http::openAcceptor(io, listen, /*reuse_port=*/true)),
        snapshots(registry),
        pool(config_in.timeouts.upstream_pool_idle),
        retry_budget(config_in.retry.budget_ratio, config_in.retry.budget_min_per_second),
        rng(0x5EED0000u + static_cast<uint64_t>(index_in) * 7919u +
            static_cast<uint64_t>(SteadyClock::instance().now())),
        sweep_timer(io),
        observer(observer_in),
        shared(shared_state.makeClient(io.get_executor())),
        sessions(kSessionCacheEntries, kSessionCacheFresh) {
    observer.setExecutor([this](std::function<void()> job) { asio::post(io, std::move(job)); });
  }

  int index;
  const GatewayConfig config;  // a copy: the control thread edits its own on reload
  asio::io_context io;
  tcp::acceptor acceptor;
  fleet::SnapshotCache snapshots;
  UpstreamPool pool;
  admission::RetryBudget retry_budget;
  api::RequestInspector inspector;
  routing::RoutingScratch scratch;
  Rng rng;
  asio::steady_timer sweep_timer;
  std::atomic<int64_t> inflight{0};
  std::atomic<bool> stopping{false};
  observe::WorkerObserver& observer;
  std::unique_ptr<state::SharedStateClient> shared;
  SessionCache sessions;
  bool shared_degraded = false;  // the last shared-state call degraded (logged once per episode)

  TimeNs now() const { return SteadyClock::instance().now(); }

  asio::awaitable<void> acceptLoop();
  asio::awaitable<void> sweepLoop();
  asio::awaitable<void> serve(tcp::socket socket);
  asio::awaitable<bool> handle(ClientConnection& conn, http::request<http::string_body>& req);
  asio::awaitable<bool> proxy(ClientConnection& conn, http::request<http::string_body>& req,
                              bool keep_alive, JobPath job);
  asio::awaitable<bool> proxyToOwner(ClientConnection& conn,
                                     http::request<http::string_body>& req, bool keep_alive,
                                     JobPath job);
  const fleet::ModelEntry* defaultJobModel(const fleet::FleetSnapshot& snapshot) const;
  std::string_view requestId(ClientConnection& conn, const http::request<http::string_body>& req);
  void noteSharedState(bool degraded);
  asio::awaitable<ForwardResult> forward(ClientConnection& conn,
                                         http::request<http::string_body>& req,
                                         const std::shared_ptr<fleet::ReplicaState>& replica,
                                         const fleet::ModelEntry& model,
                                         std::string_view strategy, std::string_view request_id,
                                         bool generated_id, int64_t prompt_estimate,
                                         bool keep_alive, bool may_retry,
                                         ForwardMode mode = ForwardMode::kNormal);
  asio::awaitable<bool> sendError(ClientConnection& conn, unsigned status,
                                  std::string_view message, std::string_view type,
                                  std::string_view code, std::string_view param,
                                  std::string_view request_id, bool keep_alive);
  // When a response ran, and the replica's load (requests in flight, all gateways) around it.
  struct ResponseTiming {
    TimeNs started;
    TimeNs first_byte_at;  // -1 when no byte came
    TimeNs finished;
    int64_t streams_at_start;
    int64_t streams_at_end;
  };
  void accountCompletion(fleet::ReplicaCounters& counters, unsigned status,
                         const api::UsageScanner& scanner, bool event_stream,
                         int64_t prompt_estimate, const ResponseTiming& timing);
  asio::awaitable<bool> sendJson(ClientConnection& conn, unsigned status, std::string_view body,
                                 std::string_view request_id, bool keep_alive,
                                 std::string_view retry_after = {});
  asio::awaitable<UpstreamPool::Stream> connect(const fleet::ReplicaState& replica,
                                                TimeNs timeout);
  asio::awaitable<bool> sendRejection(ClientConnection& conn, std::string_view code,
                                      std::string_view message, TimeNs retry_after,
                                      std::string_view request_id, bool keep_alive);
};

asio::awaitable<void> Worker::Impl::acceptLoop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // Out of descriptors or a transient error: keep serving the connections we have.
      spdlog::warn("worker {}: accept failed: {}", index, ec.message());
      asio::steady_timer pause(io, std::chrono::milliseconds(50));
      co_await pause.async_wait(kTuple);
      continue;
    }
    asio::co_spawn(io, serve(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> Worker::Impl::sweepLoop() {
  while (!stopping.load(std::memory_order_relaxed)) {
    sweep_timer.expires_after(std::chrono::seconds(1));
    auto [ec] = co_await sweep_timer.async_wait(kTuple);
    if (ec) co_return;
    pool.sweep(now());
  }
}

asio::awaitable<void> Worker::Impl::serve(tcp::socket socket) {
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  ClientConnection conn(std::move(socket));
  bool first = true;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(config.max_body_bytes);
    conn.stream.expires_after(
        asDuration(first ? config.timeouts.client_header : config.timeouts.client_idle));
    first = false;
    auto [ec, n] = co_await http::async_read_header(conn.stream, conn.buffer, parser, kTuple);
    if (!ec && !parser.is_done()) {
      conn.stream.expires_after(asDuration(config.timeouts.client_header));
      auto& req = parser.get();
      if (beast::iequals(req[http::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [wec, wn] = co_await asio::async_write(conn.stream, asio::buffer(kContinue), kTuple);
        if (wec) break;
      }
      std::tie(ec, n) = co_await http::async_read(conn.stream, conn.buffer, parser, kTuple);
    }
    if (ec == http::error::body_limit) {
      const std::string message = "request body is larger than the limit of " +
                                  std::to_string(config.max_body_bytes) + " bytes";
      co_await sendError(conn, 413, message, "invalid_request_error", "request_too_large", "",
                         "", false);
      break;
    }
    if (ec == http::error::header_limit) {
      co_await sendError(conn, 431, "request headers are too large", "invalid_request_error",
                         "", "", "", false);
      break;
    }
    if (ec) {
      // End of stream, timeout or a reset: nothing to answer. A syntax error gets a 400.
      if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
          ec != http::error::end_of_stream && ec != http::error::partial_message) {
        co_await sendError(conn, 400, "malformed HTTP request", "invalid_request_error", "", "",
                           "", false);
      }
      break;
    }
    inflight.fetch_add(1, std::memory_order_relaxed);
    bool keep_alive = false;
    try {
      keep_alive = co_await handle(conn, parser.get());
    } catch (const std::exception& e) {
      // Defensive: the request path reports failures as values; anything thrown is a bug, and
      // it costs this connection, never the worker.
      spdlog::error("worker {}: request failed: {}", index, e.what());
      keep_alive = false;
    }
    inflight.fetch_sub(1, std::memory_order_relaxed);
    if (!keep_alive || stopping.load(std::memory_order_relaxed)) break;
  }
  conn.stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  conn.stream.socket().close(ignored);
}

asio::awaitable<bool> Worker::Impl::handle(ClientConnection& conn,
                                           http::request<http::string_body>& req) {
  const bool keep_alive = req.keep_alive() && !stopping.load(std::memory_order_relaxed);
  std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/embeddings") {
    if (req.method() != http::verb::post) {
      co_return co_await sendError(conn, 405, "use POST for this endpoint",
                                   "invalid_request_error", "method_not_allowed", "", "",
                                   keep_alive);
    }
    co_return co_await proxy(conn, req, keep_alive, {});
  }
  if (const JobPath job = config.async_jobs.enabled
                              ? classifyJobPath(path, req.method() == http::verb::post)
                              : JobPath{};
      job.kind != JobRequest::kNone) {
    if (job.kind == JobRequest::kFollowUp) {
      co_return co_await proxyToOwner(conn, req, keep_alive, job);
    }
    co_return co_await proxy(conn, req, keep_alive, job);
  }
  if (path == "/v1/models") {
    if (req.method() != http::verb::get) {
      co_return co_await sendError(conn, 405, "use GET for this endpoint",
                                   "invalid_request_error", "method_not_allowed", "", "",
                                   keep_alive);
    }
    const auto snapshot = snapshots.get();
    conn.aux.assign(R"({"object":"list","data":[)");
    for (size_t i = 0; snapshot && i < snapshot->models.size(); ++i) {
      if (i) conn.aux.push_back(',');
      conn.aux.append(R"({"id":")");
      api::appendJsonEscaped(conn.aux, snapshot->models[i].name);
      conn.aux.append(R"(","object":"model","created":0,"owned_by":"switchyard"})");
    }
    conn.aux.append("]}");
    const std::string body = std::move(conn.aux);
    co_return co_await sendJson(conn, 200, body, "", keep_alive);
  }
  co_return co_await sendError(conn, 404, "no route for " + std::string(path),
                               "invalid_request_error", "not_found", "", "", keep_alive);
}

asio::awaitable<bool> Worker::Impl::proxy(ClientConnection& conn,
                                          http::request<http::string_body>& req,
                                          bool keep_alive, JobPath job) {
  const std::string_view request_id = requestId(conn, req);
  const bool generated_id = request_id.data() == conn.generated_id;  // also sent upstream
  observe::RequestScope observed(observer, conn.observed, now(), request_id, req["traceparent"],
                                 req["x-switchyard-explain"]);

  std::string& body = req.body();
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: reserve them instead of copying.
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  api::InspectedRequest info;
  const api::InspectError inspect_error =
      inspector.inspect(body.data(), body.size(), body.capacity(), info);
  const std::shared_ptr<const fleet::FleetSnapshot> snapshot = snapshots.get();
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

  std::string_view strategy_text = req["routing-strategy"];
  if (strategy_text.empty()) strategy_text = model->routing_strategy;
  if (strategy_text.empty()) strategy_text = snapshot->default_strategy;
  routing::StrategySpec spec;
  std::string_view bad_part;
  if (routing::parseStrategySpec(strategy_text, spec, &bad_part) != routing::SpecError::kNone) {
    co_return co_await sendError(
        conn, 400,
        "invalid routing strategy '" + std::string(strategy_text) + "' at '" +
            std::string(bad_part) + "'",
        "invalid_request_error", "invalid_routing_strategy", "routing-strategy", request_id,
        keep_alive);
  }

  observer.onModel(conn.observed, *snapshot, *model, spec.text);

  // Limits shared across gateways are checked together after routing, in one round trip to the
  // shared state; a single gateway (or shared state that does not answer) decides locally.
  const int64_t limit = model->limits.max_inflight_per_replica;
  const double per_replica_rate = model->limits.requests_per_second_per_replica;
  const bool shared_limits = shared->distributed() && (limit > 0 || per_replica_rate > 0);

  // Model-wide rate limit: per-replica RPS x routable replicas, shared by all workers.
  if (per_replica_rate > 0 && !shared_limits) {
    const TimeNs wait = model->runtime->rate.tryAcquire(now());
    if (wait > 0) {
      observer.countRejected(observe::LimitKind::kModelRate);
      co_return co_await sendRejection(conn, "model_rate_limit_exceeded",
                                       "the model's request rate limit is exceeded", wait,
                                       request_id, keep_alive);
    }
  }

  const int64_t prompt_estimate =
      static_cast<int64_t>(info.prompt_bytes / api::RequestInspector::kBytesPerPromptToken);
  std::array<int, kMaxAttempts + kMaxAdmissionRaces> tried{};
  size_t tried_count = 0;
  routing::RouteRequest route_request{&spec, now(), {}, {}};
  route_request.shape.prompt_tokens = static_cast<double>(prompt_estimate);
  route_request.shape.max_tokens = static_cast<double>(info.max_tokens);

  // Session affinity: the session's pinned replica is kept while it passes the filters.
  const std::string_view session =
      config.session_affinity.enabled ? std::string_view(req[config.session_affinity.header])
                                      : std::string_view();
  conn.session_pin.clear();
  if (!session.empty()) {
    const std::string_view cached = sessions.find(model->name, session, route_request.now);
    if (!cached.empty()) {
      conn.session_pin.assign(cached);
    } else {
      const state::SessionPin pin =
          co_await shared->lookupSession(model->name, session, config.session_affinity.ttl);
      noteSharedState(pin.degraded);
      conn.session_pin = pin.replica;
      if (!pin.replica.empty()) sessions.store(model->name, session, pin.replica, now());
    }
    route_request.preferred = model->replicaIndex(conn.session_pin);
  }

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
      const state::SessionPin pin = co_await shared->pinSession(
          model->name, session, conn.session_pin, replica->name(), config.session_affinity.ttl);
      noteSharedState(pin.degraded);
      const std::string& winner = pin.degraded || pin.replica.empty() ? replica->name()
                                                                       : pin.replica;
      sessions.store(model->name, session, winner, now());
      conn.session_pin = winner;
      const int winner_index = model->replicaIndex(winner);
      if (winner != replica->name() && winner_index >= 0 &&
          ++admission_races <= kMaxAdmissionRaces) {
        route_request.preferred = winner_index;
        continue;
      }
    }

    // Check-and-admit: the filter saw the replica under its limit, but another worker may have
    // admitted a request since. The increment is the admission; undo it and pick again if it
    // overshot. Other gateways' requests count too (as last read from shared state).
    fleet::ReplicaCounters& counters = replica->counters();
    const int64_t before = counters.running.fetch_add(1, std::memory_order_relaxed);
    bool lost_race = limit > 0 && before + replica->remoteRunning() >= limit;
    SharedAdmission shared_admission;
    if (!lost_race && shared_limits) {
      const double model_rate =
          per_replica_rate *
          std::max(1, model->runtime->routable_replicas.load(std::memory_order_relaxed));
      const state::AdmitResult admitted = co_await shared->admit(
          {model->name, replica->name(), limit, model_rate, std::max(1.0, model_rate)});
      noteSharedState(admitted.verdict == state::AdmitVerdict::kDegraded);
      switch (admitted.verdict) {
        case state::AdmitVerdict::kAdmitted:
          shared_admission.client = shared.get();
          shared_admission.model = model->name;
          shared_admission.replica = replica->name();
          break;
        case state::AdmitVerdict::kInflightLimit:
          lost_race = true;
          break;
        case state::AdmitVerdict::kRateLimited:
          counters.running.fetch_sub(1, std::memory_order_relaxed);
          observer.countRejected(observe::LimitKind::kModelRate);
          co_return co_await sendRejection(conn, "model_rate_limit_exceeded",
                                           "the model's request rate limit is exceeded",
                                           admitted.retry_after, request_id, keep_alive);
        case state::AdmitVerdict::kDegraded:
          // Local decisions: the in-flight check above used the last global view; the rate
          // limit falls back to this gateway's share of the model-wide rate.
          if (per_replica_rate > 0) {
            if (const TimeNs wait = model->runtime->rate.tryAcquire(now()); wait > 0) {
              counters.running.fetch_sub(1, std::memory_order_relaxed);
              observer.countRejected(observe::LimitKind::kModelRate);
              co_return co_await sendRejection(conn, "model_rate_limit_exceeded",
                                               "the model's request rate limit is exceeded",
                                               wait, request_id, keep_alive);
            }
          }
          break;
      }
    }
    if (lost_race) {
      counters.running.fetch_sub(1, std::memory_order_relaxed);
      if (++admission_races > kMaxAdmissionRaces) {
        saturated = true;
        break;
      }
      tried[tried_count++] = decision.chosen;
      route_request.preferred = -1;
      continue;
    }
    ++attempts;
    // A failed attempt can be retried only if another replica is left and the budget allows;
    // otherwise the upstream's own error answer goes to the client.
    const bool may_retry = attempts < max_attempts &&
                           tried_count + 1 < model->replicas.size() &&
                           retry_budget.canSpend(now());
    conn.capture_job_id = job.kind == JobRequest::kCreate;
    conn.job_id_scanned = 0;
    conn.job_id.clear();
    const ForwardResult result =
        co_await forward(conn, req, replica, *model, spec.text, request_id, generated_id,
                         prompt_estimate, keep_alive, may_retry);
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
    observer.countRejected(observe::LimitKind::kReplicaInflight);
    co_return co_await sendRejection(conn, "replica_inflight_limit",
                                     "every replica of the model is at its in-flight limit",
                                     kNsPerSec, request_id, keep_alive);
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
std::string_view Worker::Impl::requestId(ClientConnection& conn,
                                         const http::request<http::string_body>& req) {
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

asio::awaitable<bool> Worker::Impl::proxyToOwner(ClientConnection& conn,
                                                 http::request<http::string_body>& req,
                                                 bool keep_alive, JobPath job) {
  const std::string_view request_id = requestId(conn, req);
  const bool generated_id = request_id.data() == conn.generated_id;  // also sent upstream
  observe::RequestScope observed(observer, conn.observed, now(), request_id, req["traceparent"],
                                 req["x-switchyard-explain"]);
  conn.capture_job_id = false;  // a follow-up names its resource; nothing new to record
  const std::shared_ptr<const fleet::FleetSnapshot> snapshot = snapshots.get();
  const state::JobOwner owner = co_await shared->lookupJob(job.id);
  noteSharedState(owner.degraded);

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
      const ForwardResult result =
          co_await forward(conn, req, replica, model, "async-job", request_id, generated_id, 0,
                           keep_alive, /*may_retry=*/false,
                           search ? ForwardMode::kFindOwner : ForwardMode::kNormal);
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

void Worker::Impl::noteSharedState(bool degraded) {
  if (degraded == shared_degraded) return;
  shared_degraded = degraded;
  if (degraded) {
    spdlog::warn("worker {}: shared state is not answering; deciding locally", index);
  } else {
    spdlog::info("worker {}: shared state answers again", index);
  }
}

asio::awaitable<bool> Worker::Impl::sendRejection(ClientConnection& conn, std::string_view code,
                                                  std::string_view message, TimeNs retry_after,
                                                  std::string_view request_id, bool keep_alive) {
  api::OpenAiError error{message, api::kRateLimitError, std::nullopt, code};
  conn.aux.clear();
  api::appendErrorBody(conn.aux, error);
  const std::string body = std::move(conn.aux);
  // Whole seconds, rounded up, at least 1 (RFC 9110 delay-seconds).
  const TimeNs seconds = std::max<TimeNs>(1, (retry_after + kNsPerSec - 1) / kNsPerSec);
  char retry_header[32];
  const int len = std::snprintf(retry_header, sizeof retry_header, "%lld",
                                static_cast<long long>(seconds));
  co_return co_await sendJson(conn, 429, body, request_id, keep_alive,
                              std::string_view(retry_header, static_cast<size_t>(len)));
}

asio::awaitable<UpstreamPool::Stream> Worker::Impl::connect(const fleet::ReplicaState& replica,
                                                            TimeNs timeout) {
  auto owned = std::make_unique<beast::tcp_stream>(io);
  beast::tcp_stream& stream = *owned;
  stream.expires_after(asDuration(timeout));
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(replica.host(), ec);
  if (!ec) {
    std::tie(ec) = co_await stream.async_connect(tcp::endpoint(address, replica.port()), kTuple);
  } else {
    tcp::resolver resolver(io);
    auto [rec, results] =
        co_await resolver.async_resolve(replica.host(), std::to_string(replica.port()), kTuple);
    ec = rec;
    if (!ec) std::tie(ec, std::ignore) = co_await stream.async_connect(results, kTuple);
  }
  if (ec) co_return nullptr;
  boost::system::error_code ignored;
  stream.socket().set_option(tcp::no_delay(true), ignored);
  co_return owned;
}

asio::awaitable<ForwardResult> Worker::Impl::forward(
    ClientConnection& conn, http::request<http::string_body>& req,
    const std::shared_ptr<fleet::ReplicaState>& replica, const fleet::ModelEntry& model,
    std::string_view strategy, std::string_view request_id, bool generated_id,
    int64_t prompt_estimate, bool keep_alive, bool may_retry, ForwardMode mode) {
  const TimeNs started = now();
  const int64_t streams_at_start = replica->globalRunning();  // this request included
  TimeNs first_byte_at = -1;
  fleet::ReplicaCounters& counters = replica->counters();
  // The caller admitted the request (incremented `running`); this releases it.
  counters.requests_total.fetch_add(1, std::memory_order_relaxed);
  struct RunningGuard {
    fleet::ReplicaCounters& c;
    ~RunningGuard() { c.running.fetch_sub(1, std::memory_order_relaxed); }
  } running_guard{counters};

  // The upstream request head: the client's end-to-end headers, our framing.
  std::string& head = conn.head;
  head.clear();
  head.append(http::to_string(req.method())).push_back(' ');
  head.append(req.target()).append(" HTTP/1.1\r\n");
  appendHeader(head, "Host", replica->name());
  for (const auto& field : req) {
    if (isHopByHop(field.name())) continue;
    if (observer.replacesUpstreamHeader(field.name_string())) continue;
    appendHeader(head, field.name_string(), field.value());
  }
  appendHeader(head, "Content-Length", std::to_string(req.body().size()));
  if (generated_id) appendHeader(head, "x-request-id", request_id);
  observer.appendUpstreamHeaders(conn.observed, head);
  head.append("\r\n");

  UpstreamPool::Stream upstream = pool.take(replica.get(), now());
  std::optional<http::response_parser<http::buffer_body>> parser;
  for (int tries = 0;; ++tries) {
    const bool reused = upstream != nullptr;
    if (!upstream) {
      upstream = co_await connect(*replica, model.timeouts.connect);
      if (!upstream) {
        counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
        replica->recordFailure();
        observer.onUpstreamError(conn.observed, observe::UpstreamErrorKind::kConnect);
        spdlog::warn("request {}: cannot connect to {}", request_id, replica->name());
        co_return ForwardResult::kFailedBeforeSending;
      }
    }
    upstream->expires_after(asDuration(model.timeouts.first_byte));
    const std::array<asio::const_buffer, 2> request_buffers = {asio::buffer(head),
                                                               asio::buffer(req.body())};
    auto [wec, wn] = co_await asio::async_write(*upstream, request_buffers, kTuple);
    boost::system::error_code ec = wec;
    conn.upstream_buffer.clear();
    if (!ec) {
      parser.emplace();
      parser->body_limit(kUpstreamBodyLimit);
      std::tie(ec, std::ignore) =
          co_await http::async_read_header(*upstream, conn.upstream_buffer, *parser, kTuple);
    }
    if (!ec) break;
    upstream.reset();
    // A pooled connection the engine closed in the meantime fails this way: retry once on a
    // fresh connection before calling the replica failed.
    if (reused && tries == 0) continue;
    counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica->recordFailure();
    observer.onUpstreamError(conn.observed, ec == beast::error::timeout
                                                ? observe::UpstreamErrorKind::kTimeout
                                                : observe::UpstreamErrorKind::kReset);
    spdlog::warn("request {}: {} failed before responding: {}", request_id, replica->name(),
                 ec.message());
    co_return ForwardResult::kFailedBeforeSending;
  }

  auto& response = parser->get();
  const unsigned status = response.result_int();
  observer.onResponse(conn.observed, status);  // counts a 5xx as an upstream error
  if (status >= 500) {
    counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica->recordFailure();
    if (may_retry) {
      // Nothing was sent to the client: drop this answer and let another replica try.
      spdlog::warn("request {}: {} answered {}, retrying elsewhere", request_id,
                   replica->name(), status);
      co_return ForwardResult::kFailedBeforeSending;
    }
  }
  if (mode == ForwardMode::kFindOwner && status == 404) {
    // Not this replica's resource. The unread body stays on the connection: drop it.
    replica->recordSuccess();
    co_return ForwardResult::kFailedBeforeSending;
  }
  const boost::optional<uint64_t> content_length = parser->content_length();
  const bool chunk_to_client = !content_length.has_value();
  const bool capture_job_id = conn.capture_job_id && status >= 200 && status < 300;

  head.clear();
  appendStatusLine(head, status);
  for (const auto& field : response) {
    if (isHopByHop(field.name())) continue;
    appendHeader(head, field.name_string(), field.value());
  }
  appendHeader(head, "x-request-id", request_id);
  appendHeader(head, "routing-strategy", strategy);
  appendHeader(head, "target-pod", replica->name());
  observer.appendResponseHeaders(conn.observed, head);  // x-switchyard-decision when asked
  if (chunk_to_client) {
    appendHeader(head, "Transfer-Encoding", "chunked");
  } else {
    appendHeader(head, "Content-Length", std::to_string(*content_length));
  }
  if (!keep_alive) appendHeader(head, "Connection", "close");
  head.append("\r\n");

  const bool event_stream =
      beast::iequals(response[http::field::content_type].substr(0, 17), "text/event-stream");
  api::UsageScanner scanner(event_stream ? api::UsageScanner::Mode::kSse
                                         : api::UsageScanner::Mode::kJson);
  bool head_sent = false;
  char chunk_prefix[24];
  static constexpr std::string_view kCrlf = "\r\n";
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";
  for (;;) {
    size_t got = 0;
    if (!parser->is_done()) {
      response.body().data = conn.piece.get();
      response.body().size = kPieceSize;
      upstream->expires_after(asDuration(model.timeouts.idle));
      auto [ec, n] = co_await http::async_read_some(*upstream, conn.upstream_buffer, *parser,
                                                    kTuple);
      if (ec == http::error::need_buffer) ec = {};
      got = kPieceSize - response.body().size;
      if (ec) {
        counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
        replica->recordFailure();
        observer.onUpstreamError(conn.observed, ec == beast::error::timeout
                                                    ? observe::UpstreamErrorKind::kTimeout
                                                    : observe::UpstreamErrorKind::kReset);
        spdlog::warn("request {}: {} failed mid-response: {}", request_id, replica->name(),
                     ec.message());
        co_return head_sent ? ForwardResult::kAborted : ForwardResult::kFailedBeforeSending;
      }
    }
    const bool done = parser->is_done();
    if (got == 0 && !done) continue;
    if (got > 0) {
      if (first_byte_at < 0) first_byte_at = now();
      scanner.feed(std::string_view(conn.piece.get(), got));
      if (capture_job_id && conn.job_id.empty() && conn.job_id_scanned < kJobIdScanBytes) {
        conn.job_id_scanned += got;
        conn.job_id.assign(findResourceId(std::string_view(conn.piece.get(), got)));
      }
    }

    std::array<asio::const_buffer, 5> out;
    size_t count = 0;
    if (!head_sent) out[count++] = asio::buffer(head);
    if (got > 0) {
      if (chunk_to_client) {
        const int len = std::snprintf(chunk_prefix, sizeof chunk_prefix, "%zx\r\n", got);
        out[count++] = asio::buffer(chunk_prefix, static_cast<size_t>(len));
      }
      out[count++] = asio::buffer(conn.piece.get(), got);
      if (chunk_to_client) out[count++] = asio::buffer(kCrlf);
    }
    if (done && chunk_to_client) out[count++] = asio::buffer(kLastChunk);
    conn.stream.expires_after(asDuration(config.timeouts.client_write));
    auto [wec, wn] = co_await asio::async_write(
        conn.stream, std::span<const asio::const_buffer>(out.data(), count), kTuple);
    head_sent = true;
    if (wec) co_return ForwardResult::kAborted;  // the client went away; drop the upstream
    if (done) break;
  }

  const TimeNs finished = now();
  accountCompletion(counters, status, scanner, event_stream, prompt_estimate,
                    {started, first_byte_at, finished, streams_at_start, replica->globalRunning()});
  observer.onComplete(conn.observed, first_byte_at,
                      scanner.promptTokens() > 0 ? scanner.promptTokens() : prompt_estimate,
                      scanner.completionTokens(), finished);
  if (status >= 500) {
    // already recorded as a failure above
  } else if (event_stream && status == 200 && !scanner.sawDone()) {
    // A stream that ended without its terminator: the client got a truncated answer.
    counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica->recordFailure();
  } else {
    replica->recordSuccess();  // 4xx are the request's fault, not the replica's
  }
  if (parser->keep_alive()) pool.give(replica, std::move(upstream), now());
  co_return ForwardResult::kDone;
}

void Worker::Impl::accountCompletion(fleet::ReplicaCounters& counters, unsigned status,
                                     const api::UsageScanner& scanner, bool event_stream,
                                     int64_t prompt_estimate, const ResponseTiming& timing) {
  const auto [started, first_byte_at, finished, streams_at_start, streams_at_end] = timing;
  if (status != 200) return;  // only successful work says something about speed
  const int64_t output = scanner.completionTokens();
  const int64_t prompt = scanner.promptTokens() > 0 ? scanner.promptTokens() : prompt_estimate;
  if (prompt > 0) counters.input_tokens_total.fetch_add(prompt, std::memory_order_relaxed);
  if (output > 0) {
    counters.output_tokens_total.fetch_add(output, std::memory_order_relaxed);
    // Time per token: after the first byte for streams (decode only), whole latency otherwise.
    const bool decode_only = event_stream && first_byte_at > started;
    const int64_t timed = decode_only ? output - 1 : output;
    if (timed > 0) {
      counters.token_time_ns_total.fetch_add(finished - (decode_only ? first_byte_at : started),
                                             std::memory_order_relaxed);
      counters.timed_tokens_total.fetch_add(timed, std::memory_order_relaxed);
      counters.token_concurrency_total.fetch_add(timed * (streams_at_start + streams_at_end),
                                                 std::memory_order_relaxed);
    }
  } else {
    // Embeddings and other tokenless work: capacity is learned as inverse latency.
    counters.tokenless_requests_total.fetch_add(1, std::memory_order_relaxed);
    counters.tokenless_latency_ns_total.fetch_add(finished - started, std::memory_order_relaxed);
  }
  // A stream's first byte marks the end of prefill (and of any queueing before it).
  if (event_stream && prompt > 0 && first_byte_at > started) {
    counters.prefill_tokens_total.fetch_add(prompt, std::memory_order_relaxed);
    counters.prefill_ns_total.fetch_add(first_byte_at - started, std::memory_order_relaxed);
  }
}

asio::awaitable<bool> Worker::Impl::sendJson(ClientConnection& conn, unsigned status,
                                             std::string_view body, std::string_view request_id,
                                             bool keep_alive, std::string_view retry_after) {
  conn.observed.status = status;  // the status the client gets, for the request's metrics
  std::string& head = conn.head;
  head.clear();
  appendStatusLine(head, status);
  appendHeader(head, "Content-Type", "application/json");
  appendHeader(head, "Content-Length", std::to_string(body.size()));
  if (!request_id.empty()) appendHeader(head, "x-request-id", request_id);
  if (!retry_after.empty()) appendHeader(head, "Retry-After", retry_after);
  if (!keep_alive) appendHeader(head, "Connection", "close");
  head.append("\r\n");
  const std::array<asio::const_buffer, 2> buffers = {asio::buffer(head), asio::buffer(body)};
  conn.stream.expires_after(asDuration(config.timeouts.client_write));
  auto [ec, n] = co_await asio::async_write(conn.stream, buffers, kTuple);
  co_return keep_alive && !ec;
}

asio::awaitable<bool> Worker::Impl::sendError(ClientConnection& conn, unsigned status,
                                              std::string_view message, std::string_view type,
                                              std::string_view code, std::string_view param,
                                              std::string_view request_id, bool keep_alive) {
  api::OpenAiError error{message, type, std::nullopt, std::nullopt};
  if (!param.empty()) error.param = param;
  if (!code.empty()) error.code = code;
  conn.aux.clear();
  api::appendErrorBody(conn.aux, error);
  const std::string body = std::move(conn.aux);
  co_return co_await sendJson(conn, status, body, request_id, keep_alive);
}

Worker::Worker(int index, const GatewayConfig& config, const fleet::FleetRegistry& registry,
               const tcp::endpoint& listen, observe::WorkerObserver& observer,
               state::SharedStateBackend& shared_state)
    : impl_(std::make_unique<Impl>(index, config, registry, listen, observer, shared_state)) {}

Worker::~Worker() = default;

uint16_t Worker::port() const { return impl_->acceptor.local_endpoint().port(); }

void Worker::run() {
  asio::co_spawn(impl_->io, impl_->acceptLoop(), asio::detached);
  asio::co_spawn(impl_->io, impl_->sweepLoop(), asio::detached);
  impl_->io.run();
}

void Worker::beginShutdown() {
  impl_->stopping.store(true, std::memory_order_relaxed);
  asio::post(impl_->io, [impl = impl_.get()] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    impl->sweep_timer.cancel();
  });
}

void Worker::stop() { impl_->io.stop(); }

int64_t Worker::inflight() const { return impl_->inflight.load(std::memory_order_relaxed); }

const state::SharedStateStats& Worker::sharedStateStats() const { return impl_->shared->stats(); }

}  // namespace switchyard::gateway
