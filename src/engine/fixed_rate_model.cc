#include "engine/fixed_rate_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace switchyard::engine {
namespace {

constexpr TimeNs kNsPerSec = 1'000'000'000;
constexpr TimeNs kFirstTokenOverheadNs = 15'000'000;  // scheduling + sampling, before prefill

// Rough single-request figures for a 7B model; deliberately round numbers, not measurements.
const GpuProfile kProfiles[] = {
    {"A10", 25, 3'000, kFirstTokenOverheadNs, 20'000},
    {"L20", 35, 5'000, kFirstTokenOverheadNs, 60'000},
    {"V100", 30, 4'000, kFirstTokenOverheadNs, 30'000},
    {"A100", 60, 10'000, kFirstTokenOverheadNs, 100'000},
    {"H100", 100, 20'000, kFirstTokenOverheadNs, 160'000},
    {"B200", 140, 30'000, kFirstTokenOverheadNs, 300'000},
};

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<GpuProfile> findGpuProfile(std::string_view gpu) {
  for (const GpuProfile& profile : kProfiles) {
    if (equalsIgnoreCase(profile.name, gpu)) return profile;
  }
  return std::nullopt;
}

std::vector<std::string> knownGpuNames() {
  std::vector<std::string> names;
  for (const GpuProfile& profile : kProfiles) names.push_back(profile.name);
  return names;
}

FixedRateModel::FixedRateModel(GpuProfile profile) : profile_(std::move(profile)) {
  if (!(profile_.decode_tokens_per_s > 0) || !(profile_.prefill_tokens_per_s > 0) ||
      profile_.first_token_overhead_ns < 0 || profile_.kv_capacity_tokens < 1) {
    throw std::invalid_argument(fmt::format("invalid GPU profile '{}'", profile_.name));
  }
  decode_interval_ns_ = std::max<TimeNs>(
      1, std::llround(static_cast<double>(kNsPerSec) / profile_.decode_tokens_per_s));
}

std::unique_ptr<FixedRateModel> FixedRateModel::forGpu(std::string_view gpu) {
  std::optional<GpuProfile> profile = findGpuProfile(gpu);
  if (!profile) {
    throw std::invalid_argument(
        fmt::format("unknown GPU '{}' (known: {})", gpu, fmt::join(knownGpuNames(), ", ")));
  }
  return std::make_unique<FixedRateModel>(std::move(*profile));
}

TimeNs FixedRateModel::timeToFirstTokenNs(int prompt_tokens) const {
  double prefill_s = std::max(prompt_tokens, 0) / profile_.prefill_tokens_per_s;
  return profile_.first_token_overhead_ns + std::llround(prefill_s * kNsPerSec);
}

void FixedRateModel::moveTo(TimeNs now) {
  if (!started_) {
    started_ = true;
    last_now_ = now;
    return;
  }
  if (now <= last_now_) return;
  if (!live_.empty()) busy_seconds_ += static_cast<double>(now - last_now_) / kNsPerSec;
  last_now_ = now;
}

void FixedRateModel::submit(const ModelRequest& request, TimeNs now) {
  moveTo(now);
  Live live{request.id, std::max(request.prompt_tokens, 0), std::max(request.max_tokens, 1), 0,
            last_now_ + timeToFirstTokenNs(request.prompt_tokens)};
  tokens_held_ += live.prompt_tokens;
  live_.push_back(live);
}

void FixedRateModel::cancel(RequestId id, TimeNs now) {
  moveTo(now);
  auto it = std::find_if(live_.begin(), live_.end(), [id](const Live& l) { return l.id == id; });
  if (it == live_.end()) return;
  tokens_held_ -= it->prompt_tokens + it->produced;
  live_.erase(it);
}

void FixedRateModel::advance(TimeNs now, std::vector<TokenEvent>& events) {
  moveTo(now);
  now = last_now_;
  auto kept = live_.begin();
  for (Live& live : live_) {
    int due = live.produced;
    if (now >= live.first_token_at) {
      TimeNs since_first = now - live.first_token_at;
      int64_t total = 1 + since_first / decode_interval_ns_;
      due = static_cast<int>(std::min<int64_t>(total, live.max_tokens));
    }
    bool finished = due >= live.max_tokens;
    if (due > live.produced) {
      events.push_back(TokenEvent{live.id, due - live.produced, finished});
      tokens_held_ += due - live.produced;
      live.produced = due;
    }
    if (finished) {
      tokens_held_ -= live.prompt_tokens + live.produced;
    } else {
      *kept++ = live;
    }
  }
  live_.erase(kept, live_.end());
}

TimeNs FixedRateModel::nextEventTime() const {
  if (live_.empty()) return -1;
  TimeNs next = std::numeric_limits<TimeNs>::max();
  for (const Live& live : live_) next = std::min(next, tokenTime(live, live.produced + 1));
  return next;
}

EngineLoad FixedRateModel::load() const {
  EngineLoad load;
  load.running = static_cast<int>(live_.size());
  load.waiting = 0;
  load.kv_usage = std::min(
      1.0, static_cast<double>(tokens_held_) / static_cast<double>(profile_.kv_capacity_tokens));
  load.busy_seconds_total = busy_seconds_;
  return load;
}

}  // namespace switchyard::engine
