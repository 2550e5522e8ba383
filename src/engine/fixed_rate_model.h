// FixedRateModel: the simplest EngineModel, a stand-in until a real GPU performance model exists.
//
// Every request decodes at a fixed per-GPU rate regardless of how many others are running (no
// batching limit, no interference), after a time to first token of
//   ttft = fixed overhead + prompt_tokens / prefill rate.
// Token k (1-based) of a request arrives at first_token_time + (k - 1) * decode interval.
// KV usage is the tokens held by live requests (prompt + produced) over a fixed per-GPU capacity,
// clamped to 1. Requests in prefill count as running (as in vLLM); nothing ever waits.
//
// Single-threaded like every EngineModel. advance() and nextEventTime() cost O(live requests):
// fine for an emulator serving tens of streams; the fleet simulator swaps in its own model.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_model.h"

namespace switchyard::engine {

struct GpuProfile {
  std::string name;
  double decode_tokens_per_s = 0;   // per request
  double prefill_tokens_per_s = 0;  // prompt processing, per request
  TimeNs first_token_overhead_ns = 0;
  int64_t kv_capacity_tokens = 0;
};

// The built-in profiles (A10, L20, V100, A100, H100, B200); lookup is case-insensitive.
std::optional<GpuProfile> findGpuProfile(std::string_view gpu);
std::vector<std::string> knownGpuNames();

class FixedRateModel final : public EngineModel {
 public:
  // Rates must be positive and the capacity at least 1; throws std::invalid_argument otherwise
  // (start-up only).
  explicit FixedRateModel(GpuProfile profile);
  // Throws std::invalid_argument naming the known GPUs when `gpu` is not one of them.
  static std::unique_ptr<FixedRateModel> forGpu(std::string_view gpu);

  void submit(const ModelRequest& request, TimeNs now) override;
  void cancel(RequestId id, TimeNs now) override;
  void advance(TimeNs now, std::vector<TokenEvent>& events) override;
  TimeNs nextEventTime() const override;
  EngineLoad load() const override;

  const GpuProfile& profile() const { return profile_; }
  // When the first token of a request with this many prompt tokens arrives, relative to submit.
  TimeNs timeToFirstTokenNs(int prompt_tokens) const;
  TimeNs decodeIntervalNs() const { return decode_interval_ns_; }

 private:
  struct Live {
    RequestId id;
    int prompt_tokens;
    int max_tokens;
    int produced;
    TimeNs first_token_at;
  };

  TimeNs tokenTime(const Live& live, int token_index) const {
    return live.first_token_at + static_cast<TimeNs>(token_index - 1) * decode_interval_ns_;
  }
  // Accounts busy time up to `now` (time only moves forward).
  void moveTo(TimeNs now);

  GpuProfile profile_;
  TimeNs decode_interval_ns_;
  std::vector<Live> live_;  // insertion order, so events come out in submit order
  TimeNs last_now_ = 0;
  bool started_ = false;
  double busy_seconds_ = 0;
  int64_t tokens_held_ = 0;
};

}  // namespace switchyard::engine
