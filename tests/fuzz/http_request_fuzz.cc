// Fuzz target: client requests as the gateway reads them (gateway/worker.cc): bytes from the
// socket, arriving in pieces cut where the input says, through Beast's request parser with the
// gateway's header and body limits, several requests per connection (keep-alive, pipelining);
// then what the request path reads from each complete request before routing: the header-count
// cap, the bearer key, the deadline headers, the routing-strategy header, the async-job path and
// the body's inspection. Whole and in pieces, the bytes must give the same requests and the same
// error (or, in pieces, an incomplete request where the whole bytes give a parse error).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "admission/deadline.h"
#include "api/request_inspector.h"
#include "auth/api_key.h"
#include "gateway/async_jobs.h"
#include "routing/strategy_spec.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr size_t kHeaderLimit = 8 * 1024;  // smaller than the gateway's, for speed
constexpr size_t kBodyLimit = 64 * 1024;
constexpr size_t kMaxRequests = 8;
constexpr size_t kMaxHeaderCount = 100;

void check(bool condition) {
  if (!condition) std::abort();
}

struct Parsed {
  std::vector<std::string> requests;  // method, target, fields and body, flattened
  std::string error;                  // the error that ended the connection, if any
};

// What the gateway's request path reads from a complete request before it routes it.
std::string handle(http::request<http::string_body>& req) {
  std::string out;
  out += std::string(req.method_string()) + " " + std::string(req.target()) + "\n";
  size_t fields = 0;
  for (const auto& field : req) {
    out += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
    ++fields;
  }
  out += fields > kMaxHeaderCount ? "431\n" : "";
  const std::string_view token = switchyard::auth::bearerToken(req[http::field::authorization]);
  check(token.size() <= switchyard::auth::kMaxTokenBytes);
  const auto deadline = switchyard::admission::parseDeadline(req["x-request-deadline-ms"],
                                                             req["x-request-timeout"]);
  check(deadline.malformed || deadline.remaining >= -1);
  switchyard::routing::StrategySpec spec;
  std::string_view bad;
  switchyard::routing::parseStrategySpec(req["routing-strategy"], spec, &bad);
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  switchyard::gateway::classifyJobPath(path, req.method() == http::verb::post);
  // The body's inspection, with the padding simdjson reads past its end.
  std::string& body = req.body();
  out += body;
  body.reserve(body.size() + switchyard::api::RequestInspector::kRequiredPadding);
  static switchyard::api::RequestInspector inspector;
  switchyard::api::InspectedRequest info;
  inspector.inspect(body.data(), body.size(), body.capacity(), info);
  return out;
}

Parsed parse(const std::vector<std::string_view>& pieces) {
  Parsed out;
  std::string buffer;
  size_t next = 0;
  while (out.requests.size() < kMaxRequests) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    parser.eager(true);
    if (buffer.empty() && next == pieces.size()) return out;  // the client is done
    while (!parser.is_done()) {
      if (buffer.empty()) {
        if (next == pieces.size()) {
          out.error = "partial";
          return out;
        }
        buffer.append(pieces[next++]);
      }
      beast::error_code ec;
      const size_t used = parser.put(boost::asio::buffer(buffer), ec);
      buffer.erase(0, used);
      if (ec == http::error::need_more) {
        if (next == pieces.size()) {
          out.error = "partial";
          return out;
        }
        buffer.append(pieces[next++]);
        continue;
      }
      if (ec) {
        out.error = ec.message();
        return out;
      }
      if (parser.is_header_done() && !parser.is_done()) {
        // The gateway answers 413 before reading a body it will refuse.
        const auto length = parser.content_length();
        if (length && *length > kBodyLimit) {
          out.error = "body too large";
          return out;
        }
      }
    }
    out.requests.push_back(handle(parser.get()));
    if (!parser.get().keep_alive()) return out;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 256 * 1024) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Parsed whole = parse({bytes});
  std::vector<std::string_view> pieces;
  uint8_t step = data[0] == 0 ? 1 : data[0];
  for (size_t at = 0; at < bytes.size();) {
    const size_t len = std::min<size_t>(bytes.size() - at, 1 + (step % 29));
    pieces.push_back(bytes.substr(at, len));
    at += len;
    step = static_cast<uint8_t>(step * 37 + 11);
  }
  const Parsed split = parse(pieces);
  check(whole.requests == split.requests);
  // Beast resumes its search for the end of the headers where the previous piece ended, so a
  // malformed line ending it rejects in a whole buffer may, in pieces, leave it waiting for more
  // (the gateway closes such a connection at client_header_ms): one side "partial" is the same
  // outcome for the client. Anything else must agree.
  check(whole.error == split.error || whole.error == "partial" || split.error == "partial");
  return 0;
}
