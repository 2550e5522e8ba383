// Fuzz target: the control-plane HTTP response head parser and the in-place chunked decoder on
// arbitrary bytes. Checks that every answer stays inside the input.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/response_head.h"

namespace {
void check(bool condition) {
  if (!condition) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::http;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ResponseHead head;
  if (parseResponseHead(bytes, head) == HeadResult::kComplete) {
    check(head.head_bytes <= size);
    check(head.status >= 100 && head.status <= 999);
    check(!head.chunked || head.content_length == -1);
  }
  std::string copy(bytes);
  size_t decoded = 0, consumed = 0;
  if (decodeChunkedInPlace(copy.data(), copy.size(), decoded, consumed) ==
      ChunkedResult::kComplete) {
    check(decoded <= consumed);
    check(consumed <= size);
  }
  return 0;
}
