// Minimal HTTP/1.1 response framing for control-plane GETs (telemetry scrapes): the status line
// and the three headers that decide where the body ends (Content-Length, Transfer-Encoding,
// Connection), and in-place decoding of a chunked body.
//
// The peer is untrusted: every malformed input is an error value, never a crash or a read past
// the input. Pure functions, no allocation; fuzzed by tests/fuzz/http_response_fuzz.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace switchyard::http {

struct ResponseHead {
  int status = 0;
  int64_t content_length = -1;  // -1: not given
  bool chunked = false;
  bool keep_alive = true;       // HTTP/1.1 default; false for "Connection: close" or HTTP/1.0
  size_t head_bytes = 0;        // bytes up to and including the blank line
};

enum class HeadResult : uint8_t { kComplete, kIncomplete, kMalformed };

// Parses the head at the start of `bytes` (which may hold part of the body after it).
// kIncomplete: no blank line yet (read more, unless `bytes` is already at the caller's limit).
HeadResult parseResponseHead(std::string_view bytes, ResponseHead& head);

enum class ChunkedResult : uint8_t { kComplete, kIncomplete, kMalformed };

// Decodes a chunked body held in data[0, size) in place: on kComplete the decoded body is
// data[0, decoded) and `consumed` is how many input bytes the body took (trailers included).
// kIncomplete: the final chunk has not arrived yet; the input is left untouched.
ChunkedResult decodeChunkedInPlace(char* data, size_t size, size_t& decoded, size_t& consumed);

}  // namespace switchyard::http
