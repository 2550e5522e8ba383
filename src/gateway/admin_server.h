// AdminServer: the operator-facing listener (health, debug views). Runs on the control thread's
// io_context, never on a hot-path worker. Handlers are plain functions from path to response so
// later issues can add endpoints (metrics, decisions, dashboard) in one place.
//
// secure() adds TLS (the listener's certificate store, reloaded like the client listener's) and
// an access policy (gateway/admin_access.h): a refused caller gets 401 before any handler runs.
// Every request other than GET/HEAD (a write: faults, drain, scale overrides) is logged with who
// made it, from where, and the status it got; the Authorization header is never logged.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::auth {
class TlsContextStore;
}

namespace switchyard::gateway {

class AdminAccess;

struct AdminResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// `query` is the request target after '?', undecoded ("" when absent).
using AdminHandler = std::function<AdminResponse(std::string_view query)>;

// The whole request, for handlers that serve a path prefix or read a body (PUT, POST).
struct AdminRequest {
  std::string_view method;
  std::string_view path;
  std::string_view query;
  std::string_view body;
};
using AdminRequestHandler = std::function<AdminResponse(const AdminRequest& request)>;

// The value of `name` in a query string ("limit=5&x=1"), undecoded; nullopt when absent.
std::optional<std::string_view> queryParam(std::string_view query, std::string_view name);

class AdminServer {
 public:
  AdminServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& listen);
  ~AdminServer();
  void handle(std::string path, AdminHandler handler);
  // Every path under `prefix` (e.g. "/metrics/") that has no exact handler; the longest
  // matching prefix wins.
  void handlePrefix(std::string prefix, AdminRequestHandler handler);
  uint16_t port() const;
  // Before start(). `tls` (may be null or disabled; outlives the server): the certificate store;
  // `access` (may be null: everyone allowed, writes logged as anonymous).
  void secure(const auth::TlsContextStore* tls, std::shared_ptr<AdminAccess> access);
  void start();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::gateway
