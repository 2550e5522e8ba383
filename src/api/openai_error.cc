#include "api/openai_error.h"

#include <cstdint>

namespace switchyard::api {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid (overlong forms,
// surrogates and code points above U+10FFFF included).
size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  uint8_t b0 = byte(i);
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    uint8_t b1 = byte(i + 1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    uint8_t b1 = byte(i + 1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && b1 >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void appendQuotedOrNull(std::string& out, const std::optional<std::string_view>& value) {
  if (!value) {
    out += "null";
    return;
  }
  out += '"';
  appendJsonEscaped(out, *value);
  out += '"';
}

}  // namespace

void appendJsonEscaped(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  size_t i = 0;
  while (i < text.size()) {
    // Copy the longest run that needs no escaping in one append.
    size_t run = i;
    while (run < text.size()) {
      auto c = static_cast<uint8_t>(text[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++run;
    }
    out.append(text.data() + i, run - i);
    i = run;
    if (i == text.size()) break;

    auto c = static_cast<uint8_t>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out.append(esc, sizeof(esc));
      ++i;
    } else if (size_t len = utf8SequenceLength(text, i); len > 0) {
      out.append(text.data() + i, len);
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
}

void appendErrorBody(std::string& out, const OpenAiError& error) {
  out += R"({"error":{"message":")";
  appendJsonEscaped(out, error.message);
  out += R"(","type":")";
  appendJsonEscaped(out, error.type);
  out += R"(","param":)";
  appendQuotedOrNull(out, error.param);
  out += R"(,"code":)";
  appendQuotedOrNull(out, error.code);
  out += "}}";
}

std::string errorBody(const OpenAiError& error) {
  std::string out;
  out.reserve(64 + error.message.size());
  appendErrorBody(out, error);
  return out;
}

}  // namespace switchyard::api
