#include "fleet/engine_signals.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "fleet/metrics_target.h"
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

// The families the gateway reads. Everything else on a /metrics page (histogram buckets are most
// of it) is skipped after a look at its name, without parsing labels or values.
enum class Family : uint8_t {
  kNone,
  kRunning,
  kWaiting,
  kKvNew,
  kKvOld,
  kKvCpu,
  kSgRunning,
  kSgWaiting,
  kSgKv,
  kCacheConfig,
  kSgMaxTokens
};

Family familyOf(std::string_view name) {
  switch (name.size()) {
    case 25:
      if (name == "vllm:num_requests_running") return Family::kRunning;
      if (name == "vllm:num_requests_waiting") return Family::kWaiting;
      if (name == "vllm:gpu_cache_usage_perc") return Family::kKvOld;
      if (name == "vllm:cpu_cache_usage_perc") return Family::kKvCpu;
      return Family::kNone;
    case 24: return name == "vllm:kv_cache_usage_perc" ? Family::kKvNew : Family::kNone;
    case 23: return name == "sglang:num_running_reqs" ? Family::kSgRunning : Family::kNone;
    case 22: return name == "vllm:cache_config_info" ? Family::kCacheConfig : Family::kNone;
    case 27: return name == "sglang:max_total_num_tokens" ? Family::kSgMaxTokens : Family::kNone;
    case 21: return name == "sglang:num_queue_reqs" ? Family::kSgWaiting : Family::kNone;
    case 18: return name == "sglang:token_usage" ? Family::kSgKv : Family::kNone;
    default: return Family::kNone;
  }
}

// The read family a sample line starts with, from a look at the byte after each length a read
// family's name has: most lines of a page (histogram buckets, other families) are dismissed
// without scanning their names. A prefix equal to a read name is all name characters, so a
// separator right after it means the line's name is exactly that. A line with leading blanks
// is rare enough to take the full parse.
Family familyOfLine(std::string_view line) {
  static constexpr size_t kNameLengths[] = {18, 21, 22, 23, 24, 25, 27};  // familyOf's cases
  for (const size_t length : kNameLengths) {
    if (line.size() <= length) break;
    const char next = line[length];
    if (next != '{' && next != ' ' && next != '\t') continue;
    const Family family = familyOf(line.substr(0, length));
    if (family != Family::kNone) return family;
  }
  return Family::kNone;
}

// The raw value of label `key` in a Prometheus label block (`a="1",b="x\"y"`): escapes are
// skipped over, not decoded (the values read here are numbers); empty when absent or malformed.
std::string_view labelValue(std::string_view labels, std::string_view key) {
  size_t at = 0;
  while (at < labels.size()) {
    const size_t eq = labels.find('=', at);
    if (eq == std::string_view::npos || eq + 1 >= labels.size() || labels[eq + 1] != '"') break;
    size_t close = eq + 2;
    while (close < labels.size() && labels[close] != '"') close += labels[close] == '\\' ? 2 : 1;
    if (close >= labels.size()) break;
    std::string_view name = labels.substr(at, eq - at);
    while (!name.empty() && (name.front() == ' ' || name.front() == ',')) name.remove_prefix(1);
    if (name == key) return labels.substr(eq + 2, close - eq - 2);
    at = close + 1;
  }
  return {};
}

// A positive integer label value, else NaN ("None" before the engine has profiled its memory).
double positiveInteger(std::string_view text) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v <= 0) {
    return EngineSignals::kUnknown;
  }
  return static_cast<double>(v);
}

// vllm:cache_config_info's KV cache size in tokens, NaN when its labels do not say.
double cacheConfigTokens(std::string_view labels) {
  const double blocks = positiveInteger(labelValue(labels, "num_gpu_blocks"));
  const std::string_view size_text = labelValue(labels, "block_size");
  const double block_size = size_text.empty() ? 16 : positiveInteger(size_text);
  return blocks * block_size;  // NaN propagates
}

}  // namespace

EngineSignals parseEngineSignals(std::string_view prometheus_text) {
  Accumulator running, waiting, kv_new, kv_old, kv_cpu, sg_running, sg_waiting, sg_kv;
  double kv_tokens = EngineSignals::kUnknown, sg_kv_tokens = EngineSignals::kUnknown;
  std::string_view text = prometheus_text;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    // Every family we read carries an engine prefix: "vllm:" or "sglang:".
    if (line.size() < 18 || (line[0] != 'v' && line[0] != 's' && line[0] != ' ' &&
                             line[0] != '\t')) {
      continue;
    }
    Family family = familyOfLine(line);
    PrometheusSample s;
    bool malformed = false;
    if (line[0] == ' ' || line[0] == '\t') {
      if (!internal::parsePrometheusLine(line, s, malformed)) continue;
      family = familyOf(s.name);
      if (family == Family::kNone) continue;
    } else {
      if (family == Family::kNone) continue;
      if (!internal::parsePrometheusLine(line, s, malformed)) continue;
    }
    switch (family) {
      case Family::kRunning: running.addCount(s.value); break;
      case Family::kWaiting: waiting.addCount(s.value); break;
      case Family::kKvNew: kv_new.addFraction(s.value); break;
      case Family::kKvOld: kv_old.addFraction(s.value); break;
      case Family::kKvCpu: kv_cpu.addFraction(s.value); break;
      case Family::kSgRunning: sg_running.addCount(s.value); break;
      case Family::kSgWaiting: sg_waiting.addCount(s.value); break;
      case Family::kSgKv: sg_kv.addFraction(s.value); break;
      case Family::kCacheConfig: kv_tokens = cacheConfigTokens(s.labels); break;
      case Family::kSgMaxTokens:
        sg_kv_tokens = std::isfinite(s.value) && s.value >= 1 ? s.value : EngineSignals::kUnknown;
        break;
      case Family::kNone: break;
    }
  }

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
  out.kv_capacity_tokens = std::isnan(kv_tokens) ? sg_kv_tokens : kv_tokens;
  return out;
}

std::string_view engineMetricsTarget(bool family_filter) {
  // Every name familyOf() recognises; "[" ":" are percent-encoded ("%5B%5D", "%3A").
  static constexpr std::string_view kFiltered =
      "/metrics"
      "?name%5B%5D=vllm%3Anum_requests_running&name%5B%5D=vllm%3Anum_requests_waiting"
      "&name%5B%5D=vllm%3Akv_cache_usage_perc&name%5B%5D=vllm%3Agpu_cache_usage_perc"
      "&name%5B%5D=vllm%3Acpu_cache_usage_perc&name%5B%5D=vllm%3Acache_config_info"
      "&name%5B%5D=sglang%3Anum_running_reqs&name%5B%5D=sglang%3Anum_queue_reqs"
      "&name%5B%5D=sglang%3Atoken_usage&name%5B%5D=sglang%3Amax_total_num_tokens";
  return family_filter ? kFiltered : std::string_view("/metrics");
}

}  // namespace switchyard::fleet
