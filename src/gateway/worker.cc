// The request path's front: one coroutine per client connection on its worker's io_context
// reads requests (with size and time limits) and dispatches them by path. The stages of a
// proxied request live beside it (see worker_impl.h for the map).
#include "gateway/worker.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/worker_impl.h"
#include "http/event_loop.h"
#include "http/listener.h"
#include "http/parse_buffered.h"

namespace switchyard::gateway {
namespace {

// A source address as the client limits key it: IPv6, or IPv4 mapped into it.
std::array<uint8_t, 16> addressKey(const asio::ip::address& address) {
  return address.is_v6() ? address.to_v6().to_bytes()
                         : asio::ip::make_address_v6(asio::ip::v4_mapped, address.to_v4())
                               .to_bytes();
}

// Returned to a client that speaks plain HTTP to the TLS listener, in plain HTTP.
constexpr std::string_view kPlainHttpToTls =
    "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 126\r\n"
    "Connection: close\r\n\r\n"
    R"({"error":{"message":"this port speaks HTTPS: use https://","type":"invalid_request_error",)"
    R"("param":null,"code":"tls_required"}})";

}  // namespace

Worker::Impl::Impl(int index_in, const GatewayConfig& config_in,
                   const fleet::FleetRegistry& registry, const tcp::endpoint& listen,
                   observe::WorkerObserver& observer_in, state::SharedStateBackend& shared_state,
                   const WorkerDirectory& directory, SecurityPlane& security_in)
    : index(index_in),
      config(config_in),
      io(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO),
      acceptor(switchyard::http::openAcceptor(io, listen, /*reuse_port=*/true)),
      snapshots(registry),
      pool(config_in.timeouts.upstream_pool_idle, config_in.upstream_idle_per_replica),
      retry_budget(config_in.retry.budget_ratio, config_in.retry.budget_min_per_second),
      prefix(config_in.prefix_cache, directory.exact_index, directory.chain_exchange, index_in),
      rng(0x5EED0000u + static_cast<uint64_t>(index_in) * 7919u +
          static_cast<uint64_t>(SteadyClock::instance().now())),
      sweep_timer(io),
      peer_arming(io.get_executor(), kPeerWatchDelay),
      observer(observer_in),
      shared(shared_state.makeClient(io.get_executor())),
      shared_notice(index_in),
      admission(observer_in, *shared, shared_notice, config.shared_state),
      sessions(config.session_affinity, *shared, shared_notice),
      queue(index_in, directory),
      security(security_in),
      auth(security_in, observer_in, *shared),
      tls(&security_in.clientTls()) {
  observer.setExecutor([this](std::function<void()> job) { asio::post(io, std::move(job)); });
  inspector.setPromptSink(prefix.sink());
}

asio::awaitable<void> Worker::Impl::acceptLoop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec) {
      // Out of descriptors or a transient error: keep serving the connections we have.
      if (!co_await accept_pause.after(acceptor, ec)) co_return;
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
    admission.sweepIdleSlots();
    prefix.absorbShared();
  }
}

asio::awaitable<bool> Worker::Impl::handshake(ClientConnection& conn) {
  conn.stream.expires_after(asDuration(config.timeouts.client_header));
  auto [ec] = co_await conn.stream.tls()->async_handshake(asio::ssl::stream_base::server, kTuple);
  if (!ec) co_return true;
  security.clientTls().countHandshakeFailure();
  if (ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST) {
    // Plain HTTP to the TLS port: say so in plain HTTP, then close.
    co_await asio::async_write(conn.stream.socket(), asio::buffer(kPlainHttpToTls), kTuple);
  }
  co_return false;
}

