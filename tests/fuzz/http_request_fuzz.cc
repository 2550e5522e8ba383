// Fuzz target: client requests as the gateway reads them (gateway/worker.cc): bytes from the
// socket, arriving in pieces cut where the input says, through the gateway's request parser
// (gateway/client_request.h) with its header and body limits, several requests per connection
// (keep-alive, pipelining); then what the request path reads from each complete request before
// routing: the header-count cap, the bearer key, the deadline headers, the routing-strategy
// header, the async-job path and the body's inspection. Whole and in pieces, the bytes must give
// the same requests and the same error (or, in pieces, an incomplete request where the whole
// bytes give a parse error). And every call of the gateway's parser must agree with Beast's own
// request_parser<string_body> fed the same bytes: the bytes used and the error, and for each
// request the method, target, version, keep-alive, body, the fields (in order among fields of
// one name: Beast's container groups a name's fields) and the lookups by name and by field.
#include <algorithm>
#include <cctype>
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
#include "gateway/client_request.h"
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

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The fields as "name: value" lines, stably sorted by name (case-insensitively): Beast's
// container moves a field next to the last one of its name, the gateway's keeps arrival order.
std::vector<std::string> byName(std::vector<std::pair<std::string, std::string>> fields) {
  std::stable_sort(fields.begin(), fields.end(),
                   [](const auto& a, const auto& b) { return lower(a.first) < lower(b.first); });
  std::vector<std::string> lines;
  for (const auto& [name, value] : fields) lines.push_back(name + ": " + value);
  return lines;
}

// The lookups the request path makes, by field and by name.
constexpr http::field kLookedUpFields[] = {http::field::authorization, http::field::content_type,
                                           http::field::expect, http::field::connection};
constexpr std::string_view kLookedUpNames[] = {
    "x-request-id", "traceparent", "x-switchyard-explain", "routing-strategy",
    "x-request-deadline-ms", "x-request-timeout", "x-switchyard-gpu", "X-Session-Id"};

// Beast's reading of the same request, compared with the gateway's.
void compare(switchyard::gateway::ClientRequest& ours, const http::request<http::string_body>& theirs) {
  check(ours.method() == theirs.method());
  check(ours.target() == std::string_view(theirs.target()));
  check(ours.version() == theirs.version());
  check(ours.keep_alive() == theirs.keep_alive());
  check(ours.body() == theirs.body());
  std::vector<std::pair<std::string, std::string>> mine, reference;
  for (size_t i = 0; i < ours.fieldCount(); ++i) {
    const auto field = ours.fieldAt(i);
    mine.emplace_back(std::string(field.name_string), std::string(field.value));
    const std::string_view first_by_name = ours[field.name_string];
    check(first_by_name == std::string_view(theirs[field.name_string]));
    if (field.name != http::field::unknown) {
      check(ours[field.name] == std::string_view(theirs[field.name]));
    }
  }
  for (const auto& field : theirs) {
    reference.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  check(byName(mine) == byName(reference));
  for (const http::field f : kLookedUpFields) check(ours[f] == std::string_view(theirs[f]));
  for (const std::string_view name : kLookedUpNames) {
    check(ours[name] == std::string_view(theirs[name]));
  }
}

// What the gateway's request path reads from a complete request before it routes it.
std::string handle(switchyard::gateway::ClientRequest& req) {
  std::string out;
  out += std::string(http::to_string(req.method())) + " " + std::string(req.target()) + "\n";
  for (size_t i = 0; i < req.fieldCount(); ++i) {
    const auto field = req.fieldAt(i);
    out += std::string(field.name_string) + ": " + std::string(field.value) + "\n";
  }
  out += req.fieldCount() > kMaxHeaderCount ? "431\n" : "";
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
  switchyard::gateway::RequestFieldStore fields;  // kept from request to request, as a connection's
  std::string body;
  while (out.requests.size() < kMaxRequests) {
    switchyard::gateway::ClientRequest parser(fields, body);
    http::request_parser<http::string_body> reference;
    for (auto* p : {static_cast<http::basic_parser<true>*>(&parser),
                    static_cast<http::basic_parser<true>*>(&reference)}) {
      p->header_limit(kHeaderLimit);
      p->body_limit(kBodyLimit);
      p->eager(true);
    }
    if (buffer.empty() && next == pieces.size()) return out;  // the client is done
    while (!parser.is_done()) {
      if (buffer.empty()) {
        if (next == pieces.size()) {
          out.error = "partial";
          return out;
        }
        buffer.append(pieces[next++]);
      }
      beast::error_code ec, reference_ec;
      const size_t used = parser.put(boost::asio::buffer(buffer), ec);
      const size_t reference_used = reference.put(boost::asio::buffer(buffer), reference_ec);
      check(used == reference_used && ec == reference_ec);
      check(parser.is_header_done() == reference.is_header_done());
      check(parser.is_done() == reference.is_done());
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
        check(parser.content_length() == reference.content_length());
        // The gateway answers 413 before reading a body it will refuse.
        const auto length = parser.content_length();
        if (length && *length > kBodyLimit) {
          out.error = "body too large";
          return out;
        }
      }
    }
    compare(parser, reference.get());
    out.requests.push_back(handle(parser));
    if (!parser.keep_alive()) return out;
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
