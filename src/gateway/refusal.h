// Refusal: an answer the gateway gives itself instead of a replica's. Stages of the request path
// return one as a value; the pipeline writes it to the client as an OpenAI error envelope
// (with `Retry-After` when `retry_after` is set).
#pragma once

#include <string>
#include <string_view>

#include "api/openai_error.h"
#include "core/clock.h"
#include "observe/metrics.h"

namespace switchyard::gateway {

struct Refusal {
  unsigned status = 0;
  std::string message;
  std::string_view type = "invalid_request_error";
  std::string_view code;   // "" for null
  std::string_view param;  // "" for null
  TimeNs retry_after = -1;  // >= 0: Retry-After, whole seconds rounded up (at least 1)
  observe::LimitKind limit = observe::LimitKind::kCount;  // the limit that refused; kCount: none

  // A 429 from a limit, with Retry-After.
  static Refusal limited(observe::LimitKind limit, std::string_view code, std::string message,
                         TimeNs retry_after) {
    return {429, std::move(message), api::kRateLimitError, code, {}, retry_after, limit};
  }
};

}  // namespace switchyard::gateway
