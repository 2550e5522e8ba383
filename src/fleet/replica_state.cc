#include "fleet/replica_state.h"

namespace switchyard::fleet {

void ReplicaState::storeSignals(const EngineSignals& signals, TimeNs read_at) {
  engine_running_.store(signals.running, std::memory_order_relaxed);
  engine_waiting_.store(signals.waiting, std::memory_order_relaxed);
  kv_usage_.store(signals.kv_usage, std::memory_order_relaxed);
  cpu_kv_usage_.store(signals.cpu_kv_usage, std::memory_order_relaxed);
  signals_read_at_.store(read_at, std::memory_order_relaxed);
  signals_valid_.store(true, std::memory_order_release);
}

void ReplicaState::markScrapeFailed(TimeNs at) {
  // A failed scrape makes the signal unknown at once: the replica must not keep looking as
  // idle as it did on its last good read.
  signals_valid_.store(false, std::memory_order_release);
  scrape_failed_at_.store(at, std::memory_order_relaxed);
}

EngineSignals ReplicaState::signals(TimeNs now, TimeNs max_age, TimeNs* age, bool* fresh) const {
  const bool valid = signals_valid_.load(std::memory_order_acquire);
  const TimeNs read_at = signals_read_at_.load(std::memory_order_relaxed);
  if (age) *age = read_at < 0 ? -1 : now - read_at;
  const bool usable = valid && read_at >= 0 && now - read_at <= max_age;
  if (fresh) *fresh = usable;
  if (!usable) return EngineSignals{};
  EngineSignals out;
  out.running = engine_running_.load(std::memory_order_relaxed);
  out.waiting = engine_waiting_.load(std::memory_order_relaxed);
  out.kv_usage = kv_usage_.load(std::memory_order_relaxed);
  out.cpu_kv_usage = cpu_kv_usage_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace switchyard::fleet
