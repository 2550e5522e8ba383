// ApiClient: the Kubernetes API server's REST API over HTTPS (Asio + OpenSSL through Beast's
// ssl_stream), on the control plane's io_context; no threads of its own, no kubectl, no client
// library.
//
// - request(): one GET or PATCH on its own connection (lists every resync, a few patches: not
//   worth pooling), bounded by a deadline that covers resolve, connect, handshake and the whole
//   response.
// - watch(): opens a long-lived GET and hands every line of the (chunked) body to a callback as it
//   arrives, until the server ends the stream, the callback says stop, no byte arrives for
//   `idle_timeout`, or cancel() is called.
// The bearer token is re-read from its file whenever the file changes (projected service-account
// tokens rotate); a 401 answer is returned as such, and the next request reads the file again.
// The server's certificate is verified against the configured CA (or the system store) and the
// server's host name or IP; a client certificate is presented when configured.
//
// Construction throws std::runtime_error when the TLS material is unusable (start-up only).
// Every other failure is a value. Control thread only. Beast stays in api_client.cc.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/url_text.h"
#include "fleet/discovery/kubernetes/credentials.h"

namespace switchyard::fleet::kubernetes {

enum class ApiMethod : uint8_t { kGet, kPatch };

struct ApiResponse {
  int status = 0;      // 0: no HTTP response (see error)
  std::string body;    // limited to kMaxListBytes
  std::string error;   // transport failure ("connect: ...", "handshake: ...", "timeout")
};

enum class WatchEnd : uint8_t {
  kServerClosed,  // the stream ended normally (the server's timeoutSeconds)
  kStopped,       // the line callback returned false
  kHttpError,     // the server answered other than 200: see status and body
  kTransport,     // connect, TLS, reset or a malformed response: see error
  kIdleTimeout,   // nothing arrived for idle_timeout
  kLineTooLong,   // a line above kMaxObjectBytes
  kCancelled,     // cancel() was called
};

struct WatchResult {
  WatchEnd end = WatchEnd::kServerClosed;
  int status = 0;
  std::string body;   // kHttpError: the error body (a Status object)
  std::string error;
  uint64_t lines = 0;
};

// Called with each line (without its newline); return false to end the watch.
using LineHandler = std::function<bool(std::string_view line)>;
// Called once the server answered 200 to a watch (the stream is established).
using EstablishedHandler = std::function<void()>;

class ApiClient {
 public:
  ApiClient(boost::asio::io_context& io, Credentials credentials);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // `target` is the path and query ("/api/v1/pods?labelSelector=..."). `content_type` only for
  // PATCH (e.g. application/merge-patch+json).
  boost::asio::awaitable<ApiResponse> request(ApiMethod method, std::string target,
                                              std::string body, std::string content_type,
                                              TimeNs timeout);
  boost::asio::awaitable<WatchResult> watch(std::string target, LineHandler on_line,
                                            EstablishedHandler on_established,
                                            TimeNs connect_timeout, TimeNs idle_timeout);
  // Closes every open connection; their operations end with kCancelled / an error. Further
  // calls fail at once.
  void cancel();

  const Credentials& credentials() const;
  // Times the token file was (re-)read after a change (for tests and logs).
  uint64_t tokenReloads() const;

  struct Impl;  // opaque; public only so that api_client.cc's helpers can name it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace switchyard::fleet::kubernetes
