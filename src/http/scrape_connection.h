// ScrapeConnection: one replica's keep-alive connection for telemetry scrapes (GET /metrics).
//
// Built for thousands of replicas scraped several times a second from one control thread: the
// request bytes are built once, the response is read into one buffer reused for every scrape
// (it grows to the largest page seen, up to a limit, and stays), the head is parsed by hand
// (http/response_head.h) and the body is handed to the owner as a view. A scrape on an open
// connection allocates nothing.
//
// Polled, not event-driven. Only the connect goes through the io_context; the open socket is
// then taken out of Asio's epoll set, start() sends the request at once, and the answer is
// read when the owner calls collect(), typically once per tick for a whole batch of scrapes.
// A socket in Asio's edge-triggered epoll set wakes its thread whenever data arrives, whether
// or not anyone waits for it: with a thousand replicas that is a wake-up (a context switch)
// per answer, which cost more than the scrape itself. Polled, a batch of answers costs one
// wake-up and one read each. With a ScrapeReadiness the owner learns which sockets have
// something to read from one epoll_wait that never blocks, so a slow answer costs no read
// that finds nothing.
//
// A reused connection that the peer closed while idle is retried once on a fresh one. Timeouts
// are the owner's: it calls cancel() on a scrape that took too long (one sweep over all
// connections is cheaper than a timer per scrape).
//
// Control thread only (the io_context it was made with); one scrape at a time.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::http {

// An epoll set of polled scrape sockets that no thread blocks on: the owner asks it, once a
// tick, which of them have something to read (an answer, or the peer's close).
class ScrapeReadiness {
 public:
  ScrapeReadiness();
  ~ScrapeReadiness();
  ScrapeReadiness(const ScrapeReadiness&) = delete;
  ScrapeReadiness& operator=(const ScrapeReadiness&) = delete;

  struct Ready {
    uint64_t key;
    bool peer_closed;  // the peer's close has arrived too (with the last answer, or alone)
  };
  // Watches `fd` for input under `key`, until the socket is closed.
  bool watch(int fd, uint64_t key);
  // The sockets with something to read, into `out` (cleared first; reused); at most 512 at a
  // time. True if there may be more: read these, then ask again. Edge-triggered: a socket is
  // named once for what arrived, so the reader reads until a short read, and learns of a close
  // that came with an answer from `peer_closed` (it will not be named for it again).
  bool ready(std::vector<Ready>& out);

 private:
  int fd_ = -1;
};

class ScrapeConnection : public std::enable_shared_from_this<ScrapeConnection> {
 public:
  // Receives each scrape's outcome. status 0: no HTTP response (connect failure, reset,
  // cancelled, malformed or over the size limit). The body view is valid during the call only.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void onScrape(int status, std::string_view body) = 0;
  };

  ScrapeConnection(boost::asio::io_context& io, std::string host, uint16_t port,
                   std::string_view host_header, std::string_view target, size_t body_limit,
                   Sink* sink);

  ~ScrapeConnection();

  // Starts one scrape; false if one is already running. On an open connection the request is
  // sent at once; otherwise a connection is made first (on the io_context), then it is sent.
  bool start();
  // Reads what has arrived of the running scrape's answer, without waiting. Reports the
  // outcome to the sink when the answer is complete or the scrape failed. True while the
  // scrape still waits (for its connection or its answer): call again later.
  bool collect();
  // Reads its socket as told by a ScrapeReadiness: the running scrape's answer, or, between
  // scrapes, the peer's close (the socket is closed; the next scrape connects afresh). With
  // `peer_closed` the socket is closed once the answer is read.
  void onReadable(bool peer_closed = false);
  // Open connections from now on are watched by `readiness` under `key` (null: not watched).
  void watchWith(ScrapeReadiness* readiness, uint64_t key) {
    readiness_ = readiness;
    readiness_key_ = key;
  }
  // The request target of the scrapes that start from now on (one running keeps its own).
  void setTarget(std::string_view target);
  // Abandons the running scrape (its outcome is reported as status 0) and closes the socket.
  void cancel();
  // The owner is going away: no outcome is reported any more.
  void detach() {
    sink_ = nullptr;
    cancel();
  }
  bool busy() const { return busy_; }
  // The request is not all sent yet (the socket's buffer was full): collect() sends the rest.
  bool sending() const { return phase_ == Phase::kSending; }
  // Asks the CPU to bring in what a scrape touches (this object, the request, the read
  // buffer), for an owner that starts or reads many cold connections in a row.
  void prefetch() const;
  // The open connection's socket (-1: none), for a caller that waits with poll(2).
  int nativeHandle() const { return fd_; }

 private:
  std::string requestFor(std::string_view target) const;
  enum class Phase { kIdle, kConnecting, kSending, kReceiving };
  enum class Parsed { kNeedMore, kEnded };

  void connect();
  void onConnected();
  void closeSocket();
  // Sends what is left of the request; false if the scrape ended (failed).
  bool send();
  // Reads and parses until the answer is complete, nothing more has arrived, or it failed;
  // `to_the_close`: the peer closed, read until the end of the stream.
  void receive(bool to_the_close = false);
  Parsed parse();
  Parsed failParse();
  void finish(int status, std::string_view body);
  void fail(bool retry);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::socket socket_;  // while connecting; then released into fd_
  int fd_ = -1;
  ScrapeReadiness* readiness_ = nullptr;
  uint64_t readiness_key_ = 0;
  Phase phase_ = Phase::kIdle;
  size_t sent_ = 0;  // bytes of request_ sent
  std::string host_;
  uint16_t port_;
  std::string host_header_;
  std::string request_;
  std::string next_request_;  // setTarget() while a scrape was writing request_
  size_t body_limit_;
  Sink* sink_;
  std::vector<char> buffer_;
  size_t filled_ = 0;
  bool busy_ = false;
  bool reused_ = false;       // this scrape started on an already open connection
  bool have_endpoint_ = false;
  boost::asio::ip::tcp::endpoint endpoint_;
  uint64_t generation_ = 0;   // bumped by cancel(): late handlers of a cancelled scrape are dropped
};

}  // namespace switchyard::http
