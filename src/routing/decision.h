// Decision: what the router chose for one request, and, when asked, why.
//
// The candidate table lives in the caller's RoutingScratch (reused per worker, so routing does
// not allocate); a Decision is valid until that scratch is reused.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "profile/profile.h"
#include "routing/strategy.h"

namespace switchyard::routing {

enum class Exclusion : uint8_t {
  kNone = 0,
  kUnhealthy,          // excluded by the health manager (failures, probes, load outlier)
  kHalfOpenBusy,       // recovering: its one trial request is already in flight
  kSaturated,          // at the model's in-flight limit per replica
  kFailedThisRequest,  // already tried for this request and failed before responding
  kDraining,           // being drained or removed: its requests finish, new ones go elsewhere
  kNotReady,           // its Pod is not Ready
  kOtherGpu,           // not of the GPU type the request asked for (x-switchyard-gpu)
};

std::string_view exclusionName(Exclusion reason);

struct CandidateRow {
  uint32_t replica_index = 0;  // index into ModelEntry::replicas
  Exclusion excluded = Exclusion::kNone;
  double score = 0;  // lower is better; meaningful when not excluded
  double synthetic_load = 0;  // slow start's share of `score` (a warming replica), in requests
  bool in_pick_set = false;   // top-K: one of the replicas the random pick was among; band:
                              // within the band the fastest was chosen from
  float predicted_ttft = -1;  // SLO routing: predicted latency here (seconds; -1 unknown)
  float predicted_tpot = -1;
  float cost_per_request = -1;  // SLO routing: the shape's cost on this GPU type (+inf: no rate)
  int32_t prefix_blocks = -1;  // prefix-cache: leading prompt blocks cached here (-1: not asked)
  bool prefix_exact = false;   // ... per the replica's KV events (else the approximate index)
  bool prefix_home = false;    // ... no candidate known to hold the prefix: its home replica
  PassOver passed_over = PassOver::kNone;  // a blend's component scored it +Inf (alone: score)
};

struct Decision {
  int chosen = -1;  // index into ModelEntry::replicas; -1 when nothing could be chosen
  std::string_view strategy;
  uint32_t candidates = 0;  // replicas that passed the filters
  uint32_t ready = 0;       // replicas of the model
  bool relaxed = false;     // a strategy relaxed its own rule (e.g. all replicas KV-critical)
  bool health_fallback = false;  // every replica was unhealthy: health was ignored, not the request
  uint32_t saturated = 0;        // candidates removed by the in-flight limit
  uint32_t unavailable = 0;      // replicas removed as draining or not ready (never a fallback)
  uint32_t other_gpu = 0;        // replicas of another GPU type than the request pinned
  bool affinity = false;         // the request's preferred replica (its session's) was kept
  uint32_t pick_set = 0;  // top-K / band: how many candidates the pick was among (0: lowest won)
  // Candidate sampling: how many replicas were drawn and considered (0: every replica was).
  uint32_t sampled = 0;
  // SLO routing: every candidate was predicted to miss the SLO and the strategy asked to hold
  // the request at the gateway (chosen is -1); or some candidate had no profile and the
  // strategy scored like load-balance instead.
  bool hold = false;
  bool slo_fallback = false;
  // SLO routing took part: the objective requests were held to (the model's; nullptr otherwise).
  const profile::Slo* slo = nullptr;
  // Prefix-cache routing took part: the prompt's full blocks and tokens per block (0: did not).
  uint32_t prefix_total_blocks = 0;
  uint32_t prefix_block_tokens = 0;
  // One row per replica considered, filled always (cheap): every replica in fleet order
  // (rows[i] is replica i), or the sample's in the order drawn.
  std::span<const CandidateRow> rows;

  // The row of replica `replica`, nullptr if it was not considered.
  const CandidateRow* rowOf(int replica) const {
    if (replica < 0) return nullptr;
    const auto index = static_cast<uint32_t>(replica);
    if (index < rows.size() && rows[index].replica_index == index) return &rows[index];
    for (const CandidateRow& row : rows) {
      if (row.replica_index == index) return &row;
    }
    return nullptr;
  }
};

// Per-worker scratch space so that a routing decision allocates nothing once warmed up.
struct RoutingScratch {
  std::vector<CandidateRow> rows;
  std::vector<uint32_t> candidates;      // replica index of each candidate
  std::vector<uint32_t> candidate_rows;  // row of each candidate
  // Candidate sampling: stamp[i] == epoch marks replica i as drawn for the current decision, so
  // a draw costs O(sample), never O(fleet).
  std::vector<uint32_t> stamp;
  uint32_t epoch = 0;
  std::vector<double> scores;
  std::vector<double> tiebreak;
  std::vector<double> component;  // one blend component's scores
  std::vector<double> component_tiebreak;
  std::vector<PassOver> passed_over;  // per candidate: a blend's component scored it +Inf
  std::vector<CandidateInputs> inputs;
  std::vector<uint32_t> pick_order;  // pickTopK's working set
};

}  // namespace switchyard::routing
