#include "http/scrape_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include "http/response_head.h"

namespace switchyard::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// The first read's size; then the buffer grows to the announced length of a page (or doubles for
// a chunked one) and keeps that size for the next scrapes.
constexpr size_t kInitialBuffer = 4 * 1024;
constexpr size_t kMaxHeadBytes = 16 * 1024;
}  // namespace

ScrapeConnection::ScrapeConnection(asio::io_context& io, std::string host, uint16_t port,
                                   std::string_view host_header, std::string_view target,
                                   size_t body_limit, Sink* sink)
    : io_(io), socket_(io), host_(std::move(host)), port_(port), host_header_(host_header),
      body_limit_(body_limit), sink_(sink) {
  request_ = requestFor(target);
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host_, ec);
  if (!ec) {
    endpoint_ = tcp::endpoint(address, port_);
    have_endpoint_ = true;
  }
}

std::string ScrapeConnection::requestFor(std::string_view target) const {
  std::string request;
  request.append("GET ").append(target).append(" HTTP/1.1\r\nHost: ").append(host_header_);
  request.append("\r\nAccept: text/plain\r\nUser-Agent: switchyard\r\n\r\n");
  return request;
}

void ScrapeConnection::setTarget(std::string_view target) {
  (busy_ ? next_request_ : request_) = requestFor(target);
}

bool ScrapeConnection::start() {
  if (busy_) return false;
  if (!next_request_.empty()) {
    request_.swap(next_request_);
    next_request_.clear();
  }
  busy_ = true;
  filled_ = 0;
  reused_ = socket_.is_open();
  if (reused_) {
    write();
  } else {
    connect();
  }
  return true;
}

void ScrapeConnection::cancel() {
  ++generation_;
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (busy_) finish(0, {});
}

void ScrapeConnection::connect() {
  auto self = shared_from_this();
  const uint64_t generation = generation_;
  if (!have_endpoint_) {
    // A host name: resolved once (asynchronously), then the address is kept.
    auto resolver = std::make_shared<tcp::resolver>(io_);
    resolver->async_resolve(
        host_, std::to_string(port_),
        [self, resolver, generation](const boost::system::error_code& ec,
                                     const tcp::resolver::results_type& results) {
          if (generation != self->generation_) return;
          if (ec || results.empty()) return self->fail(false);
          self->endpoint_ = results.begin()->endpoint();
          self->have_endpoint_ = true;
          self->connect();
        });
    return;
  }
  socket_.async_connect(endpoint_, [self, generation](const boost::system::error_code& ec) {
    if (generation != self->generation_) return;
    if (ec) return self->fail(false);
    boost::system::error_code ignored;
    self->socket_.set_option(tcp::no_delay(true), ignored);
    self->write();
  });
}

void ScrapeConnection::write() {
  auto self = shared_from_this();
  const uint64_t generation = generation_;
  asio::async_write(socket_, asio::buffer(request_),
                    [self, generation](const boost::system::error_code& ec, size_t) {
                      if (generation != self->generation_) return;
                      if (ec) return self->fail(self->reused_);
                      self->read();
                    });
}

void ScrapeConnection::read() {
  if (filled_ == buffer_.size()) {
    if (buffer_.size() >= body_limit_ + kMaxHeadBytes) return fail(false);
    buffer_.resize(std::max(kInitialBuffer, buffer_.size() * 2));
  }
  auto self = shared_from_this();
  const uint64_t generation = generation_;
  socket_.async_read_some(
      asio::buffer(buffer_.data() + filled_, buffer_.size() - filled_),
      [self, generation](const boost::system::error_code& ec, size_t n) {
        if (generation != self->generation_) return;
        if (ec) return self->fail(self->reused_ && self->filled_ == 0);
        self->onRead(n);
      });
}

void ScrapeConnection::onRead(size_t n) {
  filled_ += n;
  const std::string_view bytes(buffer_.data(), filled_);
  ResponseHead head;
  switch (parseResponseHead(bytes, head)) {
    case HeadResult::kIncomplete:
      if (filled_ > kMaxHeadBytes) return fail(false);
      return read();
    case HeadResult::kMalformed: return fail(false);
    case HeadResult::kComplete: break;
  }
  char* body = buffer_.data() + head.head_bytes;
  const size_t have = filled_ - head.head_bytes;
  if (head.chunked) {
    size_t decoded = 0, consumed = 0;
    switch (decodeChunkedInPlace(body, have, decoded, consumed)) {
      case ChunkedResult::kIncomplete:
        if (have > body_limit_) return fail(false);
        return read();
      case ChunkedResult::kMalformed: return fail(false);
      case ChunkedResult::kComplete: break;
    }
    if (consumed != have) head.keep_alive = false;  // pipelined junk: start afresh next time
    if (!head.keep_alive) {
      boost::system::error_code ignored;
      socket_.close(ignored);
    }
    return finish(head.status, std::string_view(body, decoded));
  }
  if (head.content_length < 0) {
    // No length: the body runs to the end of the connection. Engines do not answer so; it is
    // treated as malformed rather than read until close.
    return fail(false);
  }
  const auto length = static_cast<size_t>(head.content_length);
  if (length > body_limit_) return fail(false);
  if (have < length) {
    // Room for exactly this page: the buffer then stays at the size of the replica's pages.
    if (buffer_.size() < head.head_bytes + length) buffer_.resize(head.head_bytes + length);
    return read();
  }
  if (have != length) head.keep_alive = false;
  if (!head.keep_alive) {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
  finish(head.status, std::string_view(body, length));
}

void ScrapeConnection::fail(bool retry) {
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (retry) {
    // The peer closed our idle keep-alive connection: once more on a fresh one.
    reused_ = false;
    filled_ = 0;
    return connect();
  }
  finish(0, {});
}

void ScrapeConnection::finish(int status, std::string_view body) {
  busy_ = false;
  if (sink_) sink_->onScrape(status, body);
}

}  // namespace switchyard::http
