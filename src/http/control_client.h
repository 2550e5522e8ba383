// ControlHttpClient: a keep-alive HTTP/1.1 GET client for control-plane work (telemetry scrapes,
// health probes) against one replica. Runs on the io_context it was made with; one request at a
// time. A reused connection that the peer closed while idle is retried once on a fresh one.
// Beast stays in control_client.cc.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace switchyard::http {

struct GetResult {
  int status = 0;  // 0: no HTTP response (connect failure, reset, timeout)
  std::string body;
};

class ControlHttpClient {
 public:
  ControlHttpClient(boost::asio::io_context& io, std::string host, uint16_t port,
                    std::string host_header);
  ~ControlHttpClient();

  boost::asio::awaitable<GetResult> get(std::string target, std::chrono::nanoseconds timeout,
                                        uint64_t body_limit);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::http
