// From closed request-monitoring intervals to the load the solver plans for.
//
// Intervals of one model (from any number of gateways) are merged by start. The *current* rate
// of a cell is its count in the newest interval ÷ the interval; the *window mean* is its count
// over the intervals that started within `window` of the newest one's end ÷ the time they cover.
// The solver gets, per cell, the larger of the two (AIBrix's rule: a rising load is not averaged
// away, a falling one is followed only as the window forgets it). Every interval's shape counts
// are scaled by demand ÷ completed, so failed and rejected requests count as load of the same
// mix. A cell's shape is its bucket's representative size (observe/load_shape.h).
// Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "observe/load_interval.h"
#include "optimizer/mix_model.h"

namespace switchyard::optimizer {

struct LoadSummary {
  int64_t newest_start = -1;  // -1: no interval
  int intervals = 0;          // merged intervals in the window
  double window_seconds = 0;
  double current_rps = 0;  // demand in the newest interval
  double window_rps = 0;   // mean demand over the window
  uint64_t failed = 0;     // over the window
  uint64_t rejected = 0;
  uint64_t queued = 0;  // at the newest interval's end
};

struct PlannedCell {
  int prompt_bucket = 0;
  int output_bucket = 0;
  double current_rps = 0;
  double window_rps = 0;
  LoadCell cell;  // rps = max(current, window mean)
};

std::vector<PlannedCell> planLoad(const std::vector<observe::LoadInterval>& intervals,
                                  int64_t window_s, LoadSummary* summary = nullptr);

}  // namespace switchyard::optimizer