asio::awaitable<void> Worker::Impl::serve(tcp::socket socket) {
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  // The connection caps, before any byte is read (admission/client_limits.h).
  admission::ClientLimits& limits = security.clientLimits();
  const tcp::endpoint peer = socket.remote_endpoint(ignored);
  const int32_t slot = limits.openConnection(addressKey(peer.address()), now());
  if (slot == admission::ClientAddressTable::kRefused) {
    socket.close(ignored);
    co_return;
  }
  struct SlotGuard {
    admission::ClientLimits& limits;
    int32_t slot;
    ~SlotGuard() { limits.closeConnection(slot); }
  } slot_guard{limits, slot};
  ClientConnection conn(std::move(socket), tls.get());
  conn.client_slot = slot;
  if (conn.stream.isTls() && !co_await handshake(conn)) {
    conn.stream.socket().close(ignored);
    co_return;
  }
  const admission::ClientLimitSettings& caps = security.config().client_limits;
  bool first = true;
  for (;;) {
    http::request_parser<http::string_body, switchyard::http::RecyclingAllocator<char>> parser;
    parser.get().body().swap(conn.spare_body);  // empty: the body is appended to it
    parser.header_limit(static_cast<uint32_t>(caps.max_header_bytes));
    parser.body_limit(config.max_body_bytes);
    conn.stream.expires_after(
        asDuration(first ? config.timeouts.client_header : config.timeouts.client_idle));
    first = false;
    // A pipelined request may be buffered already; else read until the head is complete.
    boost::system::error_code ec =
        switchyard::http::parseBuffered(parser, conn.buffer, /*head_only=*/true);
    while (!ec && !parser.is_header_done()) {
      auto [rec, n] = co_await conn.stream.async_read_some(
          switchyard::http::readRoom(conn.buffer), kTuple);
      ec = switchyard::http::parseRead(parser, conn.buffer, rec, n, /*head_only=*/true);
    }
    if (ec == beast::error::timeout && parser.got_some()) {
      limits.count(admission::ClientLimit::kHeaderTime);  // a slow client (slowloris)
    }
    if (!ec && static_cast<size_t>(std::distance(parser.get().begin(), parser.get().end())) >
                   caps.max_header_count) {
      limits.count(admission::ClientLimit::kHeaderCount);
      co_await sendError(conn, 431, "the request has too many header fields",
                         "invalid_request_error", "too_many_headers", "", "", false);
      co_await lingerAndClose(conn);
      co_return;
    }
    if (!ec && !parser.is_done()) {
      conn.stream.expires_after(asDuration(config.timeouts.client_body));
      auto& req = parser.get();
      const auto declared = parser.content_length();
      if (declared && *declared > config.max_body_bytes) {
        ec = http::error::body_limit;  // answered before the body is sent (no 100 Continue)
      } else if (declared) {
        // Room for the JSON parser's padding too (api::RequestInspector::kRequiredPadding), so
        // the body is not copied to a larger string before it is inspected.
        req.body().reserve(static_cast<size_t>(*declared) +
                           api::RequestInspector::kRequiredPadding);
      }
      if (!ec && beast::iequals(req[http::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [wec, wn] = co_await asio::async_write(conn.stream, asio::buffer(kContinue), kTuple);
        if (wec) break;
      }
      // A body that came with the header is parsed without a pass of the event loop.
      if (!ec) ec = switchyard::http::parseBuffered(parser, conn.buffer);
      while (!ec && !parser.is_done()) {
        auto [rec, n] = co_await conn.stream.async_read_some(
            switchyard::http::readRoom(conn.buffer), kTuple);
        ec = switchyard::http::parseRead(parser, conn.buffer, rec, n);
        if (ec == beast::error::timeout) limits.count(admission::ClientLimit::kBodyTime);
      }
    }
    if (ec == http::error::body_limit) {
      const std::string message = "request body is larger than the limit of " +
                                  std::to_string(config.max_body_bytes) + " bytes";
      co_await sendError(conn, 413, message, "invalid_request_error", "request_too_large", "",
                         "", false);
      co_await lingerAndClose(conn);
      co_return;
    }
    if (ec == http::error::header_limit) {
      limits.count(admission::ClientLimit::kHeaderBytes);
      co_await sendError(conn, 431, "request headers are too large", "invalid_request_error",
                         "", "", "", false);
      co_await lingerAndClose(conn);
      co_return;
    }
    if (ec) {
      // End of stream, timeout or a reset: nothing to answer. A syntax error gets a 400.
      if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
          ec != http::error::end_of_stream && ec != http::error::partial_message) {
        co_await sendError(conn, 400, "malformed HTTP request", "invalid_request_error", "", "",
                           "", false);
        co_await lingerAndClose(conn);
        co_return;
      }
      break;
    }
    inflight.fetch_add(1, std::memory_order_relaxed);
    bool keep_alive = false;
    auth.begin(conn.auth);
    try {
      // The source address's request rate, before any key is looked at (an untracked address
      // has none: no clock read).
      const TimeNs wait =
          conn.client_slot >= 0 ? limits.admitRequest(conn.client_slot, now()) : 0;
      if (wait > 0) {
        keep_alive = co_await sendRefusal(
            conn,
            Refusal::limited(observe::LimitKind::kOther, "client_rate_limit_exceeded",
                             "too many requests from this address", wait),
            "", parser.get().keep_alive() && !stopping.load(std::memory_order_relaxed));
      } else {
        keep_alive = co_await handle(conn, parser.get());
      }
    } catch (const std::exception& e) {
      // Defensive: the request path reports failures as values; anything thrown is a bug, and
      // it costs this connection, never the worker.
      spdlog::error("worker {}: request failed: {}", index, e.what());
      keep_alive = false;
    }
    inflight.fetch_sub(1, std::memory_order_relaxed);
    if (!keep_alive || stopping.load(std::memory_order_relaxed)) break;
    std::string& body = parser.get().body();
    if (body.capacity() <= kSpareBodyBytes) {
      body.clear();
      conn.spare_body.swap(body);
    }
  }
  conn.stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  conn.stream.socket().close(ignored);
}

// After an early error answer the client may still be sending its request (a large body). Closing
// with unread bytes makes the kernel send a reset, which can destroy the answer before the client
// reads it. So: close our write side, read and discard what keeps arriving for a bounded time and
// size, then close (nginx's lingering close).
asio::awaitable<void> Worker::Impl::lingerAndClose(ClientConnection& conn) {
  constexpr size_t kLingerBytes = size_t{64} << 20;
  boost::system::error_code ignored;
  conn.stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  conn.stream.expires_after(asDuration(config.timeouts.lingering_close));
  size_t discarded = 0;
  while (discarded < kLingerBytes) {
    auto [ec, n] = co_await conn.stream.async_read_some(
        asio::buffer(conn.piece.get(), kPieceSize), kTuple);
    if (ec) break;  // the client closed, reset, or the time is up
    discarded += n;
  }
  conn.stream.socket().close(ignored);
}

asio::awaitable<bool> Worker::Impl::handle(ClientConnection& conn, Request& req) {
  const bool keep_alive = req.keep_alive() && !stopping.load(std::memory_order_relaxed);
  std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  // Only what outlives this call reaches the returned awaitable: the connection and request
  // (the caller's), and values copied into the callee's frame.
  if (const api::ApiEndpoint endpoint = api::classifyEndpoint(path);
      endpoint != api::ApiEndpoint::kNone && req.method() == http::verb::post) {
    return proxy(conn, req, keep_alive, {}, endpoint);
  }
  return handleOther(conn, req, keep_alive, path);
}

asio::awaitable<bool> Worker::Impl::handleOther(ClientConnection& conn, Request& req,
                                                bool keep_alive, std::string_view path) {
  if (api::classifyEndpoint(path) != api::ApiEndpoint::kNone) {
    co_return co_await sendError(conn, 405, "use POST for this endpoint",
                                 "invalid_request_error", "method_not_allowed", "", "",
                                 keep_alive);
  }
  if (const JobPath job = config.async_jobs.enabled
                              ? classifyJobPath(path, req.method() == http::verb::post)
                              : JobPath{};
      job.kind != JobRequest::kNone) {
    if (job.kind == JobRequest::kFollowUp) {
      co_return co_await proxyToOwner(conn, req, keep_alive, job);
    }
    co_return co_await proxy(conn, req, keep_alive, job, api::ApiEndpoint::kNone);
  }
  if (path == "/v1/models") {
    if (req.method() != http::verb::get) {
      co_return co_await sendError(conn, 405, "use GET for this endpoint",
                                   "invalid_request_error", "method_not_allowed", "", "",
                                   keep_alive);
    }
    if (std::optional<Refusal> refused =
            auth.authenticate(req[http::field::authorization], conn.auth, conn.observed)) {
      co_return co_await sendRefusal(conn, *refused, "", keep_alive);
    }
    co_return co_await listModels(conn, keep_alive);  // the key's models only
  }
  co_return co_await sendError(conn, 404, "no route for " + std::string(path),
                               "invalid_request_error", "not_found", "", "", keep_alive);
}

Worker::Worker(int index, const GatewayConfig& config, const fleet::FleetRegistry& registry,
               const tcp::endpoint& listen, observe::WorkerObserver& observer,
               state::SharedStateBackend& shared_state, const WorkerDirectory& directory,
               SecurityPlane& security)
    : impl_(std::make_unique<Impl>(index, config, registry, listen, observer, shared_state,
                                   directory, security)) {}

boost::asio::io_context& Worker::context() { return impl_->io; }
RequestQueue& Worker::queue() { return impl_->queue; }

Worker::~Worker() = default;

uint16_t Worker::port() const { return impl_->acceptor.local_endpoint().port(); }

void Worker::run() {
  asio::co_spawn(impl_->io, impl_->acceptLoop(), asio::detached);
  asio::co_spawn(impl_->io, impl_->sweepLoop(), asio::detached);
  observe::WorkerMetrics& metrics = impl_->observer.metrics();
  switchyard::http::runEventLoop(impl_->io, std::chrono::microseconds(impl_->config.busy_poll_us),
                                 [&metrics](int64_t ns) { metrics.countBusyPoll(ns); });
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
