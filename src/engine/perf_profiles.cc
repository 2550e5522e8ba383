#include "engine/perf_profiles.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "core/text_file.h"
namespace switchyard::engine {
namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

template <typename Spec>
const Spec* findByName(const std::vector<Spec>& specs, std::string_view name) {
  for (const Spec& spec : specs) {
    if (equalsIgnoreCase(spec.name, name)) return &spec;
    for (const std::string& alias : spec.aliases) {
      if (equalsIgnoreCase(alias, name)) return &spec;
    }
  }
  return nullptr;
}

template <typename Spec>
std::string namesOf(const std::vector<Spec>& specs) {
  std::string out;
  for (const Spec& spec : specs) out += (out.empty() ? "" : ", ") + spec.name;
  return out;
}

template <typename T>
T positive(const YAML::Node& node, const char* key, std::string_view where) {
  if (!node[key]) throw std::invalid_argument(fmt::format("{}: '{}' is required", where, key));
  T value = node[key].as<T>();
  if (!(value > 0)) throw std::invalid_argument(fmt::format("{}: '{}' must be > 0", where, key));
  return value;
}

template <typename T>
void optionalPositive(const YAML::Node& node, const char* key, std::string_view where, T& out) {
  if (node[key]) out = positive<T>(node, key, where);
}

std::vector<std::string> aliasesOf(const YAML::Node& node) {
  std::vector<std::string> aliases;
  if (node["aliases"]) aliases = node["aliases"].as<std::vector<std::string>>();
  return aliases;
}

}  // namespace

const GpuSpec* ProfileCatalog::findGpu(std::string_view name) const {
  return findByName(gpus, name);
}
const ModelSpec* ProfileCatalog::findModel(std::string_view name) const {
  return findByName(models, name);
}
std::string ProfileCatalog::gpuNames() const { return namesOf(gpus); }
std::string ProfileCatalog::modelNames() const { return namesOf(models); }

void parseEngineTuning(const YAML::Node& engine, EngineTuning& t) {
  if (!engine.IsMap()) throw std::invalid_argument("engine: must be a mapping");
  static constexpr std::string_view kKnown[] = {
      "block_size",          "gpu_memory_utilization", "max_num_seqs",
      "max_num_batched_tokens", "compute_efficiency", "bandwidth_efficiency",
      "step_overhead_ms",    "seq_overhead_us",        "request_overhead_ms",
      "num_scheduler_steps", "chunked_prefill"};
  for (auto it = engine.begin(); it != engine.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      throw std::invalid_argument(fmt::format("engine.{}: unknown key", key));
    }
  }
  optionalPositive(engine, "block_size", "engine", t.block_size);
  optionalPositive(engine, "gpu_memory_utilization", "engine", t.gpu_memory_utilization);
  optionalPositive(engine, "max_num_seqs", "engine", t.max_num_seqs);
  optionalPositive(engine, "max_num_batched_tokens", "engine", t.max_num_batched_tokens);
  optionalPositive(engine, "compute_efficiency", "engine", t.compute_efficiency);
  optionalPositive(engine, "bandwidth_efficiency", "engine", t.bandwidth_efficiency);
  optionalPositive(engine, "num_scheduler_steps", "engine", t.num_scheduler_steps);
  if (engine["step_overhead_ms"]) t.step_overhead_ms = engine["step_overhead_ms"].as<double>();
  if (engine["seq_overhead_us"]) t.seq_overhead_us = engine["seq_overhead_us"].as<double>();
  if (engine["request_overhead_ms"]) {
    t.request_overhead_ms = engine["request_overhead_ms"].as<double>();
  }
  if (engine["chunked_prefill"]) t.chunked_prefill = engine["chunked_prefill"].as<bool>();
  if (t.gpu_memory_utilization > 1 || t.compute_efficiency > 1 || t.bandwidth_efficiency > 1) {
    throw std::invalid_argument("engine: utilization and efficiencies must be in (0, 1]");
  }
  if (!(t.step_overhead_ms >= 0) || !(t.seq_overhead_us >= 0) || !(t.request_overhead_ms >= 0)) {
    throw std::invalid_argument("engine: overheads must be >= 0");
  }
}

