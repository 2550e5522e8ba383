// Turns one sweep step's per-request timings into a profile Step. Shared by the HTTP sweep
// (`switchyard profile`) and the virtual-time one (`gen-profile --emulated`) so both measure the
// same way:
//  - the measured requests are those arriving from the request at 20 % of the step to the last
//    arrival (the first fifth warms the engine up);
//  - arrival_rps is their arrival rate and achieved_rps their completion rate, each as
//    (n − 1) / (last − first): in steady state completions are spread like arrivals, while a
//    saturated engine finishes them further and further apart (its capacity), so the ratio
//    tells "served" from "queueing" without depending on where the window's edges fall; a
//    request that never finished counts as finishing when the run ended;
//  - output_tokens_per_s = achieved_rps × their mean output tokens;
//  - mean_concurrency is the time-average of requests in flight over the window (a request
//    still unfinished at the end of the run counts as in flight until the window ends);
//  - latency statistics come from the measured requests that completed; percentiles by nearest
//    rank.
// Pure; times in ns on any common timeline.
#pragma once

#include <cstdint>
#include <span>

#include "profile/profile.h"

namespace switchyard::profile {

struct RequestTiming {
  int64_t arrival = 0;
  int64_t first_token = -1;  // -1: no token
  int64_t finished = -1;     // -1: did not complete (still running, or failed)
  int output_tokens = 0;
  bool failed = false;  // an error answer or a broken connection
};

Step summarizeStep(std::span<const RequestTiming> requests, double offered_rps);

}  // namespace switchyard::profile
