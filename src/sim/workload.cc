#include "sim/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <string_view>
#include <vector>

namespace switchyard::sim {
namespace {

// Splits a CSV line on commas (no quoting: the trace holds numbers only).
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    std::string_view f =
        line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t' || f.back() == '\r')) {
      f.remove_suffix(1);
    }
    out.push_back(f);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool toDouble(std::string_view text, double& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

}  // namespace

Workload::Workload(const WorkloadSpec& spec, double rate, TimeNs duration, uint64_t seed)
    : spec_(spec),
      rate_(rate),
      duration_(duration),
      time_rng_(seed * 0x9E3779B97F4A7C15ull + 0x71),
      shape_rng_(seed * 0xD1B54A32D192ED03ull + 0x5A),
      client_rng_(seed * 0xF1357AEA2E62A9C5ull + 0x3C) {
  for (const RequestClass& c : spec.mix) total_weight_ += std::max(0.0, c.weight);
  for (const auto& [t, m] : spec.arrivals.curve) max_multiplier_ = std::max(max_multiplier_, m);
  burst_emitted_.assign(spec.bursts.size(), 0);
  if (spec.arrivals.kind == ArrivalSpec::Kind::kTrace) {
    // A directory would open and read as an empty trace.
    std::error_code error;
    if (std::filesystem::is_directory(spec.arrivals.trace_path, error)) {
      throw ConfigError("cannot read trace file " + spec.arrivals.trace_path + ": is a directory");
    }
    trace_ = std::make_unique<std::ifstream>(spec.arrivals.trace_path);
    if (!*trace_) throw ConfigError("cannot read trace file " + spec.arrivals.trace_path);
  }
}

double Workload::meanOutputTokens(const WorkloadSpec& spec) {
  double weight = 0;
  double tokens = 0;
  for (const RequestClass& c : spec.mix) {
    weight += std::max(0.0, c.weight);
    tokens += std::max(0.0, c.weight) * c.output.mean();
  }
  return weight > 0 ? tokens / weight : 1;
}

Arrival Workload::shape(TimeNs at) {
  Arrival a;
  a.at = at;
  double pick = shape_rng_.uniform01() * total_weight_;
  size_t chosen = spec_.mix.size() - 1;
  for (size_t i = 0; i < spec_.mix.size(); ++i) {
    pick -= std::max(0.0, spec_.mix[i].weight);
    if (pick < 0) {
      chosen = i;
      break;
    }
  }
  const RequestClass& c = spec_.mix[chosen];
  a.request_class = static_cast<uint16_t>(chosen);
  a.prompt_tokens = c.prompt.draw(shape_rng_);
  a.output_tokens = c.output.draw(shape_rng_);
  a.deadline = c.deadline;
  if (spec_.sessions > 0) {
    a.session = 1 + shape_rng_.below(static_cast<uint32_t>(spec_.sessions));
  }
  return a;
}

double Workload::rateAt(TimeNs t) const {
  const auto& curve = spec_.arrivals.curve;
  if (curve.empty()) return rate_;
  const double s = std::fmod(static_cast<double>(t) / kNsPerSec,
                             static_cast<double>(spec_.arrivals.period) / kNsPerSec);
  if (s <= curve.front().first) return rate_ * curve.front().second;
  for (size_t i = 1; i < curve.size(); ++i) {
    if (s <= curve[i].first) {
      const auto [t0, m0] = curve[i - 1];
      const auto [t1, m1] = curve[i];
      return rate_ * (m0 + (m1 - m0) * (s - t0) / (t1 - t0));
    }
  }
  return rate_ * curve.back().second;
}

TimeNs Workload::nextMainArrival() {
  if (rate_ <= 0) return -1;
  const double peak = rate_ * max_multiplier_;
  for (;;) {
    // Exponential gaps at the peak rate; a diurnal curve keeps each with probability
    // rate(t) / peak (thinning), which is a Poisson process at rate(t).
    main_clock_ += static_cast<TimeNs>(-std::log(1.0 - time_rng_.uniform01()) / peak * kNsPerSec);
    if (main_clock_ >= duration_) return -1;
    if (spec_.arrivals.curve.empty() || time_rng_.uniform01() * peak < rateAt(main_clock_)) {
      return main_clock_;
    }
  }
}

bool Workload::nextTraceLine(Arrival& out) {
  std::string line;
  while (std::getline(*trace_, line)) {
    ++trace_line_;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    const auto f = fields(line);
    double v[6] = {0, 0, 0, 0, 0, -1};
    const auto error = [&](const std::string& what) {
      return ConfigError(fmt::format("{}:{}: {}", spec_.arrivals.trace_path, trace_line_, what),
                         trace_line_);
    };
    if (f.size() < 3 || f.size() > 6) {
      if (!trace_data_ && f.size() >= 3 && !toDouble(f[0], v[0])) {  // a header
        trace_data_ = true;
        continue;
      }
      throw error(
          "expected arrival_s,prompt_tokens,output_tokens[,deadline_s][,session][,client]");
    }
    for (size_t i = 0; i < f.size(); ++i) {
      if (!toDouble(f[i], v[i])) {
        if (!trace_data_ && i == 0) goto next_line;  // a header line
        throw error(fmt::format("field {} is not a number: '{}'", i + 1, f[i]));
      }
    }
    trace_data_ = true;
    if (v[0] < 0) throw error("arrival_s must be >= 0");
    if (v[1] < 1 || v[1] > (1 << 20) || v[2] < 1 || v[2] > (1 << 20)) {
      throw error("token counts must be between 1 and 1048576");
    }
    if (v[3] < 0) throw error("deadline_s must be >= 0");
    if (v[5] < -1 || v[5] > (1 << 30) || v[5] != std::floor(v[5])) {
      throw error("client must be a whole number from -1 (its own) to 1073741824");
    }
    out.at = static_cast<TimeNs>(std::llround(v[0] * kNsPerSec));
    if (out.at < trace_last_) throw error("arrival times must not decrease");
    trace_last_ = out.at;
    out.prompt_tokens = static_cast<int>(v[1]);
    out.output_tokens = static_cast<int>(v[2]);
    out.deadline = static_cast<TimeNs>(std::llround(v[3] * kNsPerSec));
    out.session = static_cast<uint64_t>(std::max(0.0, v[4]));
    out.client = static_cast<int32_t>(v[5]);
    out.request_class = 0;
    return out.at < duration_;
  next_line:
    trace_data_ = true;  // only the first line that is not a comment may be a header
  }
  return false;
}

bool Workload::next(Arrival& out) {
  if (trace_) return nextTraceLine(out);
  if (spec_.arrivals.kind == ArrivalSpec::Kind::kClosedLoop) return false;
  if (main_next_ == -1) main_next_ = nextMainArrival();
  // The earliest next arrival of the bursts (they may overlap).
  TimeNs burst_at = -1;
  size_t burst = 0;
  for (size_t i = 0; i < spec_.bursts.size(); ++i) {
    const Burst& b = spec_.bursts[i];
    if (burst_emitted_[i] >= b.count) continue;
    const TimeNs at = b.at + b.duration * burst_emitted_[i] / b.count;
    if (at < duration_ && (burst_at < 0 || at < burst_at)) {
      burst_at = at;
      burst = i;
    }
  }
  if (main_next_ < 0 && burst_at < 0) return false;
  const bool from_burst = burst_at >= 0 && (main_next_ < 0 || burst_at < main_next_);
  out = shape(from_burst ? burst_at : main_next_);
  if (from_burst && spec_.bursts[burst].client >= 0) {
    out.client = spec_.bursts[burst].client;
  } else if (spec_.clients > 0) {
    out.client = static_cast<int32_t>(client_rng_.below(static_cast<uint32_t>(spec_.clients)));
  }
  if (from_burst) {
    ++burst_emitted_[burst];
  } else {
    main_next_ = nextMainArrival();
    if (main_next_ < 0) main_next_ = -2;  // exhausted (not "not drawn")
  }
  return true;
}

}  // namespace switchyard::sim
