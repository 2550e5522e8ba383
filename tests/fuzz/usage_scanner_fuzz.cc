// Fuzz target: UsageScanner in both modes. The first byte picks the mode and three split points;
// the rest is the body, fed whole and then in four pieces (and byte by byte for short inputs).
// Every way of splitting must give the same answer: that is the scanner's core promise.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/usage_scanner.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

bool same(const switchyard::api::UsageScanner& a, const switchyard::api::UsageScanner& b) {
  return a.completionTokens() == b.completionTokens() && a.promptTokens() == b.promptTokens() &&
         a.sawUsage() == b.sawUsage() && a.sawDone() == b.sawDone() &&
         a.textEvents() == b.textEvents();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using switchyard::api::UsageScanner;
  if (size == 0) return 0;
  uint8_t control = data[0];
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  UsageScanner::Mode mode = (control & 1) ? UsageScanner::Mode::kJson : UsageScanner::Mode::kSse;

  UsageScanner whole(mode);
  whole.feed(body);
  check(whole.completionTokens() >= -1);
  check(whole.promptTokens() >= -1);
  check(whole.textEvents() >= 0);

  // Split points derived from the data: the control byte and the body's own bytes.
  size_t n = body.size();
  size_t cuts[3] = {0, 0, 0};
  if (n > 0) {
    cuts[0] = (control * 7u) % (n + 1);
    cuts[1] = (static_cast<uint8_t>(body[n / 2]) * 31u + n / 3) % (n + 1);
    cuts[2] = (static_cast<uint8_t>(body[n - 1]) * 13u + 2 * n / 3) % (n + 1);
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j) {
      if (cuts[j] < cuts[i]) {
        size_t t = cuts[i];
        cuts[i] = cuts[j];
        cuts[j] = t;
      }
    }
  }
  UsageScanner pieces(mode);
  pieces.feed(body.substr(0, cuts[0]));
  pieces.feed(body.substr(cuts[0], cuts[1] - cuts[0]));
  pieces.feed(body.substr(cuts[1], cuts[2] - cuts[1]));
  pieces.feed(body.substr(cuts[2]));
  check(same(whole, pieces));

  if (n <= 4096) {
    UsageScanner bytewise(mode);
    for (size_t i = 0; i < n; ++i) bytewise.feed(body.substr(i, 1));
    check(same(whole, bytewise));
  }
  return 0;
}
