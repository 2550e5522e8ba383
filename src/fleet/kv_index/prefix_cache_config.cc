#include "fleet/kv_index/prefix_cache_config.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <exception>

#include "core/yaml_values.h"
#include "engine/perf_profiles.h"
#include "fleet/kv_index/prompt_blocks.h"

namespace switchyard::fleet::kv_index {
namespace {

// A whole positive number from a label; 0 when absent or not one.
int64_t labelNumber(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto it = labels.find(key);
  if (it == labels.end()) return 0;
  int64_t value = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return 0;
  return value;
}

}  // namespace

void parsePrefixCache(const YAML::Node& node, const std::string& where, PrefixCacheParams& params) {
  readFields(
      node, where,
      {
          {"block_tokens",
           [&](const auto& v, const auto& k) {
             params.block_tokens =
                 static_cast<uint32_t>(number(v, k, 1, PromptBlockHasher::kMaxBlockTokens));
           }},
          {"kv_cache_blocks",
           [&](const auto& v, const auto& k) {
             params.kv_cache_blocks = static_cast<uint32_t>(number(v, k, 2, 1 << 24));
           }},
          {"hot_spot_factor",
           [&](const auto& v, const auto& k) { params.hot_spot_factor = number(v, k, 0, 1e6); }},
          {"hot_spot_tokens",
           [&](const auto& v, const auto& k) { params.hot_spot_tokens = number(v, k, 0, 1e9); }},
          {"home_tokens",
           [&](const auto& v, const auto& k) {
             params.home_tokens = static_cast<uint32_t>(number(v, k, 0, 1 << 24));
           }},
          {"home_min_tokens",
           [&](const auto& v, const auto& k) {
             params.home_min_tokens = static_cast<uint32_t>(number(v, k, 0, 1 << 30));
           }},
          {"hash_seed",
           [&](const auto& v, const auto& k) {
             params.hash_seed = static_cast<uint64_t>(number(v, k, 0, 9.007199254740992e15));
           }},
          {"mode",
           [&](const auto& v, const auto& k) {
             const auto mode = scalar<std::string>(v, k);
             if (mode == "auto") {
               params.mode = PrefixCacheMode::kAuto;
             } else if (mode == "approximate") {
               params.mode = PrefixCacheMode::kApproximate;
             } else if (mode == "precise") {
               params.mode = PrefixCacheMode::kPrecise;
             } else {
               throw ConfigError(k + ": must be auto, approximate or precise", lineOf(v));
             }
           }},
          {"share_between_workers",
           [&](const auto& v, const auto& k) {
             params.share_between_workers = scalar<bool>(v, k);
           }},
          {"resync_seconds",
           [&](const auto& v, const auto& k) { params.resync_seconds = number(v, k, 0, 86400); }},
      });
}

uint32_t replicaKvBlocks(const std::map<std::string, std::string>& labels, std::string_view model,
                         double reported_tokens, const PrefixCacheParams& params) {
  const double ours = std::max<uint32_t>(params.block_tokens, 1);
  const auto clampBlocks = [](double blocks) {
    return static_cast<uint32_t>(std::clamp(blocks, 2.0, static_cast<double>(1 << 24)));
  };
  if (const int64_t blocks = labelNumber(labels, "kv_cache_blocks"); blocks > 0) {
    const int64_t block_size = labelNumber(labels, "block_size");
    return clampBlocks(static_cast<double>(blocks) * (block_size > 0 ? block_size : 16) / ours);
  }
  if (std::isfinite(reported_tokens) && reported_tokens > 0) {
    return clampBlocks(reported_tokens / ours);
  }
  const auto gpu = labels.find("gpu");
  const engine::ProfileCatalog& catalog = engine::builtinProfiles();
  if (gpu != labels.end() && catalog.findGpu(gpu->second) != nullptr &&
      catalog.findModel(model) != nullptr) {
    const int64_t tp = labelNumber(labels, "tp");
    try {
      const engine::PerfConfig perf =
          engine::makePerfConfig(catalog, gpu->second, model, tp > 0 ? static_cast<int>(tp) : 1);
      return clampBlocks(static_cast<double>(perf.kvCapacityTokens()) / ours);
    } catch (const std::exception&) {
      // The model does not fit that GPU: nothing to derive.
    }
  }
  return params.kv_cache_blocks;
}

}  // namespace switchyard::fleet::kv_index
