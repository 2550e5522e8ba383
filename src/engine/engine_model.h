// EngineModel: the pure timing core of an emulated inference engine.
//
// The HTTP emulator (`switchyard engine`) and, later, the fleet simulator drive the same model:
// requests are submitted, time is advanced explicitly, and the model reports which tokens were
// produced. It knows nothing about sockets or clocks: `now` is always passed in (nanoseconds on
// any monotonic timeline chosen by the driver). Single-threaded: one driver owns one model.
// Drivers call advance(now) before submit(…, now) so the model's timeline is current.
#pragma once

#include <cstdint>
#include <vector>

namespace switchyard::engine {

using RequestId = uint64_t;
using TimeNs = int64_t;

struct ModelRequest {
  RequestId id = 0;
  int prompt_tokens = 0;
  int max_tokens = 0;  // output tokens to generate (the emulator always generates exactly this)
  // Chained hash of each full KV block of the prompt (block i's hash covers blocks 0..i), for
  // prefix caching; empty: nothing to share. Computed by the driver from the prompt text.
  std::vector<uint64_t> block_hashes;
};

// Something observable that happened while time advanced, with the request's timings so the
// driver can fill latency histograms without tracking requests itself.
struct TokenEvent {
  RequestId id = 0;
  int tokens = 0;              // output tokens produced for this request in this step (>= 1)
  bool finished = false;       // the request produced its last token
  TimeNs time = 0;             // when the tokens were produced (model time)
  TimeNs arrival = 0;          // when the request was submitted
  TimeNs first_scheduled = 0;  // when it first entered the running batch
  TimeNs previous_token = -1;  // this request's previous token; -1: these are its first tokens
};

// Snapshot of the engine's state for its /metrics endpoint.
struct EngineLoad {
  int running = 0;
  int waiting = 0;
  double kv_usage = 0;  // 0..1
  int64_t preemptions_total = 0;
  double busy_seconds_total = 0;  // time with a non-empty batch
  int64_t generated_tokens_total = 0;  // output tokens sampled (discarded preempted work too)
  int64_t kv_capacity_tokens = 0;
  int kv_block_size = 16;  // tokens per KV-cache block
  int64_t prefix_cache_queries_total = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_cache_hits_total = 0;     // of which found cached
  // Work given up: requests cancelled before they finished (their client left), the time those
  // that had started spent in the running batch, and the tokens computed for them. What the
  // gateway's admission is judged by: GPU time spent on answers nobody read.
  int64_t aborted_requests_total = 0;
  double aborted_running_seconds_total = 0;
  int64_t aborted_computed_tokens_total = 0;
};

// The load gauges an engine's /metrics exports (renderMetrics writes exactly these, under the
// flavor's names), and what the fleet simulator hands to routing in place of a scrape: one mapping
// for both drivers.
struct ExportedGauges {
  double running = 0;
  double waiting = 0;
  double kv_usage = 0;  // 0..1
};
inline ExportedGauges exportedGauges(const EngineLoad& load) {
  return {static_cast<double>(load.running), static_cast<double>(load.waiting), load.kv_usage};
}

}  // namespace switchyard::engine

namespace switchyard::fleet::kv_index {
struct KvEvent;  // fleet/kv_index/kv_event_decoder.h
}  // namespace switchyard::fleet::kv_index

namespace switchyard::engine {

class EngineModel {
 public:
  virtual ~EngineModel() = default;

  // Precondition: prompt_tokens + max_tokens <= load().kv_capacity_tokens (drivers reject
  // larger requests, as vLLM does).
  virtual void submit(const ModelRequest& request, TimeNs now) = 0;
  // Removes a request (the client went away). Unknown ids are ignored.
  virtual void cancel(RequestId id, TimeNs now) = 0;
  // Advances the model to `now`, appending what happened to `events`.
  virtual void advance(TimeNs now, std::vector<TokenEvent>& events) = 0;
  // The next time at which advance() would produce an event; -1 when idle.
  virtual TimeNs nextEventTime() const = 0;
  virtual EngineLoad load() const = 0;
  // A degraded GPU: every step from now on takes `factor` (>= 1 slows down) times as long.
  virtual void setSlowdown(double factor) = 0;
  // Cost of a prefill-only pass over `tokens` outside the batch (embeddings).
  virtual TimeNs prefillOnlyNs(int tokens) const = 0;
  // KV-cache events (vLLM's BlockStored / BlockRemoved with the model's block hashes), recorded
  // once enabled and moved into `out` by takeKvEvents(). A model without a prefix cache has none.
  virtual void enableKvEvents() {}
  virtual void takeKvEvents(std::vector<fleet::kv_index::KvEvent>& out) { (void)out; }
};

}  // namespace switchyard::engine
