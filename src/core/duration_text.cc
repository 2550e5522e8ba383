#include "core/duration_text.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

namespace switchyard {

bool parseDurationText(std::string_view text, TimeNs& out) {
  if (text == "0") {
    out = 0;
    return true;
  }
  // Longest suffix first so "ms" is not read as "m".
  static constexpr std::array<std::pair<std::string_view, double>, 6> kUnits = {{
      {"ns", 1.0},
      {"us", 1e3},
      {"ms", 1e6},
      {"s", 1e9},
      {"m", 60e9},
      {"h", 3600e9},
  }};
  double total = 0;
  size_t i = 0;
  if (text.empty()) return false;
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    if (i == start) return false;
    const std::string number(text.substr(start, i - start));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return false;
    bool matched = false;
    for (const auto& [unit, scale] : kUnits) {
      if (text.substr(i, unit.size()) == unit) {
        total += value * scale;
        i += unit.size();
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  if (!std::isfinite(total) || total > 9.2e18) return false;
  out = static_cast<TimeNs>(std::llround(total));
  return true;
}

}  // namespace switchyard
