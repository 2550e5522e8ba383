#include "core/json_util.h"

#include <fmt/format.h>

#include <cmath>

namespace switchyard::json {

void appendString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

bool parseRoot(dom::parser& parser, std::string_view text, dom::element& root, std::string* error) {
  if (auto e = parser.parse(text.data(), text.size()).get(root)) {
    if (error) *error = fmt::format("not JSON: {}", simdjson::error_message(e));
    return false;
  }
  return true;
}

bool parseObject(dom::parser& parser, std::string_view text, dom::object& out, std::string* error,
                 std::string_view what) {
  dom::element root;
  if (!parseRoot(parser, text, root, error)) return false;
  if (root.get_object().get(out)) {
    if (error) *error = fmt::format("{} must be a JSON object", what);
    return false;
  }
  return true;
}

namespace {
void appendKey(std::string& out, std::string_view key) {
  if (!out.empty() && out.back() != '{') out.push_back(',');
  appendString(out, key);
  out.push_back(':');
}
}  // namespace

void appendField(std::string& out, std::string_view key, double value) {
  appendKey(out, key);
  appendNumber(out, value);
}

void appendField(std::string& out, std::string_view key, std::string_view value) {
  appendKey(out, key);
  appendString(out, value);
}

void appendNumber(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", value);
}

void appendNumbers(std::string& out, const std::vector<double>& values) {
  out.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out.push_back(',');
    appendNumber(out, values[i]);
  }
  out.push_back(']');
}

void appendMatrix(std::string& out, const std::vector<std::vector<double>>& values) {
  out.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out.push_back(',');
    appendNumbers(out, values[i]);
  }
  out.push_back(']');
}

}  // namespace switchyard::json
