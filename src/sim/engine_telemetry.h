// What a gateway's telemetry scrape of a simulated replica reads: the engine's load, mapped to
// EngineSignals exactly as parseEngineSignals maps the emulator's /metrics (both go through
// engine::exportedGauges; a unit test checks the round trip for both flavors). The emulator
// exports no CPU KV-cache gauge, so that signal is unknown.
#pragma once

#include "engine/engine_model.h"
#include "fleet/engine_signals.h"

namespace switchyard::sim {

inline fleet::EngineSignals engineSignalsOf(const engine::EngineLoad& load) {
  const engine::ExportedGauges gauges = engine::exportedGauges(load);
  fleet::EngineSignals s;
  s.running = gauges.running;
  s.waiting = gauges.waiting;
  s.kv_usage = gauges.kv_usage;
  return s;
}

}  // namespace switchyard::sim
