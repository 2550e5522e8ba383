#include "http/control_client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace switchyard::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
}

struct ControlHttpClient::Impl {
  asio::io_context& io;
  std::string host;
  uint16_t port;
  std::string host_header;
  std::optional<beast::tcp_stream> stream;

  asio::awaitable<bool> connect(std::chrono::nanoseconds timeout) {
    stream.emplace(io);
    stream->expires_after(timeout);
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (!ec) {
      std::tie(ec) = co_await stream->async_connect(tcp::endpoint(address, port), kTuple);
    } else {
      tcp::resolver resolver(io);
      auto [rec, results] = co_await resolver.async_resolve(host, std::to_string(port), kTuple);
      ec = rec;
      if (!ec) std::tie(ec, std::ignore) = co_await stream->async_connect(results, kTuple);
    }
    if (ec) stream.reset();
    co_return !ec;
  }
};

ControlHttpClient::ControlHttpClient(asio::io_context& io, std::string host, uint16_t port,
                                     std::string host_header)
    : impl_(std::make_unique<Impl>(Impl{io, std::move(host), port, std::move(host_header), {}})) {}

ControlHttpClient::~ControlHttpClient() = default;

void ControlHttpClient::close() { impl_->stream.reset(); }

asio::awaitable<GetResult> ControlHttpClient::get(std::string target,
                                                  std::chrono::nanoseconds timeout,
                                                  uint64_t body_limit) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = impl_->stream.has_value();
    if (!reused && !co_await impl_->connect(timeout)) co_return GetResult{};
    bhttp::request<bhttp::empty_body> req{bhttp::verb::get, target, 11};
    req.set(bhttp::field::host, impl_->host_header);
    impl_->stream->expires_after(timeout);
    auto [wec, wn] = co_await bhttp::async_write(*impl_->stream, req, kTuple);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(body_limit);
    boost::system::error_code ec = wec;
    if (!ec) {
      std::tie(ec, std::ignore) = co_await bhttp::async_read(*impl_->stream, buffer, parser,
                                                             kTuple);
    }
    if (ec) {
      impl_->stream.reset();
      if (reused) continue;  // the peer closed our idle keep-alive connection
      co_return GetResult{};
    }
    auto& res = parser.get();
    if (!res.keep_alive()) impl_->stream.reset();
    co_return GetResult{static_cast<int>(res.result_int()), std::move(res.body())};
  }
  co_return GetResult{};
}

}  // namespace switchyard::http
