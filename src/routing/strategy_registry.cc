// The one place where strategies are registered by name.
#include <array>

#include "routing/strategies/least_kv_cache.h"
#include "routing/strategies/least_request.h"
#include "routing/strategies/least_request_top_k.h"
#include "routing/strategies/load_balance.h"
#include "routing/strategies/prefix_cache.h"
#include "routing/strategies/random.h"
#include "routing/strategies/round_robin.h"
#include "routing/strategies/slo.h"
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
// `slo` is slo-least-load-pulling under its short name, as the product page defines it.
const SloStrategy kSlo("slo", SloVariant::kLeastLoadPulling);
const SloStrategy kSloPackLoad("slo-pack-load", SloVariant::kPackLoad);
const SloStrategy kSloLeastLoad("slo-least-load", SloVariant::kLeastLoad);
const SloStrategy kSloLeastLoadPulling("slo-least-load-pulling", SloVariant::kLeastLoadPulling);
const PrefixCacheStrategy kPrefixCache;

constexpr std::array<const Strategy*, 12> kStrategies = {
    &kRandom,       &kRoundRobin,  &kLeastRequest,          &kLeastRequestTopK,
    &kLeastKvCache, &kLoadBalance, &kShapeAwareLoadBalance, &kSlo,
    &kSloPackLoad,  &kSloLeastLoad, &kSloLeastLoadPulling, &kPrefixCache};
constexpr std::array<std::string_view, 12> kNames = {
    "random",         "round-robin",   "least-request",
    "least-request-top-k", "least-kv-cache", "load-balance",
    "load-balance-shape-aware", "slo", "slo-pack-load",
    "slo-least-load", "slo-least-load-pulling", "prefix-cache"};

}  // namespace

const Strategy* findStrategy(std::string_view name) {
  for (const Strategy* strategy : kStrategies) {
    if (strategy->name() == name) return strategy;
  }
  return nullptr;
}

std::span<const std::string_view> strategyNames() { return kNames; }

}  // namespace switchyard::routing
