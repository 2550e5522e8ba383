// Fuzz target: the optimizer's load inputs — the --once load file, a gateway's load interval
// (Switchyard's layout, one or a list), and AIBrix's request trace. Whatever parses feeds the
// load window and, for small inputs, one solve: nothing may crash or loop.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "observe/load_interval.h"
#include "optimizer/load_json.h"
#include "optimizer/load_window.h"

namespace {
void check(bool condition) {
  if (!condition) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  if (auto load = optimizer::parseLoadJson(text, &error)) {
    for (const auto& c : load->cells) check(c.rps >= 0 && c.prompt_tokens >= 1);
  }
  std::vector<observe::LoadInterval> intervals;
  if (auto one = observe::parseLoadIntervalJson(text, &error)) {
    check(observe::parseLoadIntervalJson(observe::loadIntervalJson(*one), &error).has_value());
    intervals.push_back(*one);
  }
  if (auto many = observe::parseLoadIntervalsJson(text, &error)) {
    intervals.insert(intervals.end(), many->begin(), many->end());
  }
  if (auto trace = observe::parseAibrixTrace(text, "m", 10, &error)) {
    check(observe::parseAibrixTrace(observe::aibrixTraceJson(*trace), "m", 10, &error).has_value());
    intervals.push_back(*trace);
  }
  for (const auto& cell : optimizer::planLoad(intervals, 240)) {
    check(std::isfinite(cell.cell.rps) && cell.cell.rps >= 0);
  }
  return 0;
}
