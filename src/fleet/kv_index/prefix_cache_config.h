// `routing.prefix_cache:` (docs/configuration.md): the knobs of prefix-cache routing, and where
// the bound of a replica's index comes from (its KV cache in blocks).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace switchyard::fleet::kv_index {

// Where prefix-cache routing learns what a replica has cached (docs/routing.md).
enum class PrefixCacheMode : uint8_t {
  kAuto,         // the exact index (KV events) where a replica publishes usable ones, else the
                 // approximate index
  kApproximate,  // the approximate index only; KV events are not subscribed to
  kPrecise,      // the exact index only: a replica without usable events matches nothing
};

struct PrefixCacheParams {
  uint32_t block_tokens = 16;  // tokens per block, as vLLM's default block size
  // A replica's KV cache in blocks of block_tokens when neither its `kv_cache_blocks` label nor
  // a built-in GPU profile for its `gpu` label and model says.
  uint32_t kv_cache_blocks = 4096;
  double hot_spot_factor = 1.5;  // routing/prefix_probe.h; 0 turns the guard off
  double hot_spot_tokens = 1536;  // routing/prefix_probe.h; 0: the guard ignores match length
  uint64_t hash_seed = 0;        // the chain's first seed
  // A prefix no candidate is known to hold goes to its home replica, named by the prompt's first
  // this many tokens (whole blocks, at least one): gateways and workers that learn apart still
  // place it alike. 0: off (load decides). routing/strategies/prefix_cache.h.
  uint32_t home_tokens = 64;
  // ... for prompts of at least this many tokens: a shorter prefix is cheap to prefill again,
  // and where load places it the fleet stays balanced (chats' first turns).
  uint32_t home_min_tokens = 1536;
  PrefixCacheMode mode = PrefixCacheMode::kAuto;
  // A gateway's workers tell each other where they routed each prompt, so every worker's
  // approximate index learns from all of the gateway's traffic (chain_exchange.h). At start.
  bool share_between_workers = true;
  // After KV events were lost beyond repair, a replica routes approximately for this long while
  // fresh events rebuild its exact index.
  double resync_seconds = 10;
};

// Reads the keys present over `params`; throws ConfigError naming the key on a bad value.
void parsePrefixCache(const YAML::Node& node, const std::string& where, PrefixCacheParams& params);

// The bound of one replica's index, in blocks of params.block_tokens: its `kv_cache_blocks` label
// (in the engine's blocks of `block_size` label tokens, default 16), else what the engine's
// metrics report (`reported_tokens`: vLLM's cache_config_info num_gpu_blocks × block_size or
// SGLang's max_total_num_tokens; NaN or 0 when not reported), else the KV cache the built-in GPU
// profile of its `gpu` label (× `tp` label) leaves for `model` (the emulator's own figure,
// engine/perf_profiles.h), else params.kv_cache_blocks. Off the hot path (once per replica and
// reported size); never throws.
uint32_t replicaKvBlocks(const std::map<std::string, std::string>& labels, std::string_view model,
                         double reported_tokens, const PrefixCacheParams& params);

}  // namespace switchyard::fleet::kv_index
