// The one place where strategies are registered by name.
#include <array>

#include "routing/strategies/least_kv_cache.h"
#include "routing/strategies/least_request.h"
#include "routing/strategies/least_request_top_k.h"
#include "routing/strategies/load_balance.h"
#include "routing/strategies/random.h"
#include "routing/strategies/round_robin.h"
#include "routing/strategy.h"

namespace switchyard::routing {
namespace {

const RandomStrategy kRandom;
const RoundRobinStrategy kRoundRobin;
const LeastRequestStrategy kLeastRequest;
const LeastRequestTopKStrategy kLeastRequestTopK;
const LeastKvCacheStrategy kLeastKvCache;
const LoadBalanceStrategy kLoadBalance;
const ShapeAwareLoadBalanceStrategy kShapeAwareLoadBalance;

constexpr std::array<const Strategy*, 7> kStrategies = {
    &kRandom,       &kRoundRobin,  &kLeastRequest,         &kLeastRequestTopK,
    &kLeastKvCache, &kLoadBalance, &kShapeAwareLoadBalance};
constexpr std::array<std::string_view, 7> kNames = {
    "random",         "round-robin",  "least-request",           "least-request-top-k",
    "least-kv-cache", "load-balance", "load-balance-shape-aware"};

}  // namespace

const Strategy* findStrategy(std::string_view name) {
  for (const Strategy* strategy : kStrategies) {
    if (strategy->name() == name) return strategy;
  }
  return nullptr;
}

std::span<const std::string_view> strategyNames() { return kNames; }

}  // namespace switchyard::routing
