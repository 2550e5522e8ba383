#include "gateway/admin_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "auth/tls_context.h"
#include "gateway/admin_access.h"
#include "http/accept_pause.h"
#include "http/connection_stream.h"
#include "http/listener.h"

namespace switchyard::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

constexpr std::string_view kUnauthorized =
    R"({"error":{"message":"the admin listener needs a bearer token (Authorization: Bearer )"
    R"(TOKEN) or a client certificate","type":"invalid_request_error","param":null,)"
    R"("code":"invalid_api_key"}})";

constexpr std::string_view kViewOnly =
    R"({"error":{"message":"this admin endpoint is a view: use GET","type":)"
    R"("invalid_request_error","param":null,"code":"method_not_allowed"}})";

bool isWrite(http::verb method) {
  return method != http::verb::get && method != http::verb::head;
}

}  // namespace

struct AdminServer::Impl {
  Impl(asio::io_context& io_in, const tcp::endpoint& listen)
      : io(io_in), acceptor(switchyard::http::openAcceptor(io_in, listen, /*reuse_port=*/false)) {}
  asio::io_context& io;
  tcp::acceptor acceptor;
  switchyard::http::AcceptPause accept_pause{"admin"};
  std::map<std::string, AdminHandler, std::less<>> handlers;
  std::map<std::string, AdminRequestHandler, std::greater<>> prefixes;  // longest first
  const auth::TlsContextStore* tls = nullptr;
  std::shared_ptr<AdminAccess> access;

  const AdminRequestHandler* prefixHandler(std::string_view path) const {
    for (const auto& [prefix, handler] : prefixes) {
      if (path.starts_with(prefix)) return &handler;
    }
    return nullptr;
  }

  asio::awaitable<void> acceptLoop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec) {
        if (!co_await accept_pause.after(acceptor, ec)) co_return;
        continue;
      }
      asio::co_spawn(io, serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    boost::system::error_code peer_ec;
    const tcp::endpoint peer_endpoint = socket.remote_endpoint(peer_ec);
    const std::string peer = peer_ec ? "unknown" : peer_endpoint.address().to_string();
    switchyard::http::ConnectionStream stream(
        std::move(socket), tls != nullptr && tls->enabled() ? tls->current() : nullptr);
    std::string client_cn;
    if (stream.isTls()) {
      stream.expires_after(std::chrono::seconds(30));
      auto [hec] = co_await stream.tls()->async_handshake(asio::ssl::stream_base::server, kTuple);
      if (hec) {
        tls->countHandshakeFailure();
        boost::system::error_code ignored;
        stream.socket().close(ignored);
        co_return;
      }
      client_cn = auth::peerCommonName(stream.tls()->native_handle());
    }
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(8u << 20);
      stream.expires_after(std::chrono::seconds(30));
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
      if (ec) break;
      http::request<http::string_body>& req = parser.get();
      const std::string_view target = req.target();
      const size_t question = target.find('?');
      const std::string_view path = target.substr(0, question);
      const std::string_view query =
          question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
      AdminCaller caller{true, "anonymous"};
      if (access) caller = access->check(path, req[http::field::authorization], client_cn);
      AdminResponse out;
      bool view_written = false;  // a write aimed at a read-only view
      if (!caller.allowed) {
        out.status = 401;
        out.body = kUnauthorized;
      } else if (auto it = handlers.find(path); it != handlers.end()) {
        if (isWrite(req.method())) {
          // Views only: a write aimed at one must not look as if it did something.
          view_written = true;
          out.status = 405;
          out.body = kViewOnly;
        } else {
          out = it->second(query);
        }
      } else if (const AdminRequestHandler* handler = prefixHandler(path)) {
        out = (*handler)(AdminRequest{req.method_string(), path, query, req.body()});
      } else {
        out.status = 404;
        out.body = R"({"error":{"message":"no such admin endpoint","type":"invalid_request_error","param":null,"code":"not_found"}})";
      }
      if (isWrite(req.method())) {
        // Every admin write, with who made it (never their credentials).
        spdlog::info("admin: {} {} by {} from {}: {}", req.method_string(), path, caller.who,
                     peer, out.status);
      }
      http::response<http::string_body> res{static_cast<http::status>(out.status),
                                            req.version()};
      res.set(http::field::content_type, out.content_type);
      res.set(http::field::cache_control, "no-store");
      if (!caller.allowed) res.set(http::field::www_authenticate, "Bearer realm=\"admin\"");
      if (view_written) res.set(http::field::allow, "GET, HEAD");
      res.keep_alive(req.keep_alive());
      res.body() = std::move(out.body);
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(stream, res, kTuple);
      if (wec || !req.keep_alive()) break;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }
};

std::optional<std::string_view> queryParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

AdminServer::AdminServer(asio::io_context& io, const tcp::endpoint& listen)
    : impl_(std::make_unique<Impl>(io, listen)) {}
AdminServer::~AdminServer() = default;

void AdminServer::handle(std::string path, AdminHandler handler) {
  impl_->handlers[std::move(path)] = std::move(handler);
}

void AdminServer::handlePrefix(std::string prefix, AdminRequestHandler handler) {
  impl_->prefixes[std::move(prefix)] = std::move(handler);
}

uint16_t AdminServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void AdminServer::secure(const auth::TlsContextStore* tls, std::shared_ptr<AdminAccess> access) {
  impl_->tls = tls;
  impl_->access = std::move(access);
}

void AdminServer::start() { asio::co_spawn(impl_->io, impl_->acceptLoop(), asio::detached); }

void AdminServer::stop() {
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace switchyard::gateway
