#include "http/scrape_connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <array>
#include <cerrno>

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

ScrapeReadiness::ScrapeReadiness() : fd_(::epoll_create1(EPOLL_CLOEXEC)) {}

ScrapeReadiness::~ScrapeReadiness() {
  if (fd_ >= 0) ::close(fd_);
}

bool ScrapeReadiness::watch(int fd, uint64_t key) {
  if (fd_ < 0) return false;
  epoll_event event{};
  // Edge-triggered: a socket is named once per arrival. Level-triggered, epoll would poll every
  // socket it named again at the next ask just to learn it was read, a second sock_poll per
  // scrape; the reader's part is to read until a short read (ScrapeConnection::receive).
  event.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  event.data.u64 = key;
  return ::epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &event) == 0;
}

bool ScrapeReadiness::ready(std::vector<Ready>& out) {
  out.clear();
  if (fd_ < 0) return false;
  std::array<epoll_event, 512> events;
  int n;
  do {
    n = ::epoll_wait(fd_, events.data(), static_cast<int>(events.size()), 0);
  } while (n < 0 && errno == EINTR);
  for (int i = 0; i < n; ++i) {
    const epoll_event& event = events[static_cast<size_t>(i)];
    out.push_back(Ready{event.data.u64, (event.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0});
  }
  return n == static_cast<int>(events.size());
}

ScrapeConnection::~ScrapeConnection() { closeSocket(); }

void ScrapeConnection::closeSocket() {
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void ScrapeConnection::prefetch() const {
  const char* self = reinterpret_cast<const char*>(this);
  for (size_t line = 0; line < sizeof *this; line += 64) __builtin_prefetch(self + line);
  __builtin_prefetch(request_.data());
  __builtin_prefetch(buffer_.data());
}

bool ScrapeConnection::start() {
  if (busy_) return false;
  if (!next_request_.empty()) {
    request_.swap(next_request_);
    next_request_.clear();
  }
  busy_ = true;
  filled_ = 0;
  sent_ = 0;
  reused_ = fd_ >= 0;
  if (reused_) {
    phase_ = Phase::kSending;
    send();
  } else {
    connect();
  }
  return true;
}

bool ScrapeConnection::collect() {
  if (phase_ == Phase::kSending && !send()) return busy_;
  if (phase_ == Phase::kReceiving) receive();
  return busy_;
}

void ScrapeConnection::onReadable(bool peer_closed) {
  if (busy_) {
    if (phase_ == Phase::kSending && !send()) return;
    // With a close among what arrived, read on to it: a truncated answer fails now, not at the
    // time-out, since nothing names this socket again.
    if (phase_ == Phase::kReceiving) receive(/*to_the_close=*/peer_closed);
    // An answer followed by the close: closed now, or the next scrape would write into it.
    if (!peer_closed || busy_ || fd_ < 0) return;
  }
  if (fd_ >= 0) closeSocket();  // between scrapes only the peer's close (or junk) can arrive
}

void ScrapeConnection::cancel() {
  ++generation_;
  closeSocket();
  if (busy_) finish(0, {});
}

void ScrapeConnection::connect() {
  phase_ = Phase::kConnecting;
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
    self->onConnected();
  });
}

void ScrapeConnection::onConnected() {
  boost::system::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);
  if (ec) return fail(false);
  fd_ = socket_.release(ec);  // out of the epoll set: the owner polls (see the header)
  if (ec || fd_ < 0) {
    fd_ = -1;
    return fail(false);
  }
  if (readiness_ && !readiness_->watch(fd_, readiness_key_)) return fail(false);
  phase_ = Phase::kSending;
  send();
}

bool ScrapeConnection::send() {
  while (sent_ < request_.size()) {
    const ssize_t n = ::send(fd_, request_.data() + sent_, request_.size() - sent_,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent_ += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;  // the socket's buffer is full: the rest goes at the next collect()
    } else {
      fail(reused_);
      return false;
    }
  }
  phase_ = Phase::kReceiving;
  return true;
}

void ScrapeConnection::receive(bool to_the_close) {
  for (;;) {
    if (filled_ == buffer_.size()) {
      if (buffer_.size() >= body_limit_ + kMaxHeadBytes) return fail(false);
      buffer_.resize(std::max(kInitialBuffer, buffer_.size() * 2));
    }
    const ssize_t n = ::recv(fd_, buffer_.data() + filled_, buffer_.size() - filled_,
                             MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // not yet: next collect()
    // The peer closed, or reset: a reused connection that closed before answering is retried.
    if (n <= 0) return fail(reused_ && filled_ == 0);
    const bool drained = filled_ + static_cast<size_t>(n) < buffer_.size();
    filled_ += static_cast<size_t>(n);
    if (parse() == Parsed::kEnded) return;
    // A short read took all there was; what arrives later is named again by the readiness set
    // (edge-triggered), so asking now would only find nothing. Without a readiness set the
    // owner polls, and one more read costs the same as the next collect()'s.
    if (drained && readiness_ && !to_the_close) return;
  }
}

ScrapeConnection::Parsed ScrapeConnection::parse() {
  const std::string_view bytes(buffer_.data(), filled_);
  ResponseHead head;
  switch (parseResponseHead(bytes, head)) {
    case HeadResult::kIncomplete:
      if (filled_ > kMaxHeadBytes) return failParse();
      return Parsed::kNeedMore;
    case HeadResult::kMalformed: return failParse();
    case HeadResult::kComplete: break;
  }
  char* body = buffer_.data() + head.head_bytes;
  const size_t have = filled_ - head.head_bytes;
  if (head.chunked) {
    size_t decoded = 0, consumed = 0;
    switch (decodeChunkedInPlace(body, have, decoded, consumed)) {
      case ChunkedResult::kIncomplete:
        if (have > body_limit_) return failParse();
        return Parsed::kNeedMore;
      case ChunkedResult::kMalformed: return failParse();
      case ChunkedResult::kComplete: break;
    }
    if (consumed != have) head.keep_alive = false;  // pipelined junk: start afresh next time
    if (!head.keep_alive) closeSocket();
    finish(head.status, std::string_view(body, decoded));
    return Parsed::kEnded;
  }
  if (head.content_length < 0) {
    // No length: the body runs to the end of the connection. Engines do not answer so; it is
    // treated as malformed rather than read until close.
    return failParse();
  }
  const auto length = static_cast<size_t>(head.content_length);
  if (length > body_limit_) return failParse();
  if (have < length) {
    // Room for exactly this page: the buffer then stays at the size of the replica's pages.
    if (buffer_.size() < head.head_bytes + length) buffer_.resize(head.head_bytes + length);
    return Parsed::kNeedMore;
  }
  if (have != length) head.keep_alive = false;
  if (!head.keep_alive) closeSocket();
  finish(head.status, std::string_view(body, length));
  return Parsed::kEnded;
}

ScrapeConnection::Parsed ScrapeConnection::failParse() {
  fail(false);
  return Parsed::kEnded;
}

void ScrapeConnection::fail(bool retry) {
  closeSocket();
  if (retry) {
    // The peer closed our idle keep-alive connection: once more on a fresh one.
    reused_ = false;
    filled_ = 0;
    sent_ = 0;
    return connect();
  }
  finish(0, {});
}

void ScrapeConnection::finish(int status, std::string_view body) {
  busy_ = false;
  phase_ = Phase::kIdle;
  if (sink_) sink_->onScrape(status, body);
}

}  // namespace switchyard::http
