// The wire form of scraped engine signals shared among gateways (gateway/telemetry_share.h):
// one line per scrape, in text so that redis-cli shows it.
//
//   NAME RUNNING WAITING KV_USAGE CPU_KV_USAGE AGE_MS\n     a successful scrape
//   NAME ! AGE_MS\n                                         a failed one
//   NAME # KV_CAPACITY_TOKENS\n                             the KV cache size the engine reports
//
// A capacity line is static while the engine runs, so it is not part of every scrape's line: the
// scraping gateway sends it just before a successful scrape's line when it is new, changed, or
// last sent long ago, and readers apply it with that line. (Gateways that predate it count it as
// malformed and skip it; nothing else changes for them.)
// Unknown values are "-". AGE_MS is how long before the batch was appended the replica was
// read. A batch comes from another process: every malformed line is skipped and counted, never
// fatal; values outside their domain become unknown, as parseEngineSignals does.
// Pure, no allocation (appendSignalRecord grows the caller's buffer). Fuzzed by
// tests/fuzz/signal_batch_fuzz.cc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fleet/engine_signals.h"

namespace switchyard::fleet {

struct SignalRecord {
  std::string_view replica;
  bool ok = false;
  // A capacity line: only signals.kv_capacity_tokens is set (finite, >= 1); ok is false, age 0.
  bool capacity_only = false;
  EngineSignals signals;  // all unknown when !ok, but for a capacity line's capacity
  int64_t age_ms = 0;
};

void appendSignalRecord(std::string& out, std::string_view replica, bool ok,
                        const EngineSignals& signals, int64_t age_ms);
// `kv_capacity_tokens` must be positive and finite (EngineSignals::hasKvCapacity).
void appendCapacityRecord(std::string& out, std::string_view replica, double kv_capacity_tokens);

namespace internal {
bool parseSignalRecord(std::string_view line, SignalRecord& out);
}  // namespace internal

// Calls on_record(const SignalRecord&) for every well-formed line; returns the malformed count.
template <typename OnRecord>
int forEachSignalRecord(std::string_view payload, OnRecord&& on_record) {
  int malformed = 0;
  while (!payload.empty()) {
    const size_t end = payload.find('\n');
    const std::string_view line = payload.substr(0, end);
    payload = end == std::string_view::npos ? std::string_view{} : payload.substr(end + 1);
    if (line.empty()) continue;
    SignalRecord record;
    if (internal::parseSignalRecord(line, record)) {
      on_record(record);
    } else {
      ++malformed;
    }
  }
  return malformed;
}

}  // namespace switchyard::fleet
