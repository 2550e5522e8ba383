// What a gateway's telemetry scrape of a simulated replica reads: the engine's gauges, mapped to
// EngineSignals exactly as parseEngineSignals maps the emulator's /metrics (both go through
// engine::exportedGauges, which BatchingModel::gauges() equals; unit tests check the round trip
// for both flavors and the equality). The emulator exports no CPU KV-cache gauge, so that
// signal is unknown.
#pragma once

#include "engine/engine_model.h"
#include "fleet/engine_signals.h"

namespace switchyard::sim {

inline fleet::EngineSignals engineSignalsOf(const engine::ExportedGauges& gauges) {
  fleet::EngineSignals s;
  s.running = gauges.running;
  s.waiting = gauges.waiting;
  s.kv_usage = gauges.kv_usage;
  return s;
}

inline fleet::EngineSignals engineSignalsOf(const engine::EngineLoad& load) {
  return engineSignalsOf(engine::exportedGauges(load));
}

}  // namespace switchyard::sim
