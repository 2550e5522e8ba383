#include "fleet/replica_state.h"

#include <utility>

namespace switchyard::fleet {

void ReplicaState::storeSignals(const EngineSignals& signals, TimeNs read_at) {
  engine_running_.store(signals.running, std::memory_order_relaxed);
  engine_waiting_.store(signals.waiting, std::memory_order_relaxed);
  kv_usage_.store(signals.kv_usage, std::memory_order_relaxed);
  cpu_kv_usage_.store(signals.cpu_kv_usage, std::memory_order_relaxed);
  if (signals.hasKvCapacity()) {
    kv_capacity_tokens_.store(signals.kv_capacity_tokens, std::memory_order_relaxed);
  }
  signals_read_at_.store(read_at, std::memory_order_relaxed);
  signals_valid_.store(true, std::memory_order_release);
}

void ReplicaState::markScrapeFailed(TimeNs at) {
  // A failed scrape makes the signal unknown at once: the replica must not keep looking as
  // idle as it did on its last good read.
  signals_valid_.store(false, std::memory_order_release);
  scrape_failed_at_.store(at, std::memory_order_relaxed);
}

std::string_view lifecycleName(uint8_t flags) {
  if (flags & kDrainingFlags) return "draining";
  if (flags & kNotReady) return "not_ready";
  return "active";
}

void appendLifecycleReasons(std::string& out, uint8_t flags) {
  static constexpr std::pair<LifecycleFlag, std::string_view> kNames[] = {
      {kNotReady, "not_ready"},
      {kTerminating, "terminating"},
      {kDrainLabel, "drain_label"},
      {kDrainRequested, "drain_requested"},
  };
  out.push_back('[');
  bool first = true;
  for (const auto& [flag, name] : kNames) {
    if (!(flags & flag)) continue;
    if (!first) out.push_back(',');
    first = false;
    out.push_back('"');
    out.append(name);
    out.push_back('"');
  }
  out.push_back(']');
}

}  // namespace switchyard::fleet
