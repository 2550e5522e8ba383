// Fault injection for the emulated engine: what to break, as set by `--faults JSON` at start-up
// or at run time by `POST /admin/faults` (the same JSON; `{}` clears every fault). Parsing and
// rendering only: engine_server.cc applies the faults, drawing from its seeded random source.
#pragma once

#include <cstdint>
#include <string>

#include "engine/openai_emulation.h"

namespace switchyard::engine {

struct FaultConfig {
  // Generation and embedding requests only (/health, /metrics and /admin are not affected).
  double error_rate = 0;  // probability of answering with error_status instead
  int error_status = 503;
  double reset = 0;             // probability of a TCP reset instead of any response
  double hang = 0;              // probability of reading the request and never answering
  int stall_mid_stream_ms = 0;  // streams pause this long after stall_after_tokens tokens
  int stall_after_tokens = 1;
  double truncate_stream = 0;         // probability a stream is closed after truncate_after_tokens
  int truncate_after_tokens = 1;      //   tokens, without finish chunk, [DONE] or the last chunk
  double slowdown = 1;                // every engine step takes this factor longer (degraded GPU)
  int64_t crash_after_requests = -1;  // >= 0: the process exits (status 3) on request N + 1
  // Telemetry.
  bool metrics_missing = false;  // /metrics answers 404
  bool metrics_stale = false;    // /metrics repeats the values of the moment this was set
  bool metrics_nan_kv = false;   // KV usage reported as NaN

  bool operator==(const FaultConfig&) const = default;
};

// A JSON object with any of the keys above (probabilities also accept true/false; "hang" may be
// spelled "hang_before_first_byte"). Unknown keys and out-of-range values are errors.
Parsed<FaultConfig> parseFaults(std::string_view json);
std::string renderFaults(const FaultConfig& faults);

}  // namespace switchyard::engine
