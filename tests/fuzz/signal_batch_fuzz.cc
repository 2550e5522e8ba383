// Fuzz target: the shared signal batch parser on arbitrary bytes. Checks that names lie inside
// the input and that values keep their domain promises.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fleet/signal_batch.h"

namespace {
void check(bool condition) {
  if (!condition) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::fleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  forEachSignalRecord(text, [&](const SignalRecord& r) {
    check(!r.replica.empty());
    check(r.replica.data() >= text.data() &&
          r.replica.data() + r.replica.size() <= text.data() + text.size());
    check(r.age_ms >= 0);
    const EngineSignals& s = r.signals;
    check(!s.hasRunning() || (std::isfinite(s.running) && s.running >= 0));
    check(!s.hasWaiting() || (std::isfinite(s.waiting) && s.waiting >= 0));
    check(!s.hasKvUsage() || (s.kv_usage >= 0 && s.kv_usage <= 1));
    check(r.ok || !s.hasRunning());
    check(!r.capacity_only || (!r.ok && std::isfinite(s.kv_capacity_tokens) &&
                               s.kv_capacity_tokens >= 1));
    check(r.capacity_only || !s.hasKvCapacity());
  });
  return 0;
}
