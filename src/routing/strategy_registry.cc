// The one place where strategies are registered by name.
#include <array>

#include "routing/strategies/least_request.h"
#include "routing/strategies/random.h"
#include "routing/strategies/round_robin.h"
#include "routing/strategy.h"

namespace switchyard::routing {
namespace {

const RandomStrategy kRandom;
const RoundRobinStrategy kRoundRobin;
const LeastRequestStrategy kLeastRequest;

constexpr std::array<const Strategy*, 3> kStrategies = {&kRandom, &kRoundRobin, &kLeastRequest};
constexpr std::array<std::string_view, 3> kNames = {"random", "round-robin", "least-request"};

}  // namespace

const Strategy* findStrategy(std::string_view name) {
  for (const Strategy* strategy : kStrategies) {
    if (strategy->name() == name) return strategy;
  }
  return nullptr;
}

std::span<const std::string_view> strategyNames() { return kNames; }

}  // namespace switchyard::routing
