// Fuzz target: MultipartReader. The input's first line is the Content-Type header value, the
// rest the body; the body is read whole, in three pieces split where its own bytes say, and byte
// by byte for short inputs. Every way of splitting must give the same result, and the kept values
// must stay within their bounds.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "api/multipart_reader.h"

namespace {

using switchyard::api::MultipartError;
using switchyard::api::MultipartReader;

void check(bool condition) {
  if (!condition) std::abort();
}

bool same(const MultipartReader& a, MultipartError ea, const MultipartReader& b,
          MultipartError eb) {
  return ea == eb && a.model() == b.model() && a.hasModel() == b.hasModel() &&
         a.fileBytes() == b.fileBytes() && a.fileParts() == b.fileParts() &&
         a.parts() == b.parts() && a.field("prompt") == b.field("prompt");
}

MultipartReader whole, pieces, bytewise;  // ~3 KiB each: static, not on the stack

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view content_type = input.substr(0, newline);
  const std::string_view body =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  const MultipartError started = whole.start(content_type);
  whole.feed(body);
  const MultipartError e1 = whole.finish();
  if (started != MultipartError::kNone) check(e1 == started);
  check(whole.model().size() <= MultipartReader::kMaxFieldValue);
  check(whole.field("prompt").size() <= MultipartReader::kMaxFieldValue);
  check(whole.fileBytes() <= body.size());
  check(e1 != MultipartError::kNone || whole.closed());

  const size_t n = body.size();
  size_t a = n ? (static_cast<uint8_t>(body[0]) * 7u) % (n + 1) : 0;
  size_t b = n ? (static_cast<uint8_t>(body[n - 1]) * 13u + n / 2) % (n + 1) : 0;
  if (b < a) std::swap(a, b);
  pieces.start(content_type);
  pieces.feed(body.substr(0, a));
  pieces.feed(body.substr(a, b - a));
  pieces.feed(body.substr(b));
  const MultipartError e2 = pieces.finish();
  check(same(whole, e1, pieces, e2));

  if (n <= 4096) {
    bytewise.start(content_type);
    for (size_t i = 0; i < n; ++i) bytewise.feed(body.substr(i, 1));
    const MultipartError e3 = bytewise.finish();
    check(same(whole, e1, bytewise, e3));
  }
  return 0;
}
