#include "fleet/discovery/kubernetes/api_client.h"

#include <sys/stat.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fstream>
#include <list>
#include <sstream>
#include <stdexcept>

#include "core/version.h"
#include "fleet/discovery/kubernetes/kube_objects.h"

namespace switchyard::fleet::kubernetes {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr size_t kReadPiece = 64 * 1024;
constexpr size_t kErrorBodyLimit = 64 * 1024;

using Stream = beast::ssl_stream<beast::tcp_stream>;

std::chrono::nanoseconds ns(TimeNs t) { return std::chrono::nanoseconds(t); }

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

struct ApiClient::Impl {
  Impl(asio::io_context& io_in, Credentials creds_in)
      : io(io_in), creds(std::move(creds_in)), ctx(ssl::context::tls_client) {
    server_name = creds.tls_server_name.empty() ? creds.host : creds.tls_server_name;
    sni = !isIpAddress(server_name);
    host_header = creds.host.find(':') != std::string::npos ? "[" + creds.host + "]"
                                                             : creds.host;
    host_header += ":" + std::to_string(creds.port);
    boost::system::error_code ec;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (!creds.ca_pem.empty()) {
      ctx.add_certificate_authority(asio::buffer(creds.ca_pem), ec);
      if (ec) throw std::runtime_error("kubernetes: the CA certificate is unusable: " + ec.message());
    } else {
      ctx.set_default_verify_paths(ec);
    }
    ctx.set_verify_mode(creds.insecure_skip_verify ? ssl::verify_none : ssl::verify_peer);
    if (!creds.client_cert_pem.empty()) {
      ctx.use_certificate_chain(asio::buffer(creds.client_cert_pem), ec);
      if (!ec) ctx.use_private_key(asio::buffer(creds.client_key_pem), ssl::context::pem, ec);
      if (ec) {
        throw std::runtime_error("kubernetes: the client certificate or key is unusable: " +
                                 ec.message());
      }
    }
    if (!creds.token_file.empty()) bearer();  // read it once now: errors show at start-up
  }

  asio::io_context& io;
  Credentials creds;
  ssl::context ctx;
  std::string server_name;
  bool sni = false;
  std::string host_header;
  std::string token;
  int64_t token_mtime = -1;
  int64_t token_size = -1;
  uint64_t token_ino = 0;
  uint64_t token_reloads = 0;
  bool cancelled = false;
  std::list<std::weak_ptr<Stream>> open;

  // The bearer token, re-read when its file changed (mtime, size or inode: a projected token
  // is swapped in through a symlink).
  const std::string& bearer() {
    if (creds.token_file.empty()) return creds.token;
    struct stat st {};
    if (::stat(creds.token_file.c_str(), &st) == 0) {
      const int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * kNsPerSec + st.st_mtim.tv_nsec;
      if (mtime != token_mtime || st.st_size != token_size || st.st_ino != token_ino) {
        std::ifstream in(creds.token_file);
        std::stringstream text;
        text << in.rdbuf();
        if (in) {
          token = trimmed(text.str());
          token_mtime = mtime;
          token_size = st.st_size;
          token_ino = st.st_ino;
          ++token_reloads;
        }
      }
    }
    return token.empty() ? creds.token : token;
  }

  template <class Body>
  void prepare(http::request<Body>& req) {
    req.set(http::field::host, host_header);
    req.set(http::field::accept, "application/json");
    req.set(http::field::user_agent, "switchyard/" + std::string(versionString()));
    const std::string& t = bearer();
    if (!t.empty()) req.set(http::field::authorization, "Bearer " + t);
  }

