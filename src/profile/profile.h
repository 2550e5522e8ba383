// GpuProfile: what one deployment (one GPU type serving one model) can do, per request shape.
//
// The grid is AIBrix's: `indexes` = [output lengths, input (prompt) lengths] in tokens, ascending,
// usually powers of two; `tputs[out][in]` is the highest request rate (requests/s) at which that
// shape alone meets the profile's SLO and is actually served (throughput >= 0.9 × offered). Zero
// means the shape cannot meet the SLO on this deployment at any measured rate.
//
// Switchyard's extension (what SLO routing and the simulator need): per cell, every measured
// step of the sweep — offered rate, achieved rate and output tokens/s, mean concurrency (requests
// in flight, by Little's law), and TTFT/TPOT/E2E mean, p50, p90, p99.
//
// Lookups, callable on the hot path (no allocation, no lock; the profile is immutable once
// index() has run; any number of threads may read it):
//  - maxRate(prompt, output): interpolated over the log2 grid. The per-request *load* (1 / rate,
//    the GPU-seconds one request costs at the SLO) is interpolated bilinearly in log2(tokens)
//    between the four surrounding cells, because load, unlike rate, adds up linearly with
//    tokens. A surrounding cell with rate 0 makes the answer 0 (the SLO cannot be promised).
//    Below the grid the first row/column is used (smaller requests are no dearer); above it the
//    load grows in proportion to the tokens past the last grid point (conservative).
//  - predict(prompt, output, concurrency): in each of the four surrounding cells, latency is
//    interpolated linearly in mean concurrency between the measured steps (below the first step:
//    the first step; above the last: extrapolated along the last two steps, never below the last
//    value); the four cells are then blended with the same bilinear log2 weights (clamped to
//    the grid's edges). Cells without steps (imported AIBrix profiles) are left out of the blend;
//    with none at all the prediction is invalid.
//
// Construction and validation (validate(), index()) run off the hot path and may allocate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::profile {

// A latency distribution in seconds.
struct Latency {
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  // percentile: 0 = mean, 50, 90 or 99.
  double at(int percentile) const;
};

// One measured step of one cell: the shape offered alone at `offered_rps`.
struct Step {
  double offered_rps = 0;   // the rate asked of the load generator
  double arrival_rps = 0;   // arrivals actually offered in the measured window
  double achieved_rps = 0;  // completions in the measured window / its length
  double output_tokens_per_s = 0;
  double mean_concurrency = 0;  // requests in flight, time-averaged
  int requests = 0;             // completed requests the statistics come from
  int failed = 0;
  Latency ttft;
  Latency tpot;
  Latency e2e;
};

// SLO limits in seconds; 0 = not part of the SLO. Several set: all must hold.
struct Slo {
  double ttft = 0;
  double tpot = 0;
  double e2e = 0;
  int percentile = 99;  // 0 (mean), 50, 90 or 99

  bool any() const { return ttft > 0 || tpot > 0 || e2e > 0; }
  bool metBy(const Step& step) const;
  // "tpot=50ms", "ttft=1s,tpot=50ms", "e2e=5s": kinds ttft, tpot, e2e; values with ms, s or us
  // (a bare number is seconds, as in AIBrix). nullopt and `error` set when malformed.
  static std::optional<Slo> parse(std::string_view text, std::string* error);
  std::string describe() const;  // "P99 TPOT <= 50 ms"
  bool operator==(const Slo&) const = default;
};

// Throughput must reach this fraction of the offered rate for a step to count as served.
inline constexpr double kServedFraction = 0.9;
// Whether a step was served: completions over the measured window reach kServedFraction of the
// arrivals in that same window (the Poisson draw's own rate, so a short step's sampling noise
// does not read as saturation; steps without arrival_rps, e.g. imported, use offered_rps).
bool served(const Step& step);

struct Prediction {
  bool valid = false;
  double ttft = 0;  // seconds, mean
  double tpot = 0;
  double e2e = 0;
  double ttft_tail = 0;  // at the profile's SLO percentile (p99 by default)
  double tpot_tail = 0;
  double e2e_tail = 0;
};

struct GpuProfile {
  std::string gpu;         // GPU type ("A10"); AIBrix's profiles put the deployment name here
  std::string deployment;  // the deployment it describes; AIBrix: the `gpu` field
  std::string model;
  double cost = 1;     // per replica per hour (any unit, the same for every deployment)
  double created = 0;  // unix seconds
  Slo slo;
  std::vector<int> outputs;  // indexes[0], ascending
  std::vector<int> prompts;  // indexes[1], ascending
  // [out][in], requests/s.
  std::vector<std::vector<double>> tputs;
  // Optional AIBrix matrices (mean seconds at the chosen rate); empty when absent.
  std::vector<std::vector<double>> e2e;
  std::vector<std::vector<double>> ttft;
  std::vector<std::vector<double>> tpot;
  // Switchyard's extension: steps[out][in], ascending offered rate; empty when absent.
  std::vector<std::vector<std::vector<Step>>> steps;

  // Empty string when consistent: grid ascending and positive, matrices of grid size, rates
  // finite and >= 0, cost > 0. Otherwise what is wrong, for the operator.
  std::string validate() const;
  // Builds the lookup tables; call once after filling or changing the profile (validate first).
  void index();

  double maxRate(double prompt_tokens, double output_tokens) const;
  Prediction predict(double prompt_tokens, double output_tokens, double concurrency) const;
  bool hasSteps() const { return !flat_steps_.empty(); }

 private:
  struct Corner {
    int out = 0;
    int in = 0;
    double weight = 0;
  };
  // Up to four cells around a shape with their bilinear weights (clamped to the grid).
  int corners(double prompt_tokens, double output_tokens, Corner (&out)[4]) const;
  void predictCell(int out, int in, double concurrency, Prediction& p) const;

  std::vector<double> log_outputs_;
  std::vector<double> log_prompts_;
  std::vector<double> loads_;  // [out * prompts + in]: 1 / tputs, 0 where tputs is 0
  std::vector<Step> flat_steps_;
  std::vector<uint32_t> step_begin_;  // [cell] -> first step; [cells] = end
};

}  // namespace switchyard::profile
