// A request's deadline, from its headers: `x-request-deadline-ms` (the milliseconds it has
// left, a whole number) or `x-request-timeout` (a duration: a bare number is seconds, "30",
// "2.5"; or with units, "30s", "1500ms", "1m30s"). The first one present wins. Parsed once per
// request; no allocation.
#pragma once

#include <string_view>

#include "core/clock.h"

namespace switchyard::admission {

struct RequestDeadline {
  TimeNs remaining = -1;          // -1: none given
  bool malformed = false;         // a header was present but not a valid value
  std::string_view header;        // the header that gave it (or was malformed)
};

inline constexpr std::string_view kDeadlineMsHeader = "x-request-deadline-ms";
inline constexpr std::string_view kTimeoutHeader = "x-request-timeout";

RequestDeadline parseDeadline(std::string_view deadline_ms, std::string_view timeout);

}  // namespace switchyard::admission
