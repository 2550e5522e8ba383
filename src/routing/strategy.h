// Strategy: scores the candidates that survived the filters; lower is better.
//
// Strategies are stateless singletons registered by name in strategy_registry.cc. score() runs
// on the hot path: it must not allocate, block or do I/O. Anything it needs beyond the live
// replica counters comes in through ScoringContext.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/clock.h"
#include "core/rng.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::routing {

struct ScoringContext {
  const fleet::FleetSnapshot& snapshot;
  const fleet::ModelEntry& model;
  TimeNs now;
  Rng& rng;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // scores[i] is written for candidate_indices[i] (an index into model.replicas).
  virtual void score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                     std::span<double> scores) const = 0;
};

// Looks a strategy up by its registered name; nullptr when unknown.
const Strategy* findStrategy(std::string_view name);
// All registered names, for errors and docs.
std::span<const std::string_view> strategyNames();

}  // namespace switchyard::routing
