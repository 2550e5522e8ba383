// Completion accounting: what one finished response teaches the replica's counters (tokens
// served, time per token and the load it was produced at, prefill speed, tokenless latency).
// These counters are the capacity estimator's inputs (fleet/capacity_estimator.h).
//
// Pure apart from the relaxed atomic adds: no clock, no I/O. Called by the live request path
// once per response and by the fleet simulator with the same facts, so both learn alike.
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "fleet/replica_state.h"

namespace switchyard::fleet {

// What the gateway saw of one response.
struct CompletedResponse {
  unsigned status = 0;
  int64_t prompt_tokens = 0;  // from usage, else the request's estimate; 0 unknown
  int64_t output_tokens = 0;  // from usage; 0 for tokenless work (embeddings)
  bool event_stream = false;  // streamed: the first byte marks the end of prefill
  TimeNs started = 0;
  TimeNs first_byte_at = -1;  // -1 when no byte came
  TimeNs finished = 0;
  // Requests in flight on the replica across gateways when the response started and ended.
  int64_t streams_at_start = 0;
  int64_t streams_at_end = 0;
  // Tokenless work only: the units it asked for (1 per request for embeddings, per document for
  // rerank, per image, per KiB of audio: api::workUnits); 0 teaches nothing about speed.
  int64_t work_units = 1;
};

// Adds a successful (200) response to the counters; anything else says nothing about speed.
void accountCompletion(ReplicaCounters& counters, const CompletedResponse& response);

}  // namespace switchyard::fleet
