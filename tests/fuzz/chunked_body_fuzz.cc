// Fuzz target: http::ChunkedBody, the relay's decoder of a chunked event stream. The input is a
// chunked body; the first byte picks the size of the pieces it arrives in. Checked:
// - fed whole, in pieces and byte by byte, the decoder gives the same body, the same end and
//   the same error, and reads the same bytes (up to an error);
// - against Beast's response parser on the same body behind a chunked head: whatever Beast
//   accepts whole, the decoder accepts with the same body, reading the same bytes (it may be
//   looser where the relay does not look: extensions, trailer values).
#include <boost/beast/http.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/chunked_body.h"
#include "../support/chunked_feed.h"

namespace {

using switchyard::http::ChunkedBody;
constexpr uint64_t kLimit = uint64_t{1} << 20;

void check(bool condition) {
  if (!condition) std::abort();
}

using switchyard::http::chunked_feed::Decoded;

Decoded decode(std::string_view input, size_t piece_size) {
  Decoded out = switchyard::http::chunked_feed::decodeInPieces(input, piece_size, kLimit);
  check(out.in_bounds);
  return out;
}

// Where a failed decoder stopped reading is not an answer (the relay drops the connection).
bool same(const Decoded& a, const Decoded& b) {
  return a.body == b.body && a.last == b.last && a.error == b.error &&
         (a.consumed == b.consumed || a.last == ChunkedBody::Step::kFailed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece_size = 1 + data[0] % 48;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Decoded whole = decode(input, input.size() + 1);
  check(same(whole, decode(input, piece_size)));
  if (input.size() <= 2048) check(same(whole, decode(input, 1)));

  // Beast, fed the whole message, parses element by element until it stops.
  namespace http = boost::beast::http;
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string message = head + std::string(input);
  http::response_parser<http::string_body> reference;
  reference.body_limit(kLimit);
  size_t used = 0;
  boost::beast::error_code ec;
  while (!ec && !reference.is_done() && used < message.size()) {
    const size_t n =
        reference.put(boost::asio::buffer(message.data() + used, message.size() - used), ec);
    used += n;
    if (n == 0 && !ec) break;
  }
  if (!ec && reference.is_done() && input.size() < ChunkedBody::kMaxSizeLine) {
    check(whole.last == ChunkedBody::Step::kDone);
    check(whole.body == reference.get().body());
    check(whole.consumed == used - head.size());
  }
  return 0;
}
