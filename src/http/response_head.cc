#include "http/response_head.h"

#include <charconv>
#include <cstring>

namespace switchyard::http {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Whether the comma-separated header value lists `token` (case-insensitive).
bool listsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (equalsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

HeadResult parseResponseHead(std::string_view bytes, ResponseHead& head) {
  head = ResponseHead{};
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) return HeadResult::kIncomplete;
  head.head_bytes = end + 4;
  std::string_view rest = bytes.substr(0, end + 2);  // every line ends in CRLF

  const size_t eol = rest.find("\r\n");
  const std::string_view status_line = rest.substr(0, eol);
  rest.remove_prefix(eol + 2);
  // "HTTP/1.x SSS reason"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." ||
      (status_line[7] != '0' && status_line[7] != '1') || status_line[8] != ' ') {
    return HeadResult::kMalformed;
  }
  head.keep_alive = status_line[7] == '1';
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (status_line[i] < '0' || status_line[i] > '9') return HeadResult::kMalformed;
    status = status * 10 + (status_line[i] - '0');
  }
  if (status < 100 || (status_line.size() > 12 && status_line[12] != ' ')) {
    return HeadResult::kMalformed;
  }
  head.status = status;

  while (!rest.empty()) {
    const size_t line_end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, line_end);
    rest.remove_prefix(line_end + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return HeadResult::kMalformed;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (equalsIgnoreCase(name, "content-length")) {
      int64_t length = -1;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (ec != std::errc() || ptr != value.data() + value.size() || length < 0 ||
          (head.content_length >= 0 && head.content_length != length)) {
        return HeadResult::kMalformed;
      }
      head.content_length = length;
    } else if (equalsIgnoreCase(name, "transfer-encoding")) {
      head.chunked = listsToken(value, "chunked");
    } else if (equalsIgnoreCase(name, "connection")) {
      if (listsToken(value, "close")) head.keep_alive = false;
      if (listsToken(value, "keep-alive")) head.keep_alive = true;
    }
  }
  if (head.chunked) head.content_length = -1;  // RFC 9112 6.3: chunked wins
  return HeadResult::kComplete;
}

ChunkedResult decodeChunkedInPlace(char* data, size_t size, size_t& decoded, size_t& consumed) {
  // Two passes: the first checks that the whole body is there (and well formed) without
  // touching it, so an incomplete body can be decoded later from the same bytes.
  for (int pass = 0; pass < 2; ++pass) {
    size_t in = 0;
    size_t out = 0;
    while (true) {
      const char* line_end = static_cast<const char*>(
          in < size ? std::memchr(data + in, '\n', size - in) : nullptr);
      if (!line_end) return ChunkedResult::kIncomplete;
      const size_t eol = static_cast<size_t>(line_end - data);
      if (eol == in || data[eol - 1] != '\r') return ChunkedResult::kMalformed;
      // chunk-size [; extensions] CRLF
      uint64_t chunk = 0;
      size_t i = in;
      int digits = 0;
      for (; i < eol - 1; ++i) {
        const char c = data[i];
        int v = -1;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
        if (v < 0) break;
        if (++digits > 15) return ChunkedResult::kMalformed;
        chunk = chunk * 16 + static_cast<uint64_t>(v);
      }
      if (digits == 0 || (i < eol - 1 && data[i] != ';' && data[i] != ' ' && data[i] != '\t')) {
        return ChunkedResult::kMalformed;
      }
      in = eol + 1;
      if (chunk == 0) {
        // Trailer section: header lines until an empty line.
        while (true) {
          const char* t = static_cast<const char*>(
              in < size ? std::memchr(data + in, '\n', size - in) : nullptr);
          if (!t) return ChunkedResult::kIncomplete;
          const size_t t_end = static_cast<size_t>(t - data);
          if (t_end == in || data[t_end - 1] != '\r') return ChunkedResult::kMalformed;
          const bool empty = t_end == in + 1;
          in = t_end + 1;
          if (empty) break;
        }
        if (pass == 1) {
          decoded = out;
          consumed = in;
        }
        break;
      }
      if (chunk > size - in || size - in - chunk < 2) return ChunkedResult::kIncomplete;
      if (data[in + chunk] != '\r' || data[in + chunk + 1] != '\n') {
        return ChunkedResult::kMalformed;
      }
      if (pass == 1) std::memmove(data + out, data + in, chunk);
      out += chunk;
      in += chunk + 2;
    }
  }
  return ChunkedResult::kComplete;
}

}  // namespace switchyard::http
