// Fuzz target: the relay's answer parser (gateway/answer_parser.h) against Beast's own
// response_parser<buffer_body> on the same bytes, arriving in the same pieces into the same small
// body buffer. Both must agree on every call's outcome, on the status, the framing, keep-alive,
// the body bytes, and on the fields: AnswerParser's string must hold Beast's container's fields
// without the hop-by-hop ones, in the same order among fields of one name. The first two bytes
// pick the arrival and body sizes. A third parser notes the body's pieces where they lie
// (setBodyViews()) instead of copying them: read before the bytes they point at are dropped, they
// must make the same body.
#include <algorithm>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/answer_parser.h"

namespace {

namespace http = boost::beast::http;

void check(bool condition) {
  if (!condition) std::abort();
}

// The "Name: value\r\n" lines of `fields`, stably sorted by their name (case-insensitively).
std::vector<std::string> byName(const std::string& fields) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < fields.size();) {
    const size_t end = fields.find("\r\n", at);
    check(end != std::string::npos);
    lines.push_back(fields.substr(at, end - at));
    at = end + 2;
  }
  auto name = [](const std::string& line) {
    std::string n = line.substr(0, line.find(':'));
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return n;
  };
  std::stable_sort(lines.begin(), lines.end(),
                   [&](const std::string& a, const std::string& b) { return name(a) < name(b); });
  return lines;
}

// The input's bytes, `size` at a time.
struct Arrivals {
  std::string_view bytes;
  size_t size;
  size_t at = 0;
};

// Appends the next arrival to `pending`; false when every byte has arrived.
bool arrive(Arrivals& input, std::string& pending) {
  if (input.at >= input.bytes.size()) return false;
  const size_t len = std::min(input.size, input.bytes.size() - input.at);
  pending.append(input.bytes.substr(input.at, len));
  input.at += len;
  return true;
}

// The body as AnswerParser's views give it, from the same bytes arriving in the same sizes: each
// round's views are read before the bytes they point into are dropped. Empty on a parse error.
std::string bodyThroughViews(std::string_view bytes, size_t arrival) {
  std::string fields;
  switchyard::gateway::AnswerParser parser(fields);
  parser.body_limit(uint64_t{1} << 20);
  Arrivals input{bytes, arrival};
  std::string pending, body;
  bool starved = false;  // need_more: Beast wants more bytes before it is called again
  for (int rounds = 0; rounds < 100000 && !parser.is_done(); ++rounds) {
    if ((pending.empty() || starved || rounds % 3 == 0) && !arrive(input, pending)) break;
    parser.setBodyViews();
    boost::beast::error_code ec;
    const size_t used = parser.put(boost::asio::buffer(pending), ec);
    size_t noted = 0;
    for (const auto& view : parser.views()) {
      body.append(static_cast<const char*>(view.data()), view.size());
      noted += view.size();
    }
    check(noted == parser.viewBytes() && parser.views().size() <= parser.kMaxViews);
    pending.erase(0, used);
    starved = ec == boost::beast::http::error::need_more;
    if (ec && !starved &&
        ec != boost::beast::http::error::need_buffer) {
      return {};
    }
  }
  return body;
}

struct Side {
  std::string fields;
  std::string body;
  bool failed = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t arrival = 1 + data[0] % 64;
  const size_t room = 1 + data[1] % 32;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);

  Side ours, beasts;
  switchyard::gateway::AnswerParser answer(ours.fields);
  http::response_parser<http::buffer_body> reference;
  answer.body_limit(uint64_t{1} << 20);
  reference.body_limit(uint64_t{1} << 20);
  char our_piece[32];
  char their_piece[32];
  Arrivals input{bytes, arrival};
  std::string pending;  // arrived, not yet consumed (both consume the same: checked)
  bool starved = false;  // need_more: Beast wants more bytes before it is called again
  for (int rounds = 0; rounds < 100000 && !answer.is_done(); ++rounds) {
    if ((pending.empty() || starved || rounds % 3 == 0) && !arrive(input, pending)) break;
    answer.setBody(our_piece, room);
    reference.get().body().data = their_piece;
    reference.get().body().size = room;
    boost::beast::error_code our_ec, their_ec;
    const size_t ours_used = answer.put(boost::asio::buffer(pending), our_ec);
    const size_t theirs_used = reference.put(boost::asio::buffer(pending), their_ec);
    check(ours_used == theirs_used);
    check(our_ec == their_ec);
    check(answer.bodyRoom() == reference.get().body().size);
    const size_t got = room - answer.bodyRoom();
    check(std::string_view(our_piece, got) == std::string_view(their_piece, got));
    ours.body.append(our_piece, got);
    pending.erase(0, ours_used);
    starved = our_ec == http::error::need_more;
    if (our_ec && !starved && our_ec != http::error::need_buffer) {
      ours.failed = true;
      break;
    }
  }
  if (!ours.failed && !answer.is_done() && input.at >= bytes.size() && pending.empty() &&
      answer.got_some()) {
    // The connection ends here: an answer that runs until the close is complete, others not.
    boost::beast::error_code our_ec, their_ec;
    answer.put_eof(our_ec);
    reference.put_eof(their_ec);
    check(our_ec == their_ec);
  }
  check(answer.is_header_done() == reference.is_header_done());
  check(answer.is_done() == reference.is_done());
  if (!answer.is_header_done() || ours.failed) return 0;
  if (answer.is_done()) check(bodyThroughViews(bytes, arrival) == ours.body);
  check(answer.status() == reference.get().result_int());
  check(answer.keep_alive() == reference.keep_alive());
  check(answer.content_length() == reference.content_length());
  check(answer.chunked() == reference.chunked());
  for (const auto& f : reference.get()) {
    if (switchyard::gateway::isHopByHop(f.name())) continue;
    beasts.fields.append(f.name_string()).append(": ").append(f.value()).append("\r\n");
  }
  // Beast's container moves a field next to the last one of the same name; AnswerParser keeps
  // the wire's order. Both keep the order among fields of one name, which is all HTTP gives
  // meaning to: compare the lines sorted by name, stably.
  check(byName(ours.fields) == byName(beasts.fields));
  const std::string_view type = reference.get()[http::field::content_type];
  check(answer.eventStream() ==
        boost::beast::iequals(type.substr(0, 17), "text/event-stream"));
  return 0;
}
