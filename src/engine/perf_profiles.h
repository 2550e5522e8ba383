// Performance profiles of the emulated engine: GPU spec-sheet figures, model shapes and engine
// tuning, read from YAML (data/profiles.yaml is compiled in; `--profiles FILE` replaces it), and
// the derived figures one BatchingModel runs on (PerfConfig).
//
// Start-up code only: loading and deriving throw std::invalid_argument with a message meant for
// the operator (unknown GPU, malformed file, a model that does not fit on the GPU).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_model.h"

namespace YAML {
class Node;
}

namespace switchyard::engine {

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  double memory_gb = 0;       // GB = 1e9 bytes, as datasheets count
  double bandwidth_gbps = 0;  // GB/s
  double tflops = 0;          // dense FP16/BF16 tensor-core TFLOPS
  std::string source;
  // Optional per-GPU overrides of the engine's efficiencies (0: the engine: value), with where
  // the override comes from (a published measurement it was fitted to).
  double compute_efficiency = 0;
  double bandwidth_efficiency = 0;
  std::string calibration;  // empty: roofline-derived from the datasheet only
};

struct ModelSpec {
  std::string name;
  std::vector<std::string> aliases;
  double params = 0;
  int layers = 0;
  int hidden_size = 0;
  int heads = 0;
  int kv_heads = 0;
  double bytes_per_param = 2;
  std::string source;

  int headDim() const { return hidden_size / heads; }
  // K and V, every layer, every KV head: 2 * layers * kv_heads * head_dim * bytes.
  double kvBytesPerToken() const { return 2.0 * layers * kv_heads * headDim() * bytes_per_param; }
  double weightBytes() const { return params * bytes_per_param; }
};

struct EngineTuning {
  int block_size = 16;
  double gpu_memory_utilization = 0.9;
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  double compute_efficiency = 0.5;
  double bandwidth_efficiency = 0.8;
  double step_overhead_ms = 2.0;
  // Calibration terms (docs/engine-emulator.md, "Calibration"): CPU time per sequence in the
  // batch per step (sampling, detokenisation, output processing), and per request before it can
  // be scheduled (API server, tokenisation, input processing).
  double seq_overhead_us = 0;
  double request_overhead_ms = 0;
  // Scheduler: decode steps run back to back per scheduling decision (vLLM's multi-step
  // scheduling; 1 = one step per decision), and whether prefills are chunked and mixed with
  // decodes (vLLM V1) or run as separate prefill-only steps (vLLM V0's default scheduler).
  int num_scheduler_steps = 1;
  bool chunked_prefill = true;
};

struct ProfileCatalog {
  EngineTuning tuning;
  std::vector<GpuSpec> gpus;
  std::vector<ModelSpec> models;

  // Case-insensitive, by name or alias; nullptr when unknown.
  const GpuSpec* findGpu(std::string_view name) const;
  const ModelSpec* findModel(std::string_view name) const;
  std::string gpuNames() const;  // "A10, L20, …" for error messages
  std::string modelNames() const;
};

// Reads the keys present in an `engine:` mapping over `tuning`; unknown keys and out-of-range
// values throw std::invalid_argument naming the key (yaml-cpp's exceptions pass through).
void parseEngineTuning(const YAML::Node& engine, EngineTuning& tuning);

// The text of data/profiles.yaml as built into the binary.
std::string_view builtinProfilesYaml();
ProfileCatalog parseProfiles(std::string_view yaml_text);
ProfileCatalog loadProfilesFile(const std::string& path);
const ProfileCatalog& builtinProfiles();

// Everything a BatchingModel needs, in SI units. With tensor parallelism over `tp` GPUs, memory,
// bandwidth and FLOPs add up and weights are split (communication cost is not modelled).
struct PerfConfig {
  std::string gpu;
  std::string model;
  int tp = 1;
  double params = 0;
  double weight_bytes = 0;
  double kv_bytes_per_token = 0;
  double peak_flops = 0;  // all tp GPUs together
  double bandwidth_bytes_per_s = 0;
  double memory_bytes = 0;
  int block_size = 16;
  int64_t kv_blocks = 0;  // (memory * utilization - weights) / (kv bytes per token * block size)
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  double compute_efficiency = 0.5;
  double bandwidth_efficiency = 0.8;
  TimeNs step_overhead_ns = 2'000'000;
  TimeNs seq_overhead_ns = 0;      // per sequence in the batch, per step
  TimeNs request_overhead_ns = 0;  // from submit until the request can be scheduled
  int num_scheduler_steps = 1;
  bool chunked_prefill = true;
  bool prefix_caching = true;

  int64_t kvCapacityTokens() const { return kv_blocks * block_size; }
};

// Throws std::invalid_argument for an unknown GPU or model, tp < 1, or a model whose weights leave
// less than kMinKvTokens of KV cache on the GPU(s) (vLLM refuses to start in that case too).
inline constexpr int64_t kMinKvTokens = 2048;
PerfConfig makePerfConfig(const ProfileCatalog& catalog, std::string_view gpu,
                          std::string_view model, int tp = 1);

}  // namespace switchyard::engine
