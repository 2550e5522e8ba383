// Forwarding and relay: one attempt on one replica. The request goes upstream byte for byte on
// a pooled keep-alive connection (a reused connection that fails before any response byte is
// retried once on a fresh one); the response is relayed, not re-serialised: the client head is
// written once from a reused buffer, and each upstream piece goes out as it arrives
// (chunk-framed when the length is not known), so a stream reaches the client token by token.
// While the request is upstream the client is watched: if it leaves, the upstream request is
// closed at once and the engine aborts it. At the end the response is accounted
// (fleet/completion_accounting.h) and observed.
#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <optional>

#include "fleet/completion_accounting.h"
#include "gateway/body_relay.h"
#include "gateway/worker_impl.h"
#include "http/parse_buffered.h"
#include "http/recycling_allocator.h"
#include "http/write_all.h"

namespace switchyard::gateway {
namespace {

// A client that leaves while its request waits on (or streams from) the upstream: the upstream
// request is cancelled at once, so the connection to the engine closes and the engine aborts the
// work (vLLM does on a closed connection) instead of running a generation nobody reads.
// `upstream` is the forward's UpstreamPool::Stream, empty while (re)connecting.
void cancelUpstream(void* upstream) {
  if (auto& stream = *static_cast<UpstreamPool::Stream*>(upstream)) stream->cancel();
}

}  // namespace

asio::awaitable<UpstreamPool::Stream> Worker::Impl::connect(const fleet::ReplicaState& replica,
                                                            TimeNs timeout) {
  auto connected = std::make_unique<beast::tcp_stream>(io);
  beast::tcp_stream& stream = *connected;
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
  if (!replica.upstreamTls()) {
    co_return std::make_unique<switchyard::http::ConnectionStream>(std::move(stream.socket()));
  }
  // An https:// replica: TLS with the gateway's upstream context (CA and name verified unless
  // upstream_tls.verify is false), within the same connect timeout.
  const std::shared_ptr<asio::ssl::context>& context = security.upstreamTls();
  if (!context) co_return nullptr;
  auto owned = std::make_unique<switchyard::http::ConnectionStream>(std::move(stream.socket()),
                                                                    context);
  if (!switchyard::auth::prepareClientTls(owned->tls()->native_handle(), replica.host(),
                                          security.config().upstream_tls.verify)) {
    co_return nullptr;
  }
  owned->expires_after(asDuration(timeout));
  auto [hec] =
      co_await owned->tls()->async_handshake(asio::ssl::stream_base::client, kTuple);
  if (hec) {
    spdlog::warn("upstream {}: TLS handshake failed: {}", replica.name(), hec.message());
    co_return nullptr;
  }
  co_return owned;
}

asio::awaitable<ForwardResult> Worker::Impl::forward(
    ClientConnection& conn, Request& req, const std::shared_ptr<fleet::ReplicaState>& replica,
    const fleet::ModelEntry& model, const ForwardTarget& target) {
  // `target` is read where needed, not copied: it outlives this call (the caller's awaited
  // expression holds it), and copies would cost frame room.
  const TimeNs started = now();
  const int64_t streams_at_start = replica->globalRunning();  // this request included
  fleet::ReplicaCounters& counters = replica->counters();
  // The caller admitted the request (incremented `running`); this releases it.
  counters.requests_total.fetch_add(1, std::memory_order_relaxed);
  struct RunningGuard {
    fleet::ReplicaCounters& c;
    ~RunningGuard() { c.running.fetch_sub(1, std::memory_order_relaxed); }
  } running_guard{counters};
  // The prompt's prefill is pending on the replica until its first body byte (or the end).
  PendingPrefill prefill{counters, std::max<int64_t>(0, target.prefill_tokens)};
  if (prefill.tokens != 0) {
    counters.prefill_pending_tokens.fetch_add(prefill.tokens, std::memory_order_relaxed);
  }

  // The upstream request head: the client's end-to-end headers, our framing.
  std::string& head = conn.head;
  head.clear();
  head.append(http::to_string(req.method())).push_back(' ');
  head.append(req.target()).append(" HTTP/1.1\r\n");
  appendHeader(head, "Host", replica->name());
  // The client's credentials stay here unless the configuration forwards them; the replica's
  // own credentials (its api_key) go instead.
  const bool forward_authorization =
      replica->authorization().empty() && auth.forwardClientAuthorization();
  for (const auto& field : req) {
    if (isHopByHop(field.name())) continue;
    if (field.name() == http::field::authorization && !forward_authorization) continue;
    if (observer.replacesUpstreamHeader(field.name_string())) continue;
    appendHeader(head, field.name_string(), field.value());
  }
  if (!replica->authorization().empty()) {
    appendHeader(head, "Authorization", replica->authorization());
  }
  appendHeader(head, "Content-Length", std::to_string(req.body().size()));
  if (target.generated_id) appendHeader(head, "x-request-id", target.request_id);
  observer.appendUpstreamHeaders(conn.observed, head);
  head.append("\r\n");

  UpstreamPool::Stream upstream = pool.take(replica.get(), started);
  // Watches the client for the whole exchange: one arming per request, its wait started once
  // the request has lasted kPeerWatchDelay.
  const switchyard::http::PeerWatchScope watching(
      conn.watch, conn.stream.socket(), &cancelUpstream, &upstream,
      {&peer_arming, std::chrono::nanoseconds(target.arrived >= 0 ? started - target.arrived : 0)});
  std::optional<AnswerParser> parser;
  for (int tries = 0;; ++tries) {
    const bool reused = upstream != nullptr;
    if (!upstream) {
      upstream = co_await connect(*replica, model.timeouts.connect);
      if (!upstream) {
        counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
        replica->recordFailure();
        observer.onUpstreamError(conn.observed, observe::UpstreamErrorKind::kConnect);
        spdlog::warn("request {}: cannot connect to {}", target.request_id, replica->name());
        co_return ForwardResult::kFailedBeforeSending;
      }
    }
    upstream->expires_after(asDuration(model.timeouts.first_byte));
    const std::array<asio::const_buffer, 2> request_buffers = {asio::buffer(head),
                                                               asio::buffer(req.body())};
    auto [wec, wn] =
        co_await switchyard::http::writeAll(*upstream, request_buffers, aloneOnWorker());
    boost::system::error_code ec = wec;
    conn.upstream_buffer.clear();
    if (!ec) {
      parser.emplace(conn.answer_fields);
      parser->body_limit(kUpstreamBodyLimit);
      while (!ec && !parser->is_header_done()) {
        auto [rec, n] = co_await upstream->async_read_some(
            switchyard::http::readRoom(conn.upstream_buffer), kTuple);
        ec = switchyard::http::parseRead(*parser, conn.upstream_buffer, rec, n,
                                         /*head_only=*/true);
      }
    }
    if (!ec) break;
    if (conn.watch->gone) {
      // Not the replica's failure: the upstream request is closed with `upstream` (the engine
      // aborts it) and nothing is retried.
      observer.onClientCancelled(conn.observed, observe::CancelStage::kWaitingFirstByte);
      co_return ForwardResult::kAborted;
    }
    upstream.reset();
    // A pooled connection the engine closed in the meantime fails this way: retry once on a
    // fresh connection before calling the replica failed.
    if (reused && tries == 0) continue;
    counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica->recordFailure();
    observer.onUpstreamError(conn.observed, ec == beast::error::timeout
                                                ? observe::UpstreamErrorKind::kTimeout
                                                : observe::UpstreamErrorKind::kReset);
    spdlog::warn("request {}: {} failed before responding: {}", target.request_id, replica->name(),
                 ec.message());
    co_return ForwardResult::kFailedBeforeSending;
  }

  const unsigned status = parser->status();
  observer.onResponse(conn.observed, status);  // counts a 5xx as an upstream error
  if (status >= 500) {
    counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica->recordFailure();
    if (target.may_retry) {
      // Nothing was sent to the client: drop this answer and let another replica try.
      spdlog::warn("request {}: {} answered {}, retrying elsewhere", target.request_id,
                   replica->name(), status);
      co_return ForwardResult::kFailedBeforeSending;
    }
  }
  if (target.mode == ForwardMode::kFindOwner && status == 404) {
    // Not this replica's resource. The unread body stays on the connection: drop it.
    replica->recordSuccess();
    co_return ForwardResult::kFailedBeforeSending;
  }
  const boost::optional<uint64_t> content_length = parser->content_length();
  const bool chunk_to_client = !content_length.has_value();
  const bool capture_job_id = conn.capture_job_id && status >= 200 && status < 300;

  head.clear();
  appendStatusLine(head, status);
  head.append(conn.answer_fields);
  appendHeader(head, "x-request-id", target.request_id);
  appendHeader(head, "routing-strategy", target.strategy);
  appendHeader(head, "target-pod", replica->name());
  observer.appendResponseHeaders(conn.observed, head);  // x-switchyard-decision when asked
  AuthStage::appendHeaders(conn.auth, head);           // x-ratelimit-* for keyed requests
  if (chunk_to_client) {
    appendHeader(head, "Transfer-Encoding", "chunked");
  } else {
    appendHeader(head, "Content-Length", std::to_string(*content_length));
  }
  if (!target.keep_alive) appendHeader(head, "Connection", "close");
  head.append("\r\n");

  const bool event_stream = parser->eventStream();
  const RelayedBody relayed = co_await relayBody(
      conn, *parser, *upstream, *replica, model,
      {target.request_id, event_stream, chunk_to_client, capture_job_id, &prefill});
  if (relayed.result != ForwardResult::kDone) co_return relayed.result;

  const TimeNs finished = now();
  const int64_t prompt_tokens =
      relayed.prompt_tokens > 0 ? relayed.prompt_tokens : target.prompt_estimate;
  fleet::accountCompletion(
      counters, {status, prompt_tokens, relayed.completion_tokens, event_stream, started,
                 relayed.first_byte_at, finished, streams_at_start, replica->globalRunning(),
                 target.work_units});
  observer.onComplete(conn.observed, relayed.first_byte_at, prompt_tokens,
                      relayed.completion_tokens, finished);
  if (status >= 500) {
    // already recorded as a failure above
  } else if (event_stream && status == 200 && !relayed.saw_done) {
    // A stream that ended without its terminator: the client got a truncated answer.
    counters.upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica->recordFailure();
  } else {
    replica->recordSuccess();  // 4xx are the request's fault, not the replica's
  }
  if (parser->keep_alive()) pool.give(replica, std::move(upstream), finished);
  co_return ForwardResult::kDone;
}

asio::awaitable<RelayedBody> Worker::Impl::relayBody(ClientConnection& conn,
                                                     AnswerParser& parser,
                                                     switchyard::http::ConnectionStream& upstream,
                                                     fleet::ReplicaState& replica,
                                                     const fleet::ModelEntry& model,
                                                     RelayTarget target) {
  BodyRelay relay({observer, inflight, config.timeouts.client_write}, conn, parser, upstream,
                  replica, model, target);
  if (relay.begin() == BodyRelay::Step::kEnded) co_return relay.result();
  co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(RelayedBody)>(
      [&relay](auto done) { relay.await(std::move(done)); }, asio::use_awaitable);
}

}  // namespace switchyard::gateway
