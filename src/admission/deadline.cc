#include "admission/deadline.h"

#include <charconv>
#include <cmath>

#include "core/duration_text.h"

namespace switchyard::admission {
namespace {

// A bare decimal number of seconds ("30", "2.5"), or a duration with units.
bool parseTimeout(std::string_view text, TimeNs& out) {
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size()) {
    if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e7) return false;
    out = static_cast<TimeNs>(seconds * 1e9);
    return true;
  }
  return parseDurationText(text, out);
}

}  // namespace

RequestDeadline parseDeadline(std::string_view deadline_ms, std::string_view timeout) {
  RequestDeadline deadline;
  if (!deadline_ms.empty()) {
    deadline.header = kDeadlineMsHeader;
    int64_t ms = 0;
    const auto [end, ec] =
        std::from_chars(deadline_ms.data(), deadline_ms.data() + deadline_ms.size(), ms);
    if (ec != std::errc() || end != deadline_ms.data() + deadline_ms.size() || ms < 0 ||
        ms > int64_t{10'000'000'000}) {
      deadline.malformed = true;
      return deadline;
    }
    deadline.remaining = ms * kNsPerMs;
    return deadline;
  }
  if (!timeout.empty()) {
    deadline.header = kTimeoutHeader;
    TimeNs ns = 0;
    if (!parseTimeout(timeout, ns)) {
      deadline.malformed = true;
      return deadline;
    }
    deadline.remaining = ns;
  }
  return deadline;
}

}  // namespace switchyard::admission
