#include "fleet/engine_signals.h"

#include <algorithm>
#include <cmath>

#include "fleet/prometheus_text.h"

namespace switchyard::fleet {
namespace {

// Accumulates one signal over all label sets of its metric. A single out-of-domain sample
// poisons the whole signal: summing the remaining label sets would under-report load, and a
// replica that looks idler than it is attracts traffic it cannot serve.
struct Accumulator {
  bool seen = false;
  bool poisoned = false;
  double value = 0;

  void addCount(double v) {
    seen = true;
    if (!std::isfinite(v) || v < 0) {
      poisoned = true;
      return;
    }
    value += v;
  }
  void addFraction(double v) {
    if (!std::isfinite(v) || v < 0 || v > 1) {
      seen = true;
      poisoned = true;
      return;
    }
    value = seen ? std::max(value, v) : v;
    seen = true;
  }
  bool valid() const { return seen && !poisoned; }
  double result() const { return valid() ? value : EngineSignals::kUnknown; }
};

}  // namespace

EngineSignals parseEngineSignals(std::string_view prometheus_text) {
  Accumulator running, waiting, kv_new, kv_old, kv_cpu, sg_running, sg_waiting, sg_kv;
  forEachPrometheusSample(prometheus_text, [&](const PrometheusSample& s) {
    // Cheap reject: every name we want carries an engine prefix ending in ':'.
    if (s.name.size() < 7) return;
    if (s.name == "vllm:num_requests_running") {
      running.addCount(s.value);
    } else if (s.name == "vllm:num_requests_waiting") {
      waiting.addCount(s.value);
    } else if (s.name == "vllm:kv_cache_usage_perc") {
      kv_new.addFraction(s.value);
    } else if (s.name == "vllm:gpu_cache_usage_perc") {
      kv_old.addFraction(s.value);
    } else if (s.name == "vllm:cpu_cache_usage_perc") {
      kv_cpu.addFraction(s.value);
    } else if (s.name == "sglang:num_running_reqs") {
      sg_running.addCount(s.value);
    } else if (s.name == "sglang:num_queue_reqs") {
      sg_waiting.addCount(s.value);
    } else if (s.name == "sglang:token_usage") {
      sg_kv.addFraction(s.value);
    }
  });

  // vLLM and SGLang names never appear together in practice; if they do, vLLM's win.
  auto pick = [](const Accumulator& a, const Accumulator& b) {
    return a.valid() ? a.result() : b.result();
  };
  EngineSignals out;
  out.running = pick(running, sg_running);
  out.waiting = pick(waiting, sg_waiting);
  // Versions in transition export both KV names for the same quantity: the newer name wins
  // wherever it appears in the text, the older one is a fallback.
  out.kv_usage = kv_new.valid() ? kv_new.result() : pick(kv_old, sg_kv);
  out.cpu_kv_usage = kv_cpu.result();
  return out;
}

}  // namespace switchyard::fleet
