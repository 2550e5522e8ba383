#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace switchyard::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::unique_ptr<ChildProcess> spawnSwitchyard(std::vector<std::string> args) {
  args.insert(args.begin(), SWITCHYARD_BINARY);
  return std::make_unique<ChildProcess>(std::move(args));
}

// --- HTTP ---

std::string HttpResult::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) return value;
  }
  return {};
}

bool HttpResult::hasHeader(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& header) { return equalsIgnoreCase(header.first, name); });
}

struct HttpClient::Impl {
  Impl(uint16_t port, std::chrono::milliseconds timeout)
      : port(port), timeout(timeout), stream(ioc) {}

  // Runs the io_context until the started operation completes.
  void runAll() {
    ioc.restart();
    ioc.run();
  }

  std::string ensureConnected() {
    if (connected) return closed ? "connection closed by server" : "";
    connected = true;
    boost::system::error_code result;
    stream.expires_after(timeout);
    stream.async_connect(tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), port),
                         [&](boost::system::error_code ec) { result = ec; });
    runAll();
    if (result) {
      closed = true;
      return "connect: " + result.message();
    }
    return {};
  }

  std::string send(std::string_view method, std::string_view target, std::string_view body,
                   const Headers& headers) {
    if (std::string error = ensureConnected(); !error.empty()) return error;
    http::request<http::string_body> request;
    request.method_string(method);
    request.target(target);
    request.version(11);
    request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    request.set(http::field::user_agent, "switchyard-test");
    bool has_content_type = false;
    for (const auto& [name, value] : headers) {
      request.set(name, value);
      has_content_type = has_content_type || equalsIgnoreCase(name, "content-type");
    }
    if (!body.empty() && !has_content_type) {
      request.set(http::field::content_type, "application/json");
    }
    request.body() = std::string(body);
    if (!body.empty() || method == "POST" || method == "PUT") request.prepare_payload();
    boost::system::error_code result;
    stream.expires_after(timeout);
    http::async_write(stream, request, [&](boost::system::error_code ec, size_t) { result = ec; });
    runAll();
    if (result) {
      closed = true;
      return "write: " + result.message();
    }
    return {};
  }

  void finish(HttpResult& result, const http::response<http::string_body>& response) {
    result.status = static_cast<int>(response.result_int());
    for (const auto& field : response) {
      result.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    if (!response.keep_alive()) close();
  }

  void close() {
    closed = true;
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
  }

  uint16_t port;
  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool connected = false;
  bool closed = false;
};

HttpClient::HttpClient(uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(port, timeout)) {}

HttpClient::~HttpClient() { impl_->close(); }

HttpResult HttpClient::request(std::string_view method, std::string_view target,
                               std::string_view body, const Headers& headers) {
  HttpResult result;
  result.error = impl_->send(method, target, body, headers);
  if (!result.ok()) return result;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256u << 20);
  boost::system::error_code error;
  impl_->stream.expires_after(impl_->timeout);
  http::async_read(impl_->stream, impl_->buffer, parser,
                   [&](boost::system::error_code ec, size_t) { error = ec; });
  impl_->runAll();
  if (error) {
    impl_->close();
    result.error = "read: " + error.message();
    return result;
  }
  impl_->finish(result, parser.get());
  result.body = std::move(parser.get().body());
  return result;
}

StreamResult HttpClient::stream(std::string_view method, std::string_view target,
                                std::string_view body, const Headers& headers,
                                const PieceCallback& on_piece) {
  StreamResult result;
  result.error = impl_->send(method, target, body, headers);
  if (!result.ok()) return result;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256u << 20);
  bool stopped = false;
  auto on_chunk = [&](std::uint64_t, std::string_view data, boost::system::error_code& ec) {
    result.pieces.push_back(StreamPiece{std::string(data), std::chrono::steady_clock::now()});
    result.body += data;
    if (on_piece && !on_piece(result.pieces.back())) {
      stopped = true;
      ec = http::error::end_of_stream;  // any error stops the parser
    }
    return data.size();
  };
  parser.on_chunk_body(on_chunk);
  // One deadline for the whole stream.
  impl_->stream.expires_after(impl_->timeout);
  boost::system::error_code error;
  while (!parser.is_done() && !error) {
    http::async_read_some(impl_->stream, impl_->buffer, parser,
                          [&](boost::system::error_code ec, size_t) { error = ec; });
    impl_->runAll();
  }
  if (stopped) {
    impl_->close();
    result.error = "stopped by the test";
    if (parser.is_header_done()) impl_->finish(result, parser.get());
    return result;
  }
  if (error) {
    impl_->close();
    result.error = "read: " + error.message();
    if (parser.is_header_done()) impl_->finish(result, parser.get());
    return result;
  }
  impl_->finish(result, parser.get());
  if (!parser.chunked()) {  // a plain body (e.g. an error) counts as one piece
    result.body = std::move(parser.get().body());
    result.pieces.push_back(StreamPiece{result.body, std::chrono::steady_clock::now()});
  }
  return result;
}

bool HttpClient::isOpen() const { return impl_->connected && !impl_->closed; }

uint16_t HttpClient::localPort() const {
  boost::system::error_code ec;
  auto endpoint = impl_->stream.socket().local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

bool HttpClient::waitForServerClose(SteadyTime deadline) {
  if (!isOpen()) return impl_->connected;
  char byte;
  boost::system::error_code error;
  impl_->stream.expires_at(deadline);
  impl_->stream.async_read_some(asio::buffer(&byte, 1),
                                [&](boost::system::error_code ec, size_t) { error = ec; });
  impl_->runAll();
  if (error == beast::error::timeout) return false;
  impl_->close();
  return error == asio::error::eof || error == asio::error::connection_reset;
}

HttpResult httpRequest(uint16_t port, std::string_view method, std::string_view target,
                       std::string_view body, Headers headers, std::chrono::milliseconds timeout) {
  HttpClient client(port, timeout);
  return client.request(method, target, body, headers);
}

StreamResult streamRequest(uint16_t port, std::string_view method, std::string_view target,
                           std::string_view body, Headers headers,
                           std::chrono::milliseconds timeout) {
  HttpClient client(port, timeout);
  return client.stream(method, target, body, headers);
}

// --- TempFile ---

TempFile::TempFile(std::string_view contents, std::string_view suffix) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/switchyard-test-XXXXXX";
  pattern += suffix;
  int fd = mkstemps(pattern.data(), static_cast<int>(suffix.size()));
  if (fd < 0) throw std::runtime_error("mkstemps failed");
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      std::remove(pattern.c_str());
      throw std::runtime_error("writing a temp file failed");
    }
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  path_ = std::move(pattern);
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

}  // namespace switchyard::testing
