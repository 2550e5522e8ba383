// The request path's internals, shared by the files that implement its stages (internal header:
// included by the gateway's request-path sources only; it brings in Beast).
//
// Every client connection is one coroutine on its worker's io_context:
//
//   worker.cc            accept; read a request (size and time limits); dispatch by path
//   request_pipeline.cc  identify and observe the request -> inspect the body once -> resolve
//                        the model and strategy -> admission (admission_stage.h) -> session
//                        (session_stage.h) -> route (routing/router.h) -> admit on the replica
//                        -> forward; retries and failover
//   forwarder.cc         forward the body byte for byte on a pooled connection, relay the
//                        response piece by piece, then account (fleet/completion_accounting.h)
//   local_answers.cc     answers the gateway gives itself (errors, refusals, /v1/models)
//
// Observation (observe/observer.h) happens at the boundaries of these stages.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "admission/client_limits.h"
#include "admission/retry_budget.h"
#include "api/request_body.h"
#include "api/request_inspector.h"
#include "auth/tls_context.h"
#include "gateway/admission_stage.h"
#include "gateway/answer_parser.h"
#include "gateway/async_jobs.h"
#include "gateway/auth_stage.h"
#include "gateway/config.h"
#include "gateway/prefix_stage.h"
#include "gateway/refusal.h"
#include "gateway/request_queue.h"
#include "gateway/security_plane.h"
#include "gateway/session_stage.h"
#include "gateway/shared_state_notice.h"
#include "gateway/upstream_pool.h"
#include "gateway/worker.h"
#include "http/accept_pause.h"
#include "http/connection_stream.h"
#include "http/peer_watch.h"
#include "http/recycling_allocator.h"
#include "routing/router.h"

namespace switchyard::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
// Its header fields' nodes are recycled by the worker's thread (http/recycling_allocator.h).
using RequestFields = http::basic_fields<switchyard::http::RecyclingAllocator<char>>;
using Request = http::request<http::string_body, RequestFields>;
inline constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

inline constexpr size_t kPieceSize = 32 * 1024;
// The largest request body string a connection keeps for its next request (ClientConnection::
// spare_body): most chat bodies fit; a long prompt's memory goes back to the heap.
inline constexpr size_t kSpareBodyBytes = 8 * 1024;
// How long a request runs before the gateway watches its client for leaving (PeerWatchArming):
// short enough that abandoned work stops within a tick of it, long enough that the requests
// answered within milliseconds never pay for a watch.
inline constexpr std::chrono::milliseconds kPeerWatchDelay{50};
inline constexpr uint64_t kUpstreamBodyLimit = uint64_t{4} << 30;
inline constexpr int kMaxAttempts = 10;       // upper bound of retry.max_attempts
inline constexpr int kMaxAdmissionRaces = 8;  // re-picks after losing an in-flight admission race
inline constexpr size_t kJobIdScanBytes = 8 * 1024;  // a creation response names its id up front

inline std::chrono::nanoseconds asDuration(TimeNs ns) { return std::chrono::nanoseconds(ns); }

inline void appendHeader(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}
void appendStatusLine(std::string& out, unsigned status);

enum class ForwardResult {
  kDone,                 // the response was relayed
  kFailedBeforeSending,  // upstream failed and nothing reached the client: may fail over
  kAborted,              // failed after bytes reached the client, or the client went away
};

// Upstream responses a forward() treats specially.
enum class ForwardMode {
  kNormal,
  kFindOwner,  // looking for a resource's owner: a 404 means "not here", try the next replica
};

