// StrategySpec: the strategy a request asked for, one name or a weighted blend
// ("prefix-cache:2,least-request:1"). Parsed without allocating: it holds views into the text it
// was parsed from, which must outlive it. Weights default to 1 and must be positive and finite.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "routing/strategy.h"

namespace switchyard::routing {

struct StrategyComponent {
  const Strategy* strategy = nullptr;
  double weight = 1.0;
};

struct StrategySpec {
  static constexpr size_t kMaxComponents = 4;
  std::array<StrategyComponent, kMaxComponents> components{};
  uint8_t count = 0;
  std::string_view text;  // as written

  std::span<const StrategyComponent> parts() const { return {components.data(), count}; }
};

enum class SpecError : uint8_t { kNone, kEmpty, kUnknownStrategy, kBadWeight, kTooMany,
                                 kDuplicate };

// On error, `bad_part` receives the offending piece of the text.
SpecError parseStrategySpec(std::string_view text, StrategySpec& out,
                            std::string_view* bad_part = nullptr);

}  // namespace switchyard::routing
