// Strategy: scores the candidates that survived the filters; lower is better.
//
// Strategies are stateless singletons registered by name in strategy_registry.cc. score() runs
// on the hot path: it must not allocate, block or do I/O. Everything it needs comes from the
// snapshot (immutable), the replicas' live atomics and the request's shape.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/clock.h"
#include "core/rng.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::routing {

// What the request itself says about its cost, for strategies that use it.
struct RequestShape {
  double prompt_tokens = -1;  // estimated from the body; -1 unknown
  double max_tokens = -1;     // the request's output limit; -1 unknown
};

// One candidate's live inputs, read once per decision into per-worker scratch by strategies that
// use more than the in-flight count (see strategies/load_signals.h).
struct CandidateInputs {
  double running = 0;       // gateway-counted requests in flight
  double waiting = 0;       // engine-queued requests
  double kv_usage = 0;      // GPU KV cache in use, 0..1
  double cpu_kv_usage = 0;  // CPU KV cache in use, 0..1 (0 when not exported)
  double decode = 0;        // learned capacity (NaN unknown)
  double prefill = 0;       // learned prefill capacity (NaN unknown)
  double slowdown = 0;      // learned batching-curve slowdown per stream (NaN unknown)
  bool fresh = false;       // telemetry read within the snapshot's maximum signal age
  bool tokenless = false;   // `decode` is inverse latency
  // Slow start (routing/slow_start.h). A strategy that fills these says so (ScoreNote::eased)
  // and the router copies synthetic_load into the decision's candidate table, so slow start is
  // left explained.
  double synthetic_load = 0;  // in requests, included in `running` where a strategy adds it
  double warmth = 1;          // progress through the ramp, 0 just ready .. 1 established
  // SLO routing: the request's predicted latency on the candidate at the percentile of the
  // objective (seconds; -1 unknown). A strategy that fills these says so (ScoreNote::predicted).
  double predicted_ttft = -1;
  double predicted_tpot = -1;
  // ...and what serving it there costs: the GPU type's price per replica-hour over the requests
  // per hour its profile serves within the SLO at this shape (+inf: no rate; -1 unknown).
  double cost_per_request = -1;
  // Prefix-cache routing: leading prompt blocks probably cached on the candidate. A strategy
  // that fills it says so (ScoreNote::prefix).
  uint32_t prefix_blocks = 0;
  bool prefix_exact = false;  // ... according to the replica's KV events (exact index)
  bool prefix_home = false;   // ... none known anywhere: this is the prefix's home (placement)
};

class PrefixProbe;  // routing/prefix_probe.h

struct ScoringContext {
  const fleet::FleetSnapshot& snapshot;
  const fleet::ModelEntry& model;
  TimeNs now;
  Rng& rng;
  RequestShape shape;
  std::span<CandidateInputs> inputs;  // scratch sized like the candidates; contents undefined
  bool dry_run = false;  // an explanation, not a request: strategies must not change state
  const PrefixProbe* prefix = nullptr;  // the request's prompt blocks and the index; or none
  // A component scored before this one wrote the candidates' prefix fields in `inputs`
  // (ScoreNote::prefix): a blend's later components may read them.
  bool prefix_matched = false;
};

// Why a strategy passed a candidate over (scored it +Inf) instead of excluding it. In a blend
// such a candidate still competes, with kInfPenalty × the component's weight in its score.
enum class PassOver : uint8_t {
  kNone = 0,
  kKvCritical,  // load-balance: free KV cache below kv_critical_free
};

std::string_view passOverName(PassOver reason);

struct ScoreNote {
  // The strategy relaxed its own rule because it would have excluded every candidate
  // (e.g. every replica below the KV-critical threshold: the most headroom wins).
  bool relaxed = false;
  // Picker mode. 0: the lowest score wins (tie-breaks, then random). K > 0: uniform among the
  // up to K lowest scores that are within `tolerance` of the minimum (pickTopK). Honoured when
  // the strategy is used alone; in a blend the scores are normalised and the lowest wins.
  uint32_t top_k = 0;
  double tolerance = 0;
  // Picker mode "band" (when > 0 and top_k is 0): among the scores within `band` of the minimum
  // the lowest tiebreak wins (pickWithinBand). Honoured alone, like top_k.
  double band = 0;
  // ScoringContext::inputs holds every candidate's slow-start fields (synthetic_load, warmth);
  // without it the router records no synthetic load.
  bool eased = false;
  // ScoringContext::inputs holds every candidate's predicted latency (SLO routing).
  bool predicted = false;
  // ScoringContext::inputs holds every candidate's prefix match (prefix-cache routing).
  bool prefix = false;
  // Every candidate is predicted to miss the SLO: the request should wait at the gateway rather
  // than be sent now (slo-least-load-pulling). Honoured when the strategy is used alone.
  bool hold = false;
  // The strategy had no profile for some candidate and scored like load-balance instead.
  bool fallback = false;
  // What a score of +Inf means from this strategy (the router marks those candidates' rows).
  PassOver pass_over = PassOver::kNone;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // scores[i] (and optionally tiebreak[i], lower wins among equal scores; it arrives zeroed) are
  // written for candidate_indices[i], an index into model.replicas. +Inf means "pass over".
  virtual ScoreNote score(const ScoringContext& context,
                          std::span<const uint32_t> candidate_indices, std::span<double> scores,
                          std::span<double> tiebreak) const = 0;
  // Whether load-balance is blended in behind this strategy by default (auto-blend). The plain
  // load strategies opt out so they stay comparable baselines.
  virtual bool autoBlendsLoadBalance() const { return true; }
  // The auto-blended load-balance weight relative to this strategy's, as a factor of the
  // snapshot's auto-blend weight (prefix-cache: 0.8, AIBrix's 5 : 4).
  virtual double autoBlendScale() const { return 1.0; }
  // Whether the strategy may see a random sample of the fleet (candidate sampling) instead of
  // every replica. Round-robin may not: its rotation is over the whole fleet.
  virtual bool samplesCandidates() const { return true; }
};

// Looks a strategy up by its registered name; nullptr when unknown.
const Strategy* findStrategy(std::string_view name);
// All registered names, for errors and docs.
std::span<const std::string_view> strategyNames();

}  // namespace switchyard::routing