// Per-connection state, allocated once per client connection and reused by its requests.
struct ClientConnection {
  // TLS with `tls` (the listener's current context; the handshake comes next), else plain.
  ClientConnection(tcp::socket socket, std::shared_ptr<asio::ssl::context> tls)
      : stream(std::move(socket), std::move(tls)) {}
  switchyard::http::ConnectionStream stream;
  // Watches the client while its request is upstream: a client that leaves cancels it.
  std::shared_ptr<switchyard::http::PeerWatch> watch =
      std::make_shared<switchyard::http::PeerWatch>();
  beast::flat_buffer buffer;
  beast::flat_buffer upstream_buffer;
  std::string head;  // response head or upstream request head
  std::string answer_fields;  // the replica's end-to-end header fields (AnswerParser)
  std::string aux;   // error bodies
  // The last request's body string, cleared, for the next request on this connection: its
  // memory is reused (and warm) instead of one malloc and free per request. Kept only when
  // small (kSpareBodyBytes), so an idle connection does not hold a large body's memory.
  std::string spare_body;
  std::unique_ptr<char[]> piece{new char[kPieceSize]};
  char generated_id[17] = {};
  std::string client_address;  // the peer's IP: the client, for queue fairness, absent a user
  observe::RequestRecord observed;  // metrics, decision record, spans, access log
  RequestAuth auth;                 // the request's API key and budgets (auth_stage.h)
  // The source address's slot in the client limits (admission/client_limits.h).
  int32_t client_slot = admission::ClientAddressTable::kUntracked;
  std::string session_pin;  // the replica the request's session is pinned to ("" if none)
  std::vector<uint64_t> prompt_blocks;  // prefix-cache routing: the request's chain (capture())
  // Async jobs: scan the response for the id of the resource it created.
  bool capture_job_id = false;
  size_t job_id_scanned = 0;
  std::string job_id;
};

// What one forward() needs to know about its request besides the bytes.
struct ForwardTarget {
  std::string_view strategy;    // for the routing-strategy response header
  std::string_view request_id;
  bool generated_id = false;    // the id was generated here: send it upstream too
  int64_t prompt_estimate = 0;  // prompt tokens estimated from the body (usage overrides)
  bool keep_alive = false;
  bool may_retry = false;       // a failure before any byte reached the client fails over
  ForwardMode mode = ForwardMode::kNormal;
  int64_t work_units = 1;       // tokenless work's capacity units (api::workUnits); 0 none
  // Prompt tokens counted in the replica's prefill_pending_tokens until the first body byte:
  // the estimate for a streamed request, 0 otherwise (a whole answer's first byte is its end).
  int64_t prefill_tokens = 0;
  TimeNs arrived = -1;  // when the request arrived (-1: count from this forward)
};

// The prompt's prefill, counted as pending on the replica from the forward until the answer's
// first body byte (or the forward's end, whichever comes first).
struct PendingPrefill {
  fleet::ReplicaCounters& counters;
  int64_t tokens;
  void release() {
    if (tokens != 0) counters.prefill_pending_tokens.fetch_sub(tokens, std::memory_order_relaxed);
    tokens = 0;
  }
  ~PendingPrefill() { release(); }
};

// What relayBody() needs to know about an answer besides its bytes.
struct RelayTarget {
  std::string_view request_id;  // for the log
  bool event_stream = false;    // text/event-stream: small pieces, usage read as SSE
  bool chunk_to_client = false;  // the replica did not size it: chunk-framed to the client
  bool capture_job_id = false;  // an async job's creation: its id is in the first bytes
  PendingPrefill* prefill = nullptr;  // released at the first body byte
};

// What came of relaying an answer's body.
struct RelayedBody {
  ForwardResult result = ForwardResult::kDone;
  TimeNs first_byte_at = -1;      // -1: no body byte came
  int64_t prompt_tokens = 0;      // the answer's usage (0: not given)
  int64_t completion_tokens = 0;
  bool saw_done = false;          // an event stream's terminator came
};

class QueueSeat;

// One proxied request's plan, shared by its routing attempts and its time in the queue.
struct ProxyPlan {
  std::shared_ptr<const fleet::FleetSnapshot> snapshot;  // the fleet it is routed in
  const fleet::ModelEntry* model = nullptr;
  // The body's `user` (queue fairness): owned, as the inspector's views end at the worker's
  // next inspect() and the queue keeps the name across waits (no allocation up to 15 bytes).
  std::string client_user;
  routing::StrategySpec spec;
  routing::RouteRequest route;
  std::string_view request_id;
  bool generated_id = false;
  bool keep_alive = false;
  bool creates_job = false;          // an async job's creation: its answer names the job's id
  std::string_view session;          // the session header's value ("" none)
  int64_t prompt_estimate = 0;       // prompt tokens estimated from the body
  bool streamed = false;             // the body asks for a stream (`"stream": true`)
  double output_estimate = 0;        // max_tokens, else what the model's requests produce
  int64_t work_units = 1;            // api::workUnits of the body; 0: not a speed signal
  TimeNs arrived = 0;
  TimeNs deadline_at = -1;           // absolute; -1: none
  TimeNs predicted = -1;             // the last attempt's predicted execution; -1 unknown
  // How the shared in-flight limit admitted the last attempt.
  observe::InflightAdmission inflight = observe::InflightAdmission::kNone;
  bool held = false;                 // SLO routing held it at least once
  bool prefix = false;               // prefix-cache routing: conn.prompt_blocks is its chain
  TimeNs slo_breach_at = -1;         // held by SLO routing: when its SLO can no longer be met
  QueueSeat* seat = nullptr;         // its place in the admission queue (left once admitted)
  // Replicas set aside this round: those that failed this request first (kept across queue
  // waits), then those lost to an admission race (forgotten after a wait).
  std::array<int, kMaxAttempts + kMaxAdmissionRaces> tried{};
  size_t tried_count = 0;
  size_t failed_count = 0;
  int attempts = 0;
  int admission_races = 0;
};

