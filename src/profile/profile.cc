#include "profile/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace switchyard::profile {
namespace {

// Up to two grid points around log2 value `x` with linear weights; `above` > 1 when x lies
// past the last point (the ratio of tokens to the last grid value).
struct AxisHit {
  int index[2] = {0, 0};
  double weight[2] = {1, 0};
  int count = 1;
  double above = 1;
};

AxisHit locate(const std::vector<double>& logs, double x) {
  AxisHit hit;
  const int n = static_cast<int>(logs.size());
  if (n == 0) return hit;
  if (x <= logs[0]) return hit;
  if (x >= logs[n - 1]) {
    hit.index[0] = n - 1;
    hit.above = std::exp2(x - logs[n - 1]);
    return hit;
  }
  int i = 0;
  while (i + 1 < n && logs[i + 1] <= x) ++i;
  const double t = (x - logs[i]) / (logs[i + 1] - logs[i]);
  hit.index[0] = i;
  hit.index[1] = i + 1;
  hit.weight[0] = 1 - t;
  hit.weight[1] = t;
  hit.count = 2;
  return hit;
}

double log2Tokens(double tokens) { return std::log2(std::max(tokens, 1.0)); }

bool parseSeconds(std::string_view text, double& out) {
  std::string s(text);
  double scale = 1;
  auto strip = [&](std::string_view suffix, double factor) {
    if (s.size() > suffix.size() && s.ends_with(suffix)) {
      s.resize(s.size() - suffix.size());
      scale = factor;
      return true;
    }
    return false;
  };
  (void)(strip("ms", 1e-3) || strip("us", 1e-6) || strip("s", 1));
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0) return false;
  out = v * scale;
  return true;
}

std::string matrixShapeError(const std::vector<std::vector<double>>& m, std::string_view name,
                             size_t rows, size_t cols, bool required) {
  if (m.empty() && !required) return {};
  if (m.size() != rows) {
    return fmt::format("{} has {} rows, expected {} (one per output length)", name, m.size(), rows);
  }
  for (size_t r = 0; r < rows; ++r) {
    if (m[r].size() != cols) {
      return fmt::format("{}[{}] has {} values, expected {} (one per prompt length)", name, r,
                         m[r].size(), cols);
    }
    for (double v : m[r]) {
      if (!std::isfinite(v) || v < 0) {
        return fmt::format("{}[{}] holds {}, expected a finite value >= 0", name, r, v);
      }
    }
  }
  return {};
}

std::string gridError(const std::vector<int>& grid, std::string_view name) {
  if (grid.empty()) return fmt::format("{} is empty", name);
  for (size_t i = 0; i < grid.size(); ++i) {
    if (grid[i] < 1) return fmt::format("{} holds {}, expected token counts >= 1", name, grid[i]);
    if (i > 0 && grid[i] <= grid[i - 1]) return fmt::format("{} is not ascending", name);
  }
  return {};
}

}  // namespace

double Latency::at(int percentile) const {
  switch (percentile) {
    case 50:
      return p50;
    case 90:
      return p90;
    case 99:
      return p99;
    default:
      return mean;
  }
}

bool served(const Step& step) {
  const double offered = step.arrival_rps > 0 ? step.arrival_rps : step.offered_rps;
  return step.achieved_rps >= kServedFraction * offered;
}

bool Slo::metBy(const Step& step) const {
  if (ttft > 0 && !(step.ttft.at(percentile) <= ttft)) return false;
  if (tpot > 0 && !(step.tpot.at(percentile) <= tpot)) return false;
  if (e2e > 0 && !(step.e2e.at(percentile) <= e2e)) return false;
  return true;
}

std::optional<Slo> Slo::parse(std::string_view text, std::string* error) {
  Slo slo;
  auto fail = [&](std::string message) -> std::optional<Slo> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  if (text.empty()) return fail("empty SLO: expected e.g. tpot=50ms");
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return fail("trailing comma in the SLO");
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      return fail(fmt::format("'{}': expected KIND=VALUE, e.g. tpot=50ms", part));
    }
    const std::string_view kind = part.substr(0, eq);
    double value = 0;
    if (!parseSeconds(part.substr(eq + 1), value)) {
      return fail(fmt::format("'{}': the value must be a positive duration (50ms, 1.5s)", part));
    }
    if (kind == "ttft") {
      slo.ttft = value;
    } else if (kind == "tpot") {
      slo.tpot = value;
    } else if (kind == "e2e") {
      slo.e2e = value;
    } else {
      return fail(fmt::format("unknown SLO kind '{}': expected ttft, tpot or e2e", kind));
    }
  }
  return slo;
}

