// Fuzz target: the relay of an upstream response as gateway/forwarder.cc does it: the response
// read through Beast's parser into a small reused piece buffer (a buffer_body), each piece fed to
// the usage scanner and sent on, chunk-framed when the upstream gave no length. The input is the
// upstream's bytes (head and body, possibly chunked); the first byte picks the piece size and
// how the bytes arrive. The pieces must add up to the body a one-shot parse sees, the scanner
// must agree with a scan of the whole body, and the client's chunked framing must parse back to
// the same body.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "api/usage_scanner.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;

void check(bool condition) {
  if (!condition) std::abort();
}

struct Relayed {
  bool ok = false;
  bool chunked_out = false;
  std::string body;     // the pieces, concatenated
  std::string to_client;  // what the client got after the head
  switchyard::api::UsageScanner scanner{switchyard::api::UsageScanner::Mode::kSse};
};

// Reads the response from `arrivals` (the upstream's bytes as they arrive) like the forwarder.
void relay(std::string_view bytes, size_t arrival, size_t piece_size, Relayed& out) {
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(uint64_t{1} << 30);
  std::string buffer;
  size_t at = 0;
  auto more = [&] {
    if (at >= bytes.size()) return false;
    const size_t len = std::min(arrival, bytes.size() - at);
    buffer.append(bytes.substr(at, len));
    at += len;
    return true;
  };
  // The head.
  while (!parser.is_header_done()) {
    beast::error_code ec;
    const size_t used = buffer.empty() ? 0 : parser.put(boost::asio::buffer(buffer), ec);
    buffer.erase(0, used);
    if (ec && ec != http::error::need_more) return;
    if ((buffer.empty() || ec == http::error::need_more) && !more()) return;
  }
  const bool event_stream =
      beast::iequals(parser.get()[http::field::content_type].substr(0, 17), "text/event-stream");
  out.scanner = switchyard::api::UsageScanner(event_stream
                                                  ? switchyard::api::UsageScanner::Mode::kSse
                                                  : switchyard::api::UsageScanner::Mode::kJson);
  out.chunked_out = !parser.content_length().has_value();
  std::vector<char> piece(piece_size);
  // The body, piece by piece.
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    beast::error_code ec;
    const size_t used = buffer.empty() ? 0 : parser.put(boost::asio::buffer(buffer), ec);
    buffer.erase(0, used);
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = piece.size() - parser.get().body().size;
    if (got > 0) {
      const std::string_view data(piece.data(), got);
      out.body.append(data);
      out.scanner.feed(data);
      if (out.chunked_out) {
        char prefix[24];
        const int len = std::snprintf(prefix, sizeof prefix, "%zx\r\n", got);
        out.to_client.append(prefix, static_cast<size_t>(len));
        out.to_client.append(data);
        out.to_client.append("\r\n");
      } else {
        out.to_client.append(data);
      }
    }
    if (parser.is_done()) break;
    if (ec && ec != http::error::need_more) return;
    if (got == 0 && (buffer.empty() || ec == http::error::need_more) && !more()) {
      // The upstream closed: a response without a length ends here.
      beast::error_code eof;
      parser.put_eof(eof);
      if (eof || !parser.is_done()) return;
    }
  }
  if (out.chunked_out) out.to_client.append("0\r\n\r\n");
  out.ok = true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 128 * 1024) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t piece_size = 1 + (data[0] & 0x3F);           // 1..64: tiny pieces, many boundaries
  const size_t arrival = 1 + ((data[0] >> 6) * 97 + 13);   // how much the socket hands over

  Relayed relayed;
  relay(bytes, arrival, piece_size, relayed);
  Relayed reference;
  relay(bytes, bytes.size(), 1 << 20, reference);  // all at once, one big piece
  check(relayed.ok == reference.ok);
  if (!relayed.ok) return 0;
  check(relayed.body == reference.body);
  check(relayed.scanner.completionTokens() == reference.scanner.completionTokens());
  check(relayed.scanner.promptTokens() == reference.scanner.promptTokens());
  check(relayed.scanner.sawDone() == reference.scanner.sawDone());
  check(relayed.scanner.textEvents() == reference.scanner.textEvents());
  if (relayed.chunked_out) {
    // The client's framing parses back to the body.
    const std::string response =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + relayed.to_client;
    http::response_parser<http::string_body> client;
    client.eager(true);
    client.body_limit(uint64_t{1} << 30);
    beast::error_code ec;
    client.put(boost::asio::buffer(response), ec);
    check(!ec && client.is_done());
    check(client.get().body() == relayed.body);
  }
  return 0;
}