enum class AttemptOutcome : uint8_t {
  kAnswered,     // a replica's answer was relayed (or the client left mid-relay: kClosed)
  kClosed,       // the connection must close
  kSaturated,    // every replica is at its limit: queue or refuse
  kHeld,         // SLO routing holds it: no replica is predicted to meet its SLO now
  kUnreachable,  // no replica could be reached (or none exists)
  kUnavailable,  // every replica is draining or not ready
  kRefused,      // admission refused (`refusal` says why)
};

enum class QueueTurn : uint8_t {
  kTurn,        // at the head of the queue: try routing
  kRefused,     // its deadline can no longer be met, or it waited too long
  kClientGone,  // the client left while it waited
};

struct Worker::Impl {
  Impl(int index_in, const GatewayConfig& config_in, const fleet::FleetRegistry& registry,
       const tcp::endpoint& listen, observe::WorkerObserver& observer_in,
       state::SharedStateBackend& shared_state, const WorkerDirectory& directory,
       SecurityPlane& security_in);

  int index;
  const GatewayConfig config;  // a copy: the control thread edits its own on reload
  // Every socket and descriptor of a worker is used on its thread only; other threads only
  // post to it (the queue's wake-ups, the observer's jobs, shutdown). So the reactor skips its
  // per-descriptor locks (a lock and an unlock around each operation's start and each readiness
  // event); posting and timers keep theirs (BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO).
  asio::io_context io;
  tcp::acceptor acceptor;
  switchyard::http::AcceptPause accept_pause{"worker " + std::to_string(index)};
  fleet::SnapshotCache snapshots;
  UpstreamPool pool;
  admission::RetryBudget retry_budget;
  api::RequestInspector inspector;
  api::MultipartReader multipart;  // form bodies (audio uploads, job creations)
  routing::RoutingScratch scratch;
  PrefixStage prefix;
  Rng rng;
  asio::steady_timer sweep_timer;
  switchyard::http::PeerWatchArming peer_arming;  // clients watched once a request lasts
  std::atomic<int64_t> inflight{0};
  std::atomic<bool> stopping{false};
  observe::WorkerObserver& observer;
  std::unique_ptr<state::SharedStateClient> shared;
  SharedStateNotice shared_notice;
  AdmissionStage admission;
  SessionStage sessions;
  RequestQueue queue;
  SecurityPlane& security;
  AuthStage auth;
  switchyard::auth::TlsContextCache tls;  // the client listener's certificate (none: plain)

  TimeNs now() const { return SteadyClock::instance().now(); }
  // Only one request in flight on this worker: its writes go at once (http/write_all.h).
  bool aloneOnWorker() const { return inflight.load(std::memory_order_relaxed) == 1; }

  // worker.cc: connections.
  asio::awaitable<void> acceptLoop();
  asio::awaitable<void> sweepLoop();
  asio::awaitable<void> serve(tcp::socket socket);
  // The TLS handshake of a new connection (timeout: client_header). False: close it.
  asio::awaitable<bool> handshake(ClientConnection& conn);
  asio::awaitable<void> lingerAndClose(ClientConnection& conn);
  // Not a coroutine: an inference request goes straight to proxy()'s frame (one frame less per
  // request); everything else to handleOther().
  asio::awaitable<bool> handle(ClientConnection& conn, Request& req);
  asio::awaitable<bool> handleOther(ClientConnection& conn, Request& req, bool keep_alive,
                                    std::string_view path);

