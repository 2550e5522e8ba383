#include "profile/sweep_plan.h"

#include <algorithm>
#include <cmath>

namespace switchyard::profile {

uint64_t stepSeed(uint64_t base, int prompt_tokens, int output_tokens, int step) {
  uint64_t h = base * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t v : {uint64_t(prompt_tokens), uint64_t(output_tokens), uint64_t(step)}) {
    h = (h ^ v) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  return h;
}

int SweepSettings::requestsFor(double rate) const {
  const double n = std::round(rate * step_seconds);
  return static_cast<int>(std::clamp(n, double(std::max(1, min_requests)),
                                     double(std::max(min_requests, max_requests))));
}

CellSweep::CellSweep(const SweepSettings& settings, double unloaded_e2e_s) : settings_(settings) {
  first_rate_ = settings_.start_load / std::max(unloaded_e2e_s, 1e-3);
  settings_.growth = std::max(settings_.growth, 1.01);
}

bool CellSweep::clearlyBroken(const Step& s) const {
  if (!served(s)) return true;
  const Slo& slo = settings_.stop_slo;
  const double k = settings_.break_factor;
  const int pct = slo.percentile;
  return (slo.ttft > 0 && s.ttft.at(pct) > k * slo.ttft) ||
         (slo.tpot > 0 && s.tpot.at(pct) > k * slo.tpot) ||
         (slo.e2e > 0 && s.e2e.at(pct) > k * slo.e2e);
}

void CellSweep::record(const Step& step) {
  steps_.push_back(step);
  if (!settings_.rates.empty()) return;
  if (!ladder_done_) {
    ++ladder_steps_;
    if (clearlyBroken(step) || ladder_steps_ >= settings_.max_steps) ladder_done_ = true;
  } else {
    ++refined_;
  }
}

std::optional<double> CellSweep::nextRate() const {
  if (!settings_.rates.empty()) {
    if (steps_.size() >= settings_.rates.size()) return std::nullopt;
    return settings_.rates[steps_.size()];
  }
  if (!ladder_done_) return first_rate_ * std::pow(settings_.growth, ladder_steps_);
  if (refined_ >= settings_.refine) return std::nullopt;
  // Highest good rate, and the lowest rate above it that was not good.
  double lo = 0;
  for (const Step& s : steps_) {
    if (good(s)) lo = std::max(lo, s.offered_rps);
  }
  double hi = 0;
  for (const Step& s : steps_) {
    if (!good(s) && s.offered_rps > lo && (hi == 0 || s.offered_rps < hi)) hi = s.offered_rps;
  }
  if (lo <= 0 || hi <= 0 || hi / lo <= settings_.precision) return std::nullopt;
  return std::sqrt(lo * hi);
}

}  // namespace switchyard::profile