ProfileCatalog parseProfiles(std::string_view yaml_text) {
  ProfileCatalog catalog;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
    if (const YAML::Node engine = root["engine"]) parseEngineTuning(engine, catalog.tuning);
    for (const YAML::Node& node : root["gpus"]) {
      GpuSpec gpu;
      gpu.name = node["name"].as<std::string>();
      std::string where = fmt::format("gpu '{}'", gpu.name);
      gpu.aliases = aliasesOf(node);
      gpu.memory_gb = positive<double>(node, "memory_gb", where);
      gpu.bandwidth_gbps = positive<double>(node, "bandwidth_gbps", where);
      gpu.tflops = positive<double>(node, "tflops", where);
      if (node["source"]) gpu.source = node["source"].as<std::string>();
      optionalPositive(node, "compute_efficiency", where, gpu.compute_efficiency);
      optionalPositive(node, "bandwidth_efficiency", where, gpu.bandwidth_efficiency);
      if (gpu.compute_efficiency > 1 || gpu.bandwidth_efficiency > 1) {
        throw std::invalid_argument(where + ": efficiencies must be in (0, 1]");
      }
      if (node["calibration"]) gpu.calibration = node["calibration"].as<std::string>();
      catalog.gpus.push_back(std::move(gpu));
    }
    for (const YAML::Node& node : root["models"]) {
      ModelSpec model;
      model.name = node["name"].as<std::string>();
      std::string where = fmt::format("model '{}'", model.name);
      model.aliases = aliasesOf(node);
      model.params = positive<double>(node, "params", where);
      model.layers = positive<int>(node, "layers", where);
      model.hidden_size = positive<int>(node, "hidden_size", where);
      model.heads = positive<int>(node, "heads", where);
      model.kv_heads = positive<int>(node, "kv_heads", where);
      optionalPositive(node, "bytes_per_param", where, model.bytes_per_param);
      if (node["source"]) model.source = node["source"].as<std::string>();
      if (model.hidden_size % model.heads != 0 || model.kv_heads > model.heads) {
        throw std::invalid_argument(where + ": hidden_size/heads/kv_heads are inconsistent");
      }
      catalog.models.push_back(std::move(model));
    }
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("profiles: {}", e.what()));
  }
  if (catalog.gpus.empty() || catalog.models.empty()) {
    throw std::invalid_argument("profiles: at least one entry under 'gpus' and 'models' needed");
  }
  return catalog;
}

ProfileCatalog loadProfilesFile(const std::string& path) {
  std::string error;
  const std::optional<std::string> text = readTextFile(path, &error);
  if (!text) throw std::invalid_argument(fmt::format("profiles file: {}", error));
  return parseProfiles(*text);
}

const ProfileCatalog& builtinProfiles() {
  static const ProfileCatalog catalog = parseProfiles(builtinProfilesYaml());
  return catalog;
}

PerfConfig makePerfConfig(const ProfileCatalog& catalog, std::string_view gpu_name,
                          std::string_view model_name, int tp) {
  const GpuSpec* gpu = catalog.findGpu(gpu_name);
  if (!gpu) {
    throw std::invalid_argument(
        fmt::format("unknown GPU '{}' (known: {})", gpu_name, catalog.gpuNames()));
  }
  const ModelSpec* model = catalog.findModel(model_name);
  if (!model) {
    throw std::invalid_argument(
        fmt::format("unknown model profile '{}' (known: {})", model_name, catalog.modelNames()));
  }
  if (tp < 1) throw std::invalid_argument("tensor parallel size must be at least 1");
  const EngineTuning& t = catalog.tuning;
  PerfConfig config;
  config.gpu = gpu->name;
  config.model = model->name;
  config.tp = tp;
  config.params = model->params;
  config.weight_bytes = model->weightBytes();
  config.kv_bytes_per_token = model->kvBytesPerToken();
  config.peak_flops = gpu->tflops * 1e12 * tp;
  config.bandwidth_bytes_per_s = gpu->bandwidth_gbps * 1e9 * tp;
  config.memory_bytes = gpu->memory_gb * 1e9 * tp;
  config.block_size = t.block_size;
  config.max_num_seqs = t.max_num_seqs;
  config.max_num_batched_tokens = t.max_num_batched_tokens;
  config.compute_efficiency = gpu->compute_efficiency > 0 ? gpu->compute_efficiency
                                                          : t.compute_efficiency;
  config.bandwidth_efficiency = gpu->bandwidth_efficiency > 0 ? gpu->bandwidth_efficiency
                                                              : t.bandwidth_efficiency;
  config.step_overhead_ns = std::llround(t.step_overhead_ms * 1e6);
  config.seq_overhead_ns = std::llround(t.seq_overhead_us * 1e3);
  config.request_overhead_ns = std::llround(t.request_overhead_ms * 1e6);
  config.num_scheduler_steps = t.num_scheduler_steps;
  config.chunked_prefill = t.chunked_prefill;

  const double usable = config.memory_bytes * t.gpu_memory_utilization;
  const double kv_bytes = usable - config.weight_bytes;
  const double block_bytes = config.kv_bytes_per_token * t.block_size;
  config.kv_blocks = kv_bytes > 0 ? static_cast<int64_t>(kv_bytes / block_bytes) : 0;
  if (config.kvCapacityTokens() < kMinKvTokens) {
    int needed_tp = tp;
    while (needed_tp < 64 &&
           (gpu->memory_gb * 1e9 * needed_tp * t.gpu_memory_utilization - config.weight_bytes) /
                   config.kv_bytes_per_token <
               kMinKvTokens) {
      ++needed_tp;
    }
    throw std::invalid_argument(fmt::format(
        "{} does not fit on {} x{}: {:.1f} GB of weights, {:.1f} GB usable at {:.0f}% memory "
        "utilization, room for {} KV tokens (at least {} needed); use a larger GPU or --tp {}",
        model->name, gpu->name, tp, config.weight_bytes / 1e9, usable / 1e9,
        t.gpu_memory_utilization * 100, std::max<int64_t>(0, config.kvCapacityTokens()),
        kMinKvTokens, needed_tp));
  }
  return config;
}

}  // namespace switchyard::engine
