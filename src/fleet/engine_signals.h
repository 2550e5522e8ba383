// EngineSignals: one replica's engine-reported load, mapped from vLLM or SGLang metric names.
//
// Produced by the telemetry scraper on the control thread from a replica's /metrics text.
// A field that the engine did not report is NaN ("unknown"), never zero: a missing signal must
// not make a replica look idle. Cheap to copy; no allocation.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace switchyard::fleet {

struct EngineSignals {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

  double running = kUnknown;   // requests in the engine's running batch
  double waiting = kUnknown;   // requests queued inside the engine
  double kv_usage = kUnknown;  // fraction of KV cache in use, 0..1
  double cpu_kv_usage = kUnknown;  // fraction of the CPU (swap) KV cache in use, when exported
  // The GPU KV cache's size in tokens: vLLM's cache_config_info num_gpu_blocks × block_size, or
  // SGLang's max_total_num_tokens. Static for a running engine.
  double kv_capacity_tokens = kUnknown;

  bool hasRunning() const { return !std::isnan(running); }
  bool hasWaiting() const { return !std::isnan(waiting); }
  bool hasKvUsage() const { return !std::isnan(kv_usage); }
  bool hasCpuKvUsage() const { return !std::isnan(cpu_kv_usage); }
  bool hasKvCapacity() const { return !std::isnan(kv_capacity_tokens); }
};

// Maps the Prometheus text exposition of a vLLM or SGLang engine to EngineSignals. Only lines
// whose metric name is one of the names below are parsed; the rest are skipped by name, so the
// cost is one pass over the bytes plus a full parse of a handful of lines. No allocation.
// Recognised names: vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc (preferred) or the older vllm:gpu_cache_usage_perc,
// vllm:cpu_cache_usage_perc, vllm:cache_config_info (labels num_gpu_blocks and block_size, default
// 16; a positive integer count of blocks, else unknown);
// sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage, sglang:max_total_num_tokens.
// When a metric has several label sets (e.g. one per model_name) the values are summed for
// counts, and the maximum is taken for KV usage. Values outside their domain (negative counts,
// KV usage outside [0,1], NaN, Inf) are treated as unknown. Never throws; malformed lines are
// skipped.
EngineSignals parseEngineSignals(std::string_view prometheus_text);

}  // namespace switchyard::fleet
