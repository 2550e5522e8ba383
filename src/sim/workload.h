// Workload: the requests a scenario offers, generated on demand in arrival order (nothing is held
// in memory but the next arrival of each source). Arrival times and request shapes come from two
// random streams seeded by the scenario's seed, so every strategy of a run sees the same
// sequence: the same arrival instants, prompt and output lengths, deadlines and sessions.
//
// Open loop: a Poisson process at `rate`, or a diurnal curve (a Poisson process whose rate follows
// the curve, by thinning), plus bursts, merged in time order; or a trace file (CSV:
// arrival_s,prompt_tokens,output_tokens[,deadline_s][,session][,client], a header line allowed,
// times non-decreasing; client -1 or absent: the request is a client of its own), read line by
// line. Closed loop: the simulator asks for a shape whenever a client sends. Not thread-safe.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "sim/scenario.h"

namespace switchyard::sim {

struct Arrival {
  TimeNs at = 0;
  int prompt_tokens = 1;
  int output_tokens = 1;
  TimeNs deadline = 0;   // relative to `at`; 0: none
  uint64_t session = 0;  // 0: none
  int32_t client = -1;   // whose request it is (WorkloadSpec::clients); -1: a client of its own
  uint16_t request_class = 0;
};

class Workload {
 public:
  // `rate`: the open-loop mean rate in requests/s (a `load:` already turned into a rate).
  // Throws ConfigError when the trace file cannot be opened.
  Workload(const WorkloadSpec& spec, double rate, TimeNs duration, uint64_t seed);

  // The next open-loop arrival before `duration`; false when there is none left. Throws
  // ConfigError("TRACE:LINE: …") on a malformed trace line.
  bool next(Arrival& out);
  // A request shape drawn from the mix, arriving at `at` (closed loop).
  Arrival shape(TimeNs at);
  // The mean output tokens of the mix (turning a load into a rate).
  static double meanOutputTokens(const WorkloadSpec& spec);

 private:
  TimeNs nextMainArrival();
  double rateAt(TimeNs t) const;
  bool nextTraceLine(Arrival& out);

  const WorkloadSpec& spec_;
  double rate_;
  TimeNs duration_;
  Rng time_rng_;
  Rng shape_rng_;
  Rng client_rng_;  // its own stream: naming clients changes no arrival or shape
  double total_weight_ = 0;
  double max_multiplier_ = 1;
  TimeNs main_next_ = -1;  // the main process's next arrival (-1: not drawn yet)
  TimeNs main_clock_ = 0;
  std::vector<int> burst_emitted_;  // per burst
  std::unique_ptr<std::ifstream> trace_;
  int trace_line_ = 0;
  bool trace_data_ = false;  // past the first line that is not a comment
  TimeNs trace_last_ = 0;
};

}  // namespace switchyard::sim
