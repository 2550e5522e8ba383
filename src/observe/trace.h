// Tracing: W3C trace context and fixed-size span records queued per worker.
//
// A worker fills SpanRecords (plain data, no allocation) and pushes them into its own SpanQueue,
// a bounded single-producer single-consumer ring; the control thread's OtlpExporter pops them.
// A full queue drops the span (counted), so a slow or absent collector never slows requests.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace switchyard::observe {

struct TraceId {
  std::array<uint8_t, 16> bytes{};
  bool valid() const;
};

// Parsed `traceparent`: version 00 form "00-<32 hex>-<16 hex>-<2 hex>"; other versions are read
// by the same prefix, as the spec asks. Invalid (all-zero ids, bad hex) returns false.
struct TraceParent {
  TraceId trace_id;
  uint64_t parent_span_id = 0;
  bool sampled = false;
};
bool parseTraceParent(std::string_view text, TraceParent& out);
// Writes "00-<trace>-<span>-0X" (55 chars) into `out`.
void formatTraceParent(char (&out)[56], const TraceId& trace, uint64_t span_id, bool sampled);
void appendHex(std::string& out, const uint8_t* bytes, size_t n);
void appendHex64(std::string& out, uint64_t v);

enum class SpanKind : uint8_t { kRequest, kSelect, kInference };

struct SpanRecord {
  TraceId trace_id;
  uint64_t span_id = 0;
  uint64_t parent_span_id = 0;  // 0: root
  SpanKind kind = SpanKind::kRequest;
  bool error = false;
  uint16_t status = 0;            // HTTP status answered (request) or received (inference)
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  uint32_t model_slot = UINT32_MAX;
  uint32_t replica_slot = UINT32_MAX;  // selected / called replica
  uint32_t candidates = 0;        // select: replicas that passed the filters
  uint32_t ready = 0;             // select: replicas of the model
  int64_t routing_ns = 0;         // select
  int64_t first_chunk_ns = -1;    // inference: from the call to the first chunk
  int64_t streaming_ns = -1;      // inference: from the first to the last chunk
  int64_t input_tokens = -1;
  int64_t output_tokens = -1;
  uint8_t client_cancelled = 0;   // request: CancelStage when the client left early
  char strategy[64] = {};
  char request_id[40] = {};
  char key_name[65] = {};  // request span: the API key's name ("" none); never the key
};

// Bounded SPSC ring: push() from the owning worker only, pop() from the control thread only.
class SpanQueue {
 public:
  explicit SpanQueue(size_t capacity) : slots_(capacity) {}
  bool push(const SpanRecord& span) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) >= slots_.size()) return false;
    slots_[tail % slots_.size()] = span;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  bool pop(SpanRecord& out) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return false;
    out = slots_[head % slots_.size()];
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

 private:
  std::vector<SpanRecord> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace switchyard::observe
