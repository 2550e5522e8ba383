// Fuzz target: the Prometheus text parser and the engine-signal mapping on arbitrary bytes.
// Checks that every reported sample's views lie inside the input and that the mapping keeps
// its domain promises.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/engine_signals.h"
#include "fleet/prometheus_text.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::fleet;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  forEachPrometheusSample(text, [&](const PrometheusSample& s) {
    check(!s.name.empty());
    check(inside(s.name, text));
    check(inside(s.labels, text));
  });
  EngineSignals signals = parseEngineSignals(text);
  check(!signals.hasRunning() || (std::isfinite(signals.running) && signals.running >= 0));
  check(!signals.hasWaiting() || (std::isfinite(signals.waiting) && signals.waiting >= 0));
  check(!signals.hasKvUsage() || (signals.kv_usage >= 0 && signals.kv_usage <= 1));
  check(!signals.hasKvCapacity() ||
        (std::isfinite(signals.kv_capacity_tokens) && signals.kv_capacity_tokens >= 1));
  return 0;
}
