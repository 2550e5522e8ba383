// Small helpers for the JSON readers and writers of profiles, load files and load intervals
// (simdjson DOM in, fmt out). Off the hot path.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>
#include <vector>

namespace switchyard::json {

namespace dom = simdjson::dom;

// A JSON number as double (integers included); false for anything else. -0 reads as 0, so that
// what is read writes back the same way.
inline bool number(dom::element e, double& out) {
  if (e.get_double().get(out) != simdjson::SUCCESS) return false;
  out += 0.0;  // -0 + 0 = +0
  return true;
}

// An array of numbers; false (with `out` unspecified) for anything else.
inline bool numbers(dom::element e, std::vector<double>& out) {
  dom::array array;
  if (e.get_array().get(array)) return false;
  out.clear();
  for (dom::element v : array) {
    double d = 0;
    if (!number(v, d)) return false;
    out.push_back(d);
  }
  return true;
}

// An array of arrays of numbers.
inline bool matrix(dom::element e, std::vector<std::vector<double>>& out) {
  dom::array rows;
  if (e.get_array().get(rows)) return false;
  out.clear();
  for (dom::element row : rows) {
    out.emplace_back();
    if (!numbers(row, out.back())) return false;
  }
  return true;
}

// Parses `text` into `root` (owned by `parser`); false with `error` = "not JSON: …".
bool parseRoot(dom::parser& parser, std::string_view text, dom::element& root, std::string* error);
// The same for a document that must be an object; `what` names it in the error.
bool parseObject(dom::parser& parser, std::string_view text, dom::object& out, std::string* error,
                 std::string_view what);

// Appends `"key":value` to an object being written, with the comma unless it is the first.
void appendField(std::string& out, std::string_view key, double value);
void appendField(std::string& out, std::string_view key, std::string_view value);

// Appends `text` as a JSON string literal.
void appendString(std::string& out, std::string_view text);
void appendNumbers(std::string& out, const std::vector<double>& values);
void appendMatrix(std::string& out, const std::vector<std::vector<double>>& values);
// Shortest round-trip form of a finite number; null for NaN/inf.
void appendNumber(std::string& out, double value);

}  // namespace switchyard::json
