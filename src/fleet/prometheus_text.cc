#include "fleet/prometheus_text.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <system_error>

namespace switchyard::fleet::internal {
namespace {

// The exposition format only allows spaces and tabs between tokens.
bool isBlank(char c) { return c == ' ' || c == '\t'; }

// Character classes by table: names and label names are most of what is scanned, one byte at a
// time, and a lookup costs less than the chain of range tests.
enum CharClass : uint8_t { kNameStart = 1, kNameChar = 2, kLabelStart = 4, kLabelChar = 8 };

constexpr std::array<uint8_t, 256> makeCharClasses() {
  std::array<uint8_t, 256> classes{};
  for (int c = 0; c < 256; ++c) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    uint8_t bits = 0;
    if (letter || c == ':') bits |= kNameStart | kNameChar;
    if (digit) bits |= kNameChar | kLabelChar;
    // Label names may not contain colons (reserved for metric names).
    if (letter) bits |= kLabelStart | kLabelChar;
    classes[static_cast<size_t>(c)] = bits;
  }
  return classes;
}
constexpr std::array<uint8_t, 256> kCharClasses = makeCharClasses();

bool is(char c, CharClass cls) { return (kCharClasses[static_cast<uint8_t>(c)] & cls) != 0; }
bool isNameStart(char c) { return is(c, kNameStart); }
bool isNameChar(char c) { return is(c, kNameChar); }
bool isLabelStart(char c) { return is(c, kLabelStart); }
bool isLabelChar(char c) { return is(c, kLabelChar); }

size_t skipBlanks(std::string_view s, size_t i) {
  while (i < s.size() && isBlank(s[i])) ++i;
  return i;
}

// Scans a label block starting just after '{'. Returns the index of the closing '}' or npos if
// the block is malformed. Quoted values may contain '}', ',' and escaped quotes.
size_t scanLabelBlock(std::string_view s, size_t i) {
  while (true) {
    i = skipBlanks(s, i);
    if (i >= s.size()) return std::string_view::npos;
    if (s[i] == '}') return i;  // empty block, or trailing comma before '}'
    if (!isLabelStart(s[i])) return std::string_view::npos;
    while (i < s.size() && isLabelChar(s[i])) ++i;
    i = skipBlanks(s, i);
    if (i >= s.size() || s[i] != '=') return std::string_view::npos;
    i = skipBlanks(s, i + 1);
    if (i >= s.size() || s[i] != '"') return std::string_view::npos;
    ++i;
    while (true) {
      if (i >= s.size()) return std::string_view::npos;  // unterminated value
      if (s[i] == '\\') {
        // Only \\, \" and \n are defined; anything else is a malformed line.
        if (i + 1 >= s.size()) return std::string_view::npos;
        char e = s[i + 1];
        if (e != '\\' && e != '"' && e != 'n') return std::string_view::npos;
        i += 2;
        continue;
      }
      if (s[i] == '"') break;
      ++i;
    }
    i = skipBlanks(s, i + 1);
    if (i >= s.size()) return std::string_view::npos;
    if (s[i] == ',') {
      ++i;
      continue;
    }
    if (s[i] == '}') return i;
    return std::string_view::npos;
  }
}

// The common plain decimal ("0", "12", "0.37", "-3.5"): up to 15 significant digits, no
// exponent. Such a value is an integer below 2^53 divided by an exact power of ten, and IEEE
// division rounds correctly, so the result equals from_chars' (Clinger's fast path) at a fraction
// of its cost (libstdc++'s double from_chars goes through strtod and a locale switch). False:
// not that shape, take the general parse.
bool parsePlainDecimal(std::string_view token, double& out) {
  static constexpr double kPowersOfTen[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6, 1e7,
                                            1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  size_t i = token[0] == '-' ? 1 : 0;
  uint64_t mantissa = 0;
  int digits = 0, fraction_digits = -1;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (c >= '0' && c <= '9') {
      if (++digits > 15) return false;
      mantissa = mantissa * 10 + static_cast<uint64_t>(c - '0');
      if (fraction_digits >= 0) ++fraction_digits;
    } else if (c == '.' && fraction_digits < 0) {
      fraction_digits = 0;
    } else {
      return false;
    }
  }
  if (digits == 0) return false;
  const double magnitude =
      static_cast<double>(mantissa) / kPowersOfTen[std::max(fraction_digits, 0)];
  out = token[0] == '-' ? -magnitude : magnitude;
  return true;
}

// Parses a sample value: a float in Go's ParseFloat syntax as Prometheus emits it, including
// NaN, +Inf, -Inf. std::from_chars handles inf/nan/exponents but rejects a leading '+'.
bool parseValue(std::string_view token, double& out) {
  if (token.empty()) return false;
  if (parsePlainDecimal(token, out)) return true;
  if (token[0] == '+') {
    token.remove_prefix(1);
    if (token.empty() || token[0] == '-' || token[0] == '+') return false;
  }
  const char* first = token.data();
  const char* last = first + token.size();
  auto [ptr, ec] = std::from_chars(first, last, out, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // Out-of-range magnitudes saturate like Go's ParseFloat does rather than being rejected.
    if (ptr != last) return false;
    bool negative = token[0] == '-';
    size_t exp = token.find_first_of("eE");
    bool tiny = exp != std::string_view::npos && exp + 1 < token.size() && token[exp + 1] == '-';
    if (tiny) {
      out = negative ? -0.0 : 0.0;
    } else {
      out = negative ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
    }
    return true;
  }
  return ec == std::errc() && ptr == last;
}

bool parseTimestamp(std::string_view token) {
  int64_t ts = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), ts);
  return ec == std::errc() && ptr == token.data() + token.size();
}

}  // namespace

bool parsePrometheusLine(std::string_view line, PrometheusSample& out, bool& malformed) {
  malformed = false;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF exposition
  size_t i = skipBlanks(line, 0);
  if (i == line.size() || line[i] == '#') return false;  // blank, comment, HELP, TYPE

  malformed = true;  // from here on, any early return is a malformed sample line
  if (!isNameStart(line[i])) return false;
  size_t name_begin = i;
  while (i < line.size() && isNameChar(line[i])) ++i;
  std::string_view name = line.substr(name_begin, i - name_begin);

  std::string_view labels;
  size_t after_name = skipBlanks(line, i);
  if (after_name < line.size() && line[after_name] == '{') {
    size_t close = scanLabelBlock(line, after_name + 1);
    if (close == std::string_view::npos) return false;
    labels = line.substr(after_name + 1, close - after_name - 1);
    i = close + 1;
  } else if (after_name == i) {
    return false;  // the name runs straight into a character that is not a separator
  }

  i = skipBlanks(line, i);
  size_t value_begin = i;
  while (i < line.size() && !isBlank(line[i])) ++i;
  if (!parseValue(line.substr(value_begin, i - value_begin), out.value)) return false;

  i = skipBlanks(line, i);
  if (i < line.size()) {
    size_t ts_begin = i;
    while (i < line.size() && !isBlank(line[i])) ++i;
    if (!parseTimestamp(line.substr(ts_begin, i - ts_begin))) return false;
    if (skipBlanks(line, i) != line.size()) return false;
  }

  out.name = name;
  out.labels = labels;
  malformed = false;
  return true;
}

}  // namespace switchyard::fleet::internal
