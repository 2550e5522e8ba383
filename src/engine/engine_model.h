// EngineModel: the pure timing core of an emulated inference engine.
//
// The HTTP emulator (`switchyard engine`) and, later, the fleet simulator drive the same model:
// requests are submitted, time is advanced explicitly, and the model reports which tokens were
// produced. It knows nothing about sockets or clocks: `now` is always passed in (nanoseconds on
// any monotonic timeline chosen by the driver). Single-threaded: one driver owns one model.
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
};

// Something observable that happened while time advanced.
struct TokenEvent {
  RequestId id = 0;
  int tokens = 0;         // output tokens produced for this request in this step (>= 1)
  bool finished = false;  // the request produced its last token
};

// Snapshot of the engine's state for its /metrics endpoint.
struct EngineLoad {
  int running = 0;
  int waiting = 0;
  double kv_usage = 0;  // 0..1
  int64_t preemptions_total = 0;
  double busy_seconds_total = 0;  // time with a non-empty batch
};

class EngineModel {
 public:
  virtual ~EngineModel() = default;

  virtual void submit(const ModelRequest& request, TimeNs now) = 0;
  // Removes a request (the client went away). Unknown ids are ignored.
  virtual void cancel(RequestId id, TimeNs now) = 0;
  // Advances the model to `now`, appending what happened to `events`.
  virtual void advance(TimeNs now, std::vector<TokenEvent>& events) = 0;
  // The next time at which advance() would produce an event; -1 when idle.
  virtual TimeNs nextEventTime() const = 0;
  virtual EngineLoad load() const = 0;
};

}  // namespace switchyard::engine
