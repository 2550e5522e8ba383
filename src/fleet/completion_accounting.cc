#include "fleet/completion_accounting.h"

namespace switchyard::fleet {

void accountCompletion(ReplicaCounters& counters, const CompletedResponse& r) {
  if (r.status != 200) return;  // only successful work says something about speed
  const int64_t output = r.output_tokens;
  const int64_t prompt = r.prompt_tokens;
  if (prompt > 0) counters.input_tokens_total.fetch_add(prompt, std::memory_order_relaxed);
  if (output > 0) {
    counters.output_tokens_total.fetch_add(output, std::memory_order_relaxed);
    // Time per token: after the first byte for streams (decode only), whole latency otherwise.
    const bool decode_only = r.event_stream && r.first_byte_at > r.started;
    const int64_t timed = decode_only ? output - 1 : output;
    if (timed > 0) {
      counters.token_time_ns_total.fetch_add(r.finished - (decode_only ? r.first_byte_at
                                                                       : r.started),
                                             std::memory_order_relaxed);
      counters.timed_tokens_total.fetch_add(timed, std::memory_order_relaxed);
      counters.token_concurrency_total.fetch_add(timed * (r.streams_at_start + r.streams_at_end),
                                                 std::memory_order_relaxed);
    }
  } else if (r.work_units > 0) {
    // Embeddings and other tokenless work: capacity is learned as inverse latency, in units of
    // work (a rerank of ten documents counts ten) per second of request latency.
    counters.tokenless_requests_total.fetch_add(r.work_units, std::memory_order_relaxed);
    counters.tokenless_latency_ns_total.fetch_add(r.finished - r.started,
                                                  std::memory_order_relaxed);
  }
  // A stream's first byte marks the end of prefill (and of any queueing before it).
  if (r.event_stream && prompt > 0 && r.first_byte_at > r.started) {
    counters.prefill_tokens_total.fetch_add(prompt, std::memory_order_relaxed);
    counters.prefill_ns_total.fetch_add(r.first_byte_at - r.started, std::memory_order_relaxed);
  }
}

}  // namespace switchyard::fleet