std::string Slo::describe() const {
  const std::string pct = percentile > 0 ? fmt::format("P{}", percentile) : std::string("mean");
  std::string out;
  auto add = [&](std::string_view name, double v) {
    if (v <= 0) return;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {} <= {:g} ms", pct, name, v * 1e3);
  };
  add("TTFT", ttft);
  add("TPOT", tpot);
  add("E2E", e2e);
  return out.empty() ? "none" : out;
}

std::string GpuProfile::validate() const {
  if (std::string e = gridError(outputs, "indexes[0] (output lengths)"); !e.empty()) return e;
  if (std::string e = gridError(prompts, "indexes[1] (prompt lengths)"); !e.empty()) return e;
  if (!std::isfinite(cost) || cost <= 0) return fmt::format("cost {} must be > 0", cost);
  if (slo.percentile != 0 && slo.percentile != 50 && slo.percentile != 90 && slo.percentile != 99) {
    return fmt::format("slos.percentile {} must be 0, 50, 90 or 99", slo.percentile);
  }
  const size_t rows = outputs.size();
  const size_t cols = prompts.size();
  if (std::string e = matrixShapeError(tputs, "tputs", rows, cols, true); !e.empty()) return e;
  if (std::string e = matrixShapeError(e2e, "e2e", rows, cols, false); !e.empty()) return e;
  if (std::string e = matrixShapeError(ttft, "ttft", rows, cols, false); !e.empty()) return e;
  if (std::string e = matrixShapeError(tpot, "tpot", rows, cols, false); !e.empty()) return e;
  if (!steps.empty()) {
    if (steps.size() != rows) return "steps must have one row per output length";
    for (const auto& row : steps) {
      if (row.size() != cols) return "steps must have one entry per prompt length";
      for (const auto& cell : row) {
        for (const Step& s : cell) {
          if (!std::isfinite(s.offered_rps) || s.offered_rps < 0 ||
              !std::isfinite(s.mean_concurrency) || s.mean_concurrency < 0) {
            return "a step has a negative or non-finite rate or concurrency";
          }
        }
      }
    }
  }
  return {};
}

void GpuProfile::index() {
  log_outputs_.clear();
  log_prompts_.clear();
  for (int o : outputs) log_outputs_.push_back(log2Tokens(o));
  for (int p : prompts) log_prompts_.push_back(log2Tokens(p));
  const size_t cols = prompts.size();
  loads_.assign(outputs.size() * cols, 0);
  for (size_t o = 0; o < outputs.size() && o < tputs.size(); ++o) {
    for (size_t i = 0; i < cols && i < tputs[o].size(); ++i) {
      loads_[o * cols + i] = tputs[o][i] > 0 ? 1.0 / tputs[o][i] : 0;
    }
  }
  flat_steps_.clear();
  step_begin_.assign(outputs.size() * cols + 1, 0);
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (size_t i = 0; i < cols; ++i) {
      step_begin_[o * cols + i] = static_cast<uint32_t>(flat_steps_.size());
      if (o < steps.size() && i < steps[o].size()) {
        std::vector<Step> cell = steps[o][i];
        std::erase_if(cell, [](const Step& s) { return s.requests <= 0; });
        std::stable_sort(cell.begin(), cell.end(), [](const Step& a, const Step& b) {
          return a.mean_concurrency < b.mean_concurrency;
        });
        flat_steps_.insert(flat_steps_.end(), cell.begin(), cell.end());
      }
    }
  }
  step_begin_.back() = static_cast<uint32_t>(flat_steps_.size());
}

int GpuProfile::corners(double prompt_tokens, double output_tokens, Corner (&out)[4]) const {
  const AxisHit o = locate(log_outputs_, log2Tokens(output_tokens));
  const AxisHit p = locate(log_prompts_, log2Tokens(prompt_tokens));
  int n = 0;
  for (int a = 0; a < o.count; ++a) {
    for (int b = 0; b < p.count; ++b) {
      out[n++] = Corner{o.index[a], p.index[b], o.weight[a] * p.weight[b]};
    }
  }
  return n;
}

