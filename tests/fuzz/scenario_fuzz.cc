// Fuzz target: the scenario parser on arbitrary bytes. A scenario either parses into something
// consistent or is refused with a ConfigError that names where (file:line or file: key); nothing
// else may escape, and nothing may crash.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/scenario.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const sim::Scenario s = sim::parseScenario(text, "fuzz.yaml");
    check(!s.fleet.empty() && !s.strategies.empty());
    check(s.replicaCount() > 0);
    check(s.warmup < s.duration);
    for (const sim::RequestClass& c : s.workload.mix) {
      check(c.prompt.min <= c.prompt.max && c.output.min <= c.output.max);
    }
  } catch (const ConfigError& e) {
    check(std::string(e.what()).rfind("fuzz.yaml", 0) == 0);
  }
  return 0;
}