  // request_pipeline.cc: one proxied request, from identification to the last attempt.
  // The coroutines keep only what lives across a wait; the steps between waits are plain
  // functions, so each frame stays small enough for the worker thread's recycled blocks.
  asio::awaitable<bool> proxy(ClientConnection& conn, Request& req, bool keep_alive, JobPath job,
                              api::ApiEndpoint endpoint);
  // The request's body, model, strategy, deadline and admission before routing; a refusal ends it.
  std::optional<Refusal> planRequest(ClientConnection& conn, Request& req, JobPath job,
                                     api::ApiEndpoint endpoint, ProxyPlan& plan);
  // The key's budgets (auth_stage.h), for a request with a key: a refusal ends it.
  asio::awaitable<void> checkKeyBudgets(ClientConnection& conn, ProxyPlan& plan,
                                        std::optional<Refusal>& refusal);
  // The routing request, once the key's budgets have passed; a refusal ends it.
  std::optional<Refusal> planRoute(const Request& req, ProxyPlan& plan, TimeNs now);
  // The queue and the attempts after it: entered when the first attempt found every replica
  // at its limit (or others were already queued), with that attempt's outcome.
  asio::awaitable<bool> proxyQueued(ClientConnection& conn, Request& req, ProxyPlan& plan,
                                    AttemptOutcome outcome, std::optional<Refusal>& refusal);
  // The end of a request whose attempts are over: records how it was admitted and, when the
  // gateway answers it itself, leaves the answer in `refusal`.
  void settleAttempts(ClientConnection& conn, const ProxyPlan& plan, AttemptOutcome outcome,
                      TimeNs waited, std::optional<Refusal>& refusal);
  asio::awaitable<bool> proxyToOwner(ClientConnection& conn, Request& req, bool keep_alive,
                                     JobPath job);
  // One round of route -> admit -> forward, failing over while nothing reached the client.
  asio::awaitable<AttemptOutcome> attempt(ClientConnection& conn, Request& req,
                                          const fleet::FleetSnapshot& snapshot,
                                          const fleet::ModelEntry& model, ProxyPlan& plan,
                                          std::optional<Refusal>& refusal);
  // Waits in the model's queue until this request is at its head (and a re-check or a freed
  // slot wakes it), refusing it once it can no longer finish in time or has waited too long.
  asio::awaitable<QueueTurn> waitTurn(ClientConnection& conn, const fleet::ModelEntry& model,
                                      const ProxyPlan& plan, RequestQueue::Waiter& waiter,
                                      std::optional<Refusal>& refusal);
  void noteAdmission(ClientConnection& conn, const ProxyPlan& plan, TimeNs waited,
                     const std::optional<Refusal>& refusal);
  std::string_view clientAddress(ClientConnection& conn);
  std::string_view requestId(ClientConnection& conn, const Request& req);
  const fleet::ModelEntry* defaultJobModel(const fleet::FleetSnapshot& snapshot) const;

  // forwarder.cc: one attempt on one replica. The caller admitted the request (one count of the
  // replica's `running`); forward() releases it.
  asio::awaitable<ForwardResult> forward(ClientConnection& conn, Request& req,
                                         const std::shared_ptr<fleet::ReplicaState>& replica,
                                         const fleet::ModelEntry& model,
                                         const ForwardTarget& target);
  // The answer's body after its head (`conn.head`, sent with the first piece), relayed piece
  // by piece as it comes by a BodyRelay (body_relay.h), which this coroutine waits for.
  asio::awaitable<RelayedBody> relayBody(ClientConnection& conn, AnswerParser& parser,
                                         switchyard::http::ConnectionStream& upstream,
                                         fleet::ReplicaState& replica,
                                         const fleet::ModelEntry& model, RelayTarget target);
  asio::awaitable<UpstreamPool::Stream> connect(const fleet::ReplicaState& replica,
                                                TimeNs timeout);

  // local_answers.cc.
  asio::awaitable<bool> sendJson(ClientConnection& conn, unsigned status, std::string_view body,
                                 std::string_view request_id, bool keep_alive,
                                 std::string_view retry_after = {});
  asio::awaitable<bool> sendError(ClientConnection& conn, unsigned status,
                                  std::string_view message, std::string_view type,
                                  std::string_view code, std::string_view param,
                                  std::string_view request_id, bool keep_alive);
  asio::awaitable<bool> sendRefusal(ClientConnection& conn, const Refusal& refusal,
                                    std::string_view request_id, bool keep_alive);
  asio::awaitable<bool> listModels(ClientConnection& conn, bool keep_alive);
};

}  // namespace switchyard::gateway
