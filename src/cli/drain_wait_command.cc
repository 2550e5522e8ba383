#include "cli/drain_wait_command.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/openai_error.h"
#include "core/duration_text.h"
#include "core/url_text.h"
#include "fleet/fleet_registry.h"

namespace switchyard::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Answer {
  int status = 0;  // 0: no answer
  std::string body;
};

// One request with a deadline (the gateway's admin listener is plain HTTP on the cluster
// network).
Answer call(const std::string& host, uint16_t port, http::verb method, const std::string& target,
            const std::string& body, const std::string& authorization,
            std::chrono::milliseconds timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(timeout);
  Answer answer;
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return answer;
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, host);
  req.set(http::field::user_agent, "switchyard-drain-wait");
  if (!authorization.empty()) req.set(http::field::authorization, authorization);
  if (method == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.keep_alive(false);
  req.prepare_payload();
  bool done = false;
  stream.async_connect(results, [&](const boost::system::error_code& e, const tcp::endpoint&) {
    if (e) {
      done = true;
      return;
    }
    http::async_write(stream, req, [&](const boost::system::error_code& we, size_t) {
      if (we) {
        done = true;
        return;
      }
      auto buffer = std::make_shared<beast::flat_buffer>();
      auto res = std::make_shared<http::response<http::string_body>>();
      http::async_read(stream, *buffer, *res,
                       [&, buffer, res](const boost::system::error_code& re, size_t) {
                         done = true;
                         if (re) return;
                         answer.status = static_cast<int>(res->result_int());
                         answer.body = std::move(res->body());
                       });
    });
  });
  io.run();
  (void)done;
  return answer;
}

struct Status {
  bool known = false;  // the gateway has the replica in its fleet
  bool empty = false;
  int64_t in_flight = -1;
};

Status readStatus(const Answer& answer) {
  Status status;
  if (answer.status == 404) return status;  // not (or no longer) in the fleet
  if (answer.status != 200) return status;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(answer.body).get(root) != simdjson::SUCCESS) return status;
  status.known = true;
  bool empty = false;
  int64_t in_flight = 0;
  if (root["empty"].get(empty) == simdjson::SUCCESS) status.empty = empty;
  if (root["in_flight"].get(in_flight) == simdjson::SUCCESS) status.in_flight = in_flight;
  return status;
}

int refused(const std::string& url, int status) {
  fmt::print(stderr,
             "drain-wait: {} refused the call ({}): its admin listener needs a token; pass "
             "--token-file with a key of its admin_auth.keys_file\n",
             url, status);
  return 2;
}

}  // namespace

bool parseGatewayUrl(const std::string& url, std::string& host, uint16_t& port) {
  std::string_view rest = url;
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  else if (rest.find("://") != std::string_view::npos) return false;
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return false;
  return fleet::splitHostPort(rest, host, port) && port != 0;
}

bool parseTimeoutText(const std::string& text, TimeNs& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size()) {
    if (!std::isfinite(seconds) || seconds < 0 || seconds > 86400 * 7) return false;
    out = static_cast<TimeNs>(seconds * kNsPerSec);
    return true;
  }
  return parseDurationText(text, out);
}

std::string readAdminToken(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  const auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!token.empty() && blank(token.back())) token.pop_back();
  size_t start = 0;
  while (start < token.size() && blank(token[start])) ++start;
  token.erase(0, start);
  if (token.empty()) {
    error = path + " is empty";
  } else if (std::any_of(token.begin(), token.end(), blank)) {
    error = path + " holds more than one token";
    token.clear();
  }
  return token;
}

int runDrainWait(const DrainWaitOptions& options) {
  TimeNs timeout = 0;
  TimeNs interval = 0;
  if (!parseTimeoutText(options.timeout, timeout)) {
    fmt::print(stderr, "drain-wait: --timeout '{}' is not a duration like 90s or 2m\n",
               options.timeout);
    return 2;
  }
  if (!parseTimeoutText(options.interval, interval) || interval <= 0) {
    fmt::print(stderr, "drain-wait: --interval '{}' is not a positive duration\n",
               options.interval);
    return 2;
  }
  if (options.pod.empty()) {
    fmt::print(stderr, "drain-wait: --pod must name the Pod (e.g. --pod $(POD_NAME))\n");
    return 2;
  }
  struct Gateway {
    std::string url, host;
    uint16_t port = 0;
    bool drained = false;  // POST answered
    Status last;
    bool answered = false;
  };
  std::vector<Gateway> gateways;
  for (const std::string& list : options.gateways) {
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = list.find(',', start);
      const std::string url = list.substr(start, comma - start);
      if (!url.empty()) {
        Gateway g;
        g.url = url;
        if (!parseGatewayUrl(url, g.host, g.port)) {
          fmt::print(stderr, "drain-wait: --gateway '{}' is not http://HOST:PORT\n", url);
          return 2;
        }
        gateways.push_back(std::move(g));
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (gateways.empty()) {
    fmt::print(stderr, "drain-wait: --gateway http://HOST:ADMIN_PORT is required\n");
    return 2;
  }
  std::string token_file = options.token_file;
  if (const char* env = std::getenv("SWITCHYARD_ADMIN_TOKEN_FILE");
      token_file.empty() && env != nullptr) {
    token_file = env;
  }
  std::string authorization;
  if (!token_file.empty()) {
    std::string error;
    const std::string token = readAdminToken(token_file, error);
    if (token.empty()) {
      fmt::print(stderr, "drain-wait: --token-file: {}\n", error);
      return 2;
    }
    authorization = "Bearer " + token;
  }
  std::string pod_json;
  api::appendJsonEscaped(pod_json, options.pod);
  const std::string body = R"({"pod":")" + pod_json + "\"}";
  const std::string path_name = urlEncode(options.pod, "/:[]");
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::nanoseconds(timeout);
  const auto per_call = std::chrono::milliseconds(
      std::clamp<int64_t>(interval / kNsPerMs * 4, 1000, 5000));
  int64_t reported = -2;
  for (;;) {
    bool all_done = true;
    int64_t in_flight = 0;
    for (Gateway& g : gateways) {
      if (options.drain && !g.drained) {
        const Answer a = call(g.host, g.port, http::verb::post, "/admin/drain", body,
                              authorization, per_call);
        if (a.status == 200 || a.status == 404) g.drained = true;
        if (a.status == 401 || a.status == 403) return refused(g.url, a.status);
      }
      const Answer a = call(g.host, g.port, http::verb::get, "/admin/drain/" + path_name, {},
                            authorization, per_call);
      if (a.status == 401 || a.status == 403) return refused(g.url, a.status);
      g.answered = a.status != 0;
      g.last = readStatus(a);
      const bool done = g.answered && (!g.last.known || g.last.empty);
      all_done &= done;
      if (g.last.known && g.last.in_flight > 0) in_flight += g.last.in_flight;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (all_done) {
      fmt::print(stderr, "drain-wait: {} is drained after {:.1f} s\n", options.pod, waited);
      return 0;
    }
    if (in_flight != reported) {
      fmt::print(stderr, "drain-wait: {}: {} request(s) in flight ({:.1f} s)\n", options.pod,
                 in_flight, waited);
      reported = in_flight;
    }
    if (std::chrono::steady_clock::now() + std::chrono::nanoseconds(interval) >= deadline) {
      fmt::print(stderr, "drain-wait: {}: timed out after {:.1f} s with {} request(s) in flight\n",
                 options.pod, waited, in_flight);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(interval));  // a poll interval
  }
}

}  // namespace switchyard::cli
