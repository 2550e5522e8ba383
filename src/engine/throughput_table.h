// Closed-loop throughput of one BatchingModel on a virtual clock: what the roofline predicts a
// replica serves at a given concurrency. Pure; used by `switchyard engine --profile-table`, the
// docs and the tests.
#pragma once

#include <string>
#include <vector>

#include "engine/perf_profiles.h"

namespace switchyard::engine {

struct ClosedLoopResult {
  double output_tokens_per_s = 0;
  double mean_ttft_s = 0;
  double mean_itl_s = 0;  // between consecutive tokens of a request
  int64_t preemptions = 0;
  int max_waiting = 0;
};

// `concurrency` clients each send a request (distinct prompts, no prefix sharing) as soon as
// their previous one finishes, until `requests` have completed.
ClosedLoopResult simulateClosedLoop(const PerfConfig& config, int concurrency, int prompt_tokens,
                                    int max_tokens, int requests);

// A Markdown table: one row per GPU of the catalog, the predicted output tokens/s at each
// concurrency (closed loop, `requests_per_client` requests per client), or "does not fit".
std::string formatThroughputTable(const ProfileCatalog& catalog, const std::string& model,
                                  int prompt_tokens, int max_tokens,
                                  const std::vector<int>& concurrencies = {1, 16, 64},
                                  int requests_per_client = 4);

}  // namespace switchyard::engine