double GpuProfile::maxRate(double prompt_tokens, double output_tokens) const {
  if (loads_.empty()) return 0;
  const AxisHit o = locate(log_outputs_, log2Tokens(output_tokens));
  const AxisHit p = locate(log_prompts_, log2Tokens(prompt_tokens));
  const size_t cols = prompts.size();
  double load = 0;
  for (int a = 0; a < o.count; ++a) {
    for (int b = 0; b < p.count; ++b) {
      const double w = o.weight[a] * p.weight[b];
      if (w <= 0) continue;
      const double cell = loads_[static_cast<size_t>(o.index[a]) * cols + p.index[b]];
      if (cell <= 0) return 0;
      load += w * cell;
    }
  }
  load *= o.above * p.above;
  return load > 0 ? 1.0 / load : 0;
}

void GpuProfile::predictCell(int out, int in, double concurrency, Prediction& p) const {
  const size_t cell = static_cast<size_t>(out) * prompts.size() + static_cast<size_t>(in);
  const uint32_t begin = step_begin_[cell];
  const uint32_t end = step_begin_[cell + 1];
  const int pct = slo.percentile;
  auto take = [&](const Step& s) {
    p.ttft = s.ttft.mean;
    p.tpot = s.tpot.mean;
    p.e2e = s.e2e.mean;
    p.ttft_tail = s.ttft.at(pct);
    p.tpot_tail = s.tpot.at(pct);
    p.e2e_tail = s.e2e.at(pct);
  };
  if (begin == end) return;
  p.valid = true;
  const Step* first = &flat_steps_[begin];
  const Step* last = &flat_steps_[end - 1];
  if (end - begin == 1 || concurrency <= first->mean_concurrency) {
    take(concurrency <= first->mean_concurrency ? *first : *last);
    return;
  }
  const Step* lo = first;
  const Step* hi = first + 1;
  while (hi < last && hi->mean_concurrency < concurrency) {
    ++lo;
    ++hi;
  }
  const double span = hi->mean_concurrency - lo->mean_concurrency;
  double t = span > 0 ? (concurrency - lo->mean_concurrency) / span : 1.0;
  const bool beyond = concurrency > last->mean_concurrency;
  if (!beyond) t = std::clamp(t, 0.0, 1.0);
  auto mix = [&](double a, double b) {
    const double v = a + t * (b - a);
    return beyond ? std::max(v, b) : v;
  };
  p.ttft = mix(lo->ttft.mean, hi->ttft.mean);
  p.tpot = mix(lo->tpot.mean, hi->tpot.mean);
  p.e2e = mix(lo->e2e.mean, hi->e2e.mean);
  p.ttft_tail = mix(lo->ttft.at(pct), hi->ttft.at(pct));
  p.tpot_tail = mix(lo->tpot.at(pct), hi->tpot.at(pct));
  p.e2e_tail = mix(lo->e2e.at(pct), hi->e2e.at(pct));
}

Prediction GpuProfile::predict(double prompt_tokens, double output_tokens,
                               double concurrency) const {
  Prediction result;
  if (flat_steps_.empty()) return result;
  Corner cs[4];
  const int n = corners(prompt_tokens, output_tokens, cs);
  double total = 0;
  for (int k = 0; k < n; ++k) {
    if (cs[k].weight <= 0) continue;
    Prediction cell;
    predictCell(cs[k].out, cs[k].in, concurrency, cell);
    if (!cell.valid) continue;
    const double w = cs[k].weight;
    total += w;
    result.ttft += w * cell.ttft;
    result.tpot += w * cell.tpot;
    result.e2e += w * cell.e2e;
    result.ttft_tail += w * cell.ttft_tail;
    result.tpot_tail += w * cell.tpot_tail;
    result.e2e_tail += w * cell.e2e_tail;
  }
  if (total <= 0) return Prediction{};
  result.valid = true;
  for (double* v : {&result.ttft, &result.tpot, &result.e2e, &result.ttft_tail, &result.tpot_tail,
                    &result.e2e_tail}) {
    *v /= total;
  }
  return result;
}

}  // namespace switchyard::profile
