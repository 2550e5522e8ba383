// OpenAI-compatible error envelopes and the JSON string escaper they are built with.
//
// Produces `{"error":{"message":"…","type":"…","param":null|"…","code":"…"|null}}`, the body
// shape OpenAI clients parse on any non-2xx status. Pure functions, thread-safe, no exceptions;
// they append to a caller-owned string so a reused buffer costs no allocation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard::api {

// Error `type` values OpenAI clients switch on.
inline constexpr std::string_view kInvalidRequestError = "invalid_request_error";
inline constexpr std::string_view kAuthenticationError = "authentication_error";
inline constexpr std::string_view kRateLimitError = "rate_limit_error";
inline constexpr std::string_view kServerError = "server_error";

// Appends `text` escaped for use inside a JSON string literal (no surrounding quotes).
// '"' and '\\' are backslash-escaped, control characters (< 0x20) become \u00XX, and byte
// sequences that are not valid UTF-8 become \ufffd so the output is always valid JSON.
void appendJsonEscaped(std::string& out, std::string_view text);

struct OpenAiError {
  std::string_view message;
  std::string_view type = kInvalidRequestError;
  std::optional<std::string_view> param;  // nullopt -> JSON null
  std::optional<std::string_view> code;   // nullopt -> JSON null
};

// Appends the envelope for `error` to `out`.
void appendErrorBody(std::string& out, const OpenAiError& error);

// Convenience: the envelope as a new string.
std::string errorBody(const OpenAiError& error);

}  // namespace switchyard::api
