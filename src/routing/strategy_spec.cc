#include "routing/strategy_spec.h"

#include <charconv>
#include <cmath>

namespace switchyard::routing {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

SpecError parseStrategySpec(std::string_view text, StrategySpec& out,
                            std::string_view* bad_part) {
  out = StrategySpec{};
  out.text = trim(text);
  std::string_view rest = out.text;
  if (rest.empty()) return SpecError::kEmpty;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view part = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (bad_part) *bad_part = part;
    if (part.empty() || (comma != std::string_view::npos && trim(rest).empty())) {
      return SpecError::kEmpty;  // "a,,b" or a trailing comma
    }
    if (out.count == StrategySpec::kMaxComponents) return SpecError::kTooMany;
    StrategyComponent component;
    const size_t colon = part.find(':');
    const std::string_view name = trim(part.substr(0, colon));
    if (colon != std::string_view::npos) {
      const std::string_view weight_text = trim(part.substr(colon + 1));
      double weight = 0;
      auto [ptr, ec] = std::from_chars(weight_text.data(),
                                       weight_text.data() + weight_text.size(), weight);
      if (ec != std::errc{} || ptr != weight_text.data() + weight_text.size() ||
          !std::isfinite(weight) || weight <= 0) {
        return SpecError::kBadWeight;
      }
      component.weight = weight;
    }
    component.strategy = findStrategy(name);
    if (component.strategy == nullptr) {
      if (bad_part) *bad_part = name;
      return SpecError::kUnknownStrategy;
    }
    for (const StrategyComponent& seen : out.parts()) {
      if (seen.strategy == component.strategy) return SpecError::kDuplicate;
    }
    out.components[out.count++] = component;
  }
  return SpecError::kNone;
}

}  // namespace switchyard::routing
