// CellSweep: which request rates to offer one shape (prompt × output tokens), step after step.
// The HTTP sweep and the virtual-time sweep share it, so both visit the same rates for the same
// results.
//
// Without fixed rates: a geometric ladder from `start_load / unloaded_e2e` (about half a request
// in flight) growing by `growth`, until a step *clearly breaks* — it is not served (achieved <
// 0.9 × offered), or with a stop SLO some limit is exceeded `break_factor` times — or
// `max_steps` ladder steps ran. Then up to `refine` bisections (geometric mean) between the
// highest step that met the stop SLO and was served and the lowest one above it that did not,
// while they are more than `precision` apart. With fixed rates: exactly those, in order.
// Pure, deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "profile/profile.h"

namespace switchyard::profile {

struct SweepSettings {
  std::vector<double> rates;  // fixed rates (requests/s); empty: the adaptive ladder
  double start_load = 0.5;    // first rate × unloaded E2E: requests in flight at the first step
  double growth = 1.5;
  int max_steps = 14;
  int refine = 2;
  double precision = 1.08;
  double break_factor = 2.0;
  Slo stop_slo;  // no limits set: only saturation stops the ladder
  // Requests per step: rate × step_seconds, clamped to [min_requests, max_requests].
  double step_seconds = 60;
  int min_requests = 40;
  int max_requests = 300;

  int requestsFor(double rate) const;
};

// The arrival seed of step `step` of the cell (prompt, output): the same in every driver, so the
// HTTP sweep and the virtual one offer the same Poisson arrivals.
uint64_t stepSeed(uint64_t base, int prompt_tokens, int output_tokens, int step);

class CellSweep {
 public:
  CellSweep(const SweepSettings& settings, double unloaded_e2e_s);
  // The next rate to offer; nullopt when the cell is done.
  std::optional<double> nextRate() const;
  void record(const Step& step);
  const std::vector<Step>& steps() const { return steps_; }

 private:
  bool good(const Step& s) const { return served(s) && settings_.stop_slo.metBy(s); }
  bool clearlyBroken(const Step& s) const;

  SweepSettings settings_;
  double first_rate_ = 1;
  std::vector<Step> steps_;  // in the order run
  int ladder_steps_ = 0;
  bool ladder_done_ = false;
  int refined_ = 0;
};

}  // namespace switchyard::profile
