// Fuzz target: RequestInspector on arbitrary bytes, through both the zero-copy path (exactly
// kRequiredPadding readable bytes after the body) and the short-capacity copy path. The two must
// agree, and a successful inspection must return views that are non-empty (model) and readable.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "api/request_inspector.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::api;
  static RequestInspector padded_inspector;
  static RequestInspector copying_inspector;

  size_t capacity = size + RequestInspector::kRequiredPadding;
  auto padded = std::make_unique<char[]>(capacity);
  if (size > 0) std::memcpy(padded.get(), data, size);
  std::memset(padded.get() + size, 0, RequestInspector::kRequiredPadding);

  // Exactly-sized heap copy so the sanitizer catches any read past the body.
  auto exact = std::make_unique<char[]>(size == 0 ? 1 : size);
  if (size > 0) std::memcpy(exact.get(), data, size);

  InspectedRequest a, b;
  InspectError ea = padded_inspector.inspect(padded.get(), size, capacity, a);
  InspectError eb = copying_inspector.inspect(exact.get(), size, size, b);
  check(ea == eb);
  if (ea == InspectError::kNone) {
    check(!a.model.empty());
    check(a.model == b.model && a.user == b.user && a.stream == b.stream &&
          a.include_usage == b.include_usage && a.max_tokens == b.max_tokens &&
          a.prompt_bytes == b.prompt_bytes);
    check(a.max_tokens >= -1);
    check(padded_inspector.errorMessage().empty());
  } else {
    check(!padded_inspector.errorMessage().empty());
  }
  return 0;
}
