// ScrapeConnection: one replica's keep-alive connection for telemetry scrapes (GET /metrics).
//
// Built for thousands of replicas scraped several times a second from one control thread: the
// request bytes are built once, the response is read into one buffer reused for every scrape
// (it grows to the largest page seen, up to a limit, and stays), the head is parsed by hand
// (http/response_head.h) and the body is handed to the owner as a view. Completion handlers hold
// a shared_ptr to the connection and fit Asio's recycled handler memory: a scrape on an open
// connection allocates nothing. A reused connection that the peer closed while idle is retried
// once on a fresh one. Timeouts are the owner's: it calls cancel() on a scrape that took too
// long (one sweep over all connections is cheaper than a timer per scrape).
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

  // Starts one scrape; false if one is already running.
  bool start();
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

 private:
  std::string requestFor(std::string_view target) const;
  void connect();
  void write();
  void read();
  void onRead(size_t n);
  void finish(int status, std::string_view body);
  void fail(bool retry);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::socket socket_;
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
