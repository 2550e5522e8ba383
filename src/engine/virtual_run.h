// One engine on a virtual clock: a BatchingModel fed a list of arrivals, run until every request
// has finished, answering each request's TTFT, TPOT and E2E. No HTTP, no wall clock, no
// randomness of its own: the same arrivals give the same outcomes. `gen-profile --emulated` and
// the fleet simulator use it; the HTTP emulator drives the same model on a real clock.
//
// Pure and single-threaded. Cost: O(steps × running requests); a few ms per thousand requests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/engine_model.h"
#include "engine/perf_profiles.h"

namespace switchyard::engine {

struct VirtualArrival {
  TimeNs at = 0;
  int prompt_tokens = 1;
  int output_tokens = 1;
};

// One request's timings, in the order of the arrivals given.
struct VirtualOutcome {
  TimeNs arrival = 0;
  TimeNs first_token = -1;  // -1: never produced (the run hit its horizon)
  TimeNs finished = -1;
  int output_tokens = 0;

  bool done() const { return finished >= 0; }
  double ttftSeconds() const { return static_cast<double>(first_token - arrival) / 1e9; }
  double e2eSeconds() const { return static_cast<double>(finished - arrival) / 1e9; }
  // (E2E − TTFT) / (tokens − 1): the client-side time per output token; 0 for one token.
  double tpotSeconds() const {
    return output_tokens > 1
               ? static_cast<double>(finished - first_token) / 1e9 / (output_tokens - 1)
               : 0.0;
  }
};

// Runs `arrivals` (sorted by time) through a fresh BatchingModel. `horizon` >= 0 stops the run
// at that virtual time, leaving unfinished requests with finished == -1. Prefix caching sees
// no shared prefixes (every prompt is distinct).
std::vector<VirtualOutcome> runVirtual(const PerfConfig& config,
                                       std::span<const VirtualArrival> arrivals,
                                       TimeNs horizon = -1);

// `count` arrivals of one shape as a Poisson process at `rate` requests/s, from `seed`.
std::vector<VirtualArrival> poissonArrivals(double rate, int count, int prompt_tokens,
                                            int output_tokens, uint64_t seed);

}  // namespace switchyard::engine