  void track(const std::shared_ptr<Stream>& stream) {
    open.remove_if([](const std::weak_ptr<Stream>& w) { return w.expired(); });
    open.push_back(stream);
  }
};

namespace {

// Resolve, connect and handshake under the stream's current deadline; "" on success.
asio::awaitable<std::string> connectStream(ApiClient::Impl& impl, Stream& stream) {
  auto& layer = beast::get_lowest_layer(stream);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(impl.creds.host, ec);
  if (!ec) {
    std::tie(ec) = co_await layer.async_connect(tcp::endpoint(address, impl.creds.port), kTuple);
  } else {
    tcp::resolver resolver(impl.io);
    auto [rec, results] =
        co_await resolver.async_resolve(impl.creds.host, std::to_string(impl.creds.port), kTuple);
    if (rec) co_return "resolve: " + rec.message();
    std::tie(ec, std::ignore) = co_await layer.async_connect(results, kTuple);
  }
  if (ec) co_return "connect: " + ec.message();
  boost::system::error_code ignored;
  layer.socket().set_option(tcp::no_delay(true), ignored);
  if (impl.sni && !SSL_set_tlsext_host_name(stream.native_handle(), impl.server_name.c_str())) {
    co_return "handshake: cannot set the server name";
  }
  if (!impl.creds.insecure_skip_verify) {
    stream.set_verify_callback(ssl::host_name_verification(impl.server_name));
  }
  std::tie(ec) = co_await stream.async_handshake(ssl::stream_base::client, kTuple);
  if (ec) co_return "handshake: " + ec.message();
  co_return std::string();
}

void closeStream(Stream& stream) {
  boost::system::error_code ignored;
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(stream).close();
}

}  // namespace

ApiClient::ApiClient(asio::io_context& io, Credentials credentials)
    : impl_(std::make_shared<Impl>(io, std::move(credentials))) {}

ApiClient::~ApiClient() { cancel(); }

const Credentials& ApiClient::credentials() const { return impl_->creds; }
uint64_t ApiClient::tokenReloads() const { return impl_->token_reloads; }

void ApiClient::cancel() {
  impl_->cancelled = true;
  for (auto& weak : impl_->open) {
    if (auto stream = weak.lock()) closeStream(*stream);
  }
  impl_->open.clear();
}

asio::awaitable<ApiResponse> ApiClient::request(ApiMethod method, std::string target,
                                                std::string body, std::string content_type,
                                                TimeNs timeout) {
  const std::shared_ptr<Impl> impl = impl_;  // the coroutine keeps what it uses alive
  ApiResponse out;
  if (impl->cancelled) {
    out.error = "cancelled";
    co_return out;
  }
  auto stream = std::make_shared<Stream>(impl->io, impl->ctx);
  impl->track(stream);
  beast::get_lowest_layer(*stream).expires_after(ns(timeout));
  out.error = co_await connectStream(*impl, *stream);
  if (!out.error.empty()) {
    closeStream(*stream);
    co_return out;
  }
  http::request<http::string_body> req{
      method == ApiMethod::kPatch ? http::verb::patch : http::verb::get, target, 11};
  impl->prepare(req);
  if (method == ApiMethod::kPatch) {
    req.set(http::field::content_type, content_type);
    req.body() = std::move(body);
  }
  req.keep_alive(false);
  req.prepare_payload();
  auto [wec, wn] = co_await http::async_write(*stream, req, kTuple);
  if (wec) {
    out.error = "write: " + wec.message();
    closeStream(*stream);
    co_return out;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxListBytes);
  auto [rec, rn] = co_await http::async_read(*stream, buffer, parser, kTuple);
  if (rec) {
    out.error = rec == beast::error::timeout ? "timeout" : "read: " + rec.message();
    closeStream(*stream);
    co_return out;
  }
  out.status = static_cast<int>(parser.get().result_int());
  out.body = std::move(parser.get().body());
  closeStream(*stream);
  co_return out;
}

asio::awaitable<WatchResult> ApiClient::watch(std::string target, LineHandler on_line,
                                              EstablishedHandler on_established,
                                              TimeNs connect_timeout, TimeNs idle_timeout) {
  const std::shared_ptr<Impl> impl = impl_;
  WatchResult out;
  if (impl->cancelled) {
    out.end = WatchEnd::kCancelled;
    co_return out;
  }
  auto stream = std::make_shared<Stream>(impl->io, impl->ctx);
  impl->track(stream);
  auto& layer = beast::get_lowest_layer(*stream);
  layer.expires_after(ns(connect_timeout));
  out.error = co_await connectStream(*impl, *stream);
  auto finish = [&](WatchEnd end) {
    if (impl->cancelled) end = WatchEnd::kCancelled;
    out.end = end;
    closeStream(*stream);
    return out;
  };
  if (!out.error.empty()) co_return finish(WatchEnd::kTransport);
  http::request<http::empty_body> req{http::verb::get, target, 11};
  impl->prepare(req);
  auto [wec, wn] = co_await http::async_write(*stream, req, kTuple);
  if (wec) {
    out.error = "write: " + wec.message();
    co_return finish(WatchEnd::kTransport);
  }
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // a watch is an endless body; lines are bounded instead
  auto [hec, hn] = co_await http::async_read_header(*stream, buffer, parser, kTuple);
  if (hec) {
    out.error = hec == beast::error::timeout ? "timeout" : "read: " + hec.message();
    co_return finish(WatchEnd::kTransport);
  }
  // A completion already queued when cancel() closed the stream still arrives: the caller may
  // be gone, so no handler runs after a cancel.
  if (impl->cancelled) co_return finish(WatchEnd::kCancelled);
  out.status = static_cast<int>(parser.get().result_int());
  const bool established = out.status == 200;
  if (established && on_established) on_established();
  auto piece = std::make_unique<char[]>(kReadPiece);
  std::string line;
  for (;;) {
    if (parser.is_done()) co_return finish(established ? WatchEnd::kServerClosed
                                                       : WatchEnd::kHttpError);
    parser.get().body().data = piece.get();
    parser.get().body().size = kReadPiece;
    layer.expires_after(ns(idle_timeout));
    auto [ec, n] = co_await http::async_read_some(*stream, buffer, parser, kTuple);
    if (impl->cancelled) co_return finish(WatchEnd::kCancelled);
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = kReadPiece - parser.get().body().size;
    std::string_view data(piece.get(), got);
    if (!established) {
      out.body.append(data.substr(0, kErrorBodyLimit - std::min(kErrorBodyLimit, out.body.size())));
    } else {
      while (!data.empty()) {
        const size_t newline = data.find('\n');
        const std::string_view part = data.substr(0, newline);
        if (line.size() + part.size() > kMaxObjectBytes) {
          out.error = "a watch event is larger than the limit";
          co_return finish(WatchEnd::kLineTooLong);
        }
        line.append(part);
        if (newline == std::string_view::npos) break;
        data.remove_prefix(newline + 1);
        if (!line.empty()) {
          ++out.lines;
          if (!on_line(line)) co_return finish(WatchEnd::kStopped);
          if (impl->cancelled) co_return finish(WatchEnd::kCancelled);
        }
        line.clear();
      }
    }
    if (ec) {
      if (ec == beast::error::timeout) {
        out.error = "idle timeout";
        co_return finish(WatchEnd::kIdleTimeout);
      }
      out.error = "read: " + ec.message();
      co_return finish(established ? WatchEnd::kTransport : WatchEnd::kHttpError);
    }
  }
}

}  // namespace switchyard::fleet::kubernetes
