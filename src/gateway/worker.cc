// The request path's front: one coroutine per client connection on its worker's io_context
// reads requests (with size and time limits) and dispatches them by path. The stages of a
// proxied request live beside it (see worker_impl.h for the map).
#include "gateway/worker.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/worker_impl.h"
#include "http/listener.h"

namespace switchyard::gateway {

Worker::Impl::Impl(int index_in, const GatewayConfig& config_in,
                   const fleet::FleetRegistry& registry, const tcp::endpoint& listen,
                   observe::WorkerObserver& observer_in, state::SharedStateBackend& shared_state,
                   const WorkerDirectory& directory)
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
      shared_notice(index_in),
      admission(observer_in, *shared, shared_notice, config.shared_state.liveness_ttl),
      sessions(config.session_affinity, *shared, shared_notice),
      queue(index_in, directory) {
  observer.setExecutor([this](std::function<void()> job) { asio::post(io, std::move(job)); });
}

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
      const auto declared = parser.content_length();
      if (declared && *declared > config.max_body_bytes) {
        ec = http::error::body_limit;  // answered before the body is sent (no 100 Continue)
      } else if (beast::iequals(req[http::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [wec, wn] = co_await asio::async_write(conn.stream, asio::buffer(kContinue), kTuple);
        if (wec) break;
      }
      if (!ec) {
        std::tie(ec, n) = co_await http::async_read(conn.stream, conn.buffer, parser, kTuple);
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
    co_return co_await listModels(conn, keep_alive);
  }
  co_return co_await sendError(conn, 404, "no route for " + std::string(path),
                               "invalid_request_error", "not_found", "", "", keep_alive);
}

Worker::Worker(int index, const GatewayConfig& config, const fleet::FleetRegistry& registry,
               const tcp::endpoint& listen, observe::WorkerObserver& observer,
               state::SharedStateBackend& shared_state, const WorkerDirectory& directory)
    : impl_(std::make_unique<Impl>(index, config, registry, listen, observer, shared_state,
                                   directory)) {}

boost::asio::io_context& Worker::context() { return impl_->io; }
RequestQueue& Worker::queue() { return impl_->queue; }

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
