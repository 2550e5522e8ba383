// PrefixStage: the worker's side of prefix-cache routing (docs/routing.md). It hashes each
// inspected body's prompt into a block chain (the request inspector feeds it while parsing),
// keeps the worker's index of what each replica has probably cached, hands the router a probe
// for one request, and records the chain for the replica a request was routed to.
//
// One per worker thread, owned by Worker::Impl; not thread-safe except through the gateway's
// RoutedChainExchange, which carries each worker's routed chains to the others' indexes
// (fleet/kv_index/chain_exchange.h). Requests of one worker
// interleave at co_await points, so a request keeps its own copy of its chain (capture()) taken
// before its first co_await after inspection. No allocation per request once warm (the copy
// reuses the connection's buffer; the index's tables are sized once per replica).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "fleet/fleet_snapshot.h"
#include "fleet/kv_index/chain_exchange.h"
#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/prefix_cache_config.h"
#include "fleet/kv_index/prefix_index.h"
#include "fleet/kv_index/prompt_blocks.h"
#include "routing/prefix_probe.h"
#include "routing/strategy_spec.h"

namespace switchyard::gateway {

class PrefixStage {
 public:
  // `exact`: the hub of the exact index (KV events; null: approximate only). `exchange`: where
  // worker `worker` tells the gateway's other workers what it routed, and hears what they did
  // (null: one worker, or sharing off).
  explicit PrefixStage(const fleet::kv_index::PrefixCacheParams& params,
                       const fleet::kv_index::ExactIndexHub* exact = nullptr,
                       fleet::kv_index::RoutedChainExchange* exchange = nullptr, int worker = 0);

  // Where the request inspector sends prompt text.
  api::PromptTextSink* sink() { return &hasher_; }

  // When `spec` uses prefix-cache: copies the chain of the body inspected last into `blocks` and
  // returns true; else clears `blocks`.
  bool capture(const routing::StrategySpec& spec, std::vector<uint64_t>& blocks) const;

  // A probe of one request's chain against the index; valid while this stage and `blocks` live.
  class Probe final : public routing::PrefixProbe {
   public:
    // The exact index where the replica has a usable one (mode auto or precise), else the
    // approximate index (mode auto or approximate), else nothing (precise).
    routing::PrefixMatch match(const fleet::ReplicaState& replica) const override;
    // The replica's KV cache in blocks (the bound of its index): the prefixes it can hold.
    double homeWeight(std::string_view model, const fleet::ReplicaEntry& replica) const override;

   private:
    friend class PrefixStage;
    PrefixStage* stage_ = nullptr;
    const fleet::kv_index::PrefixIndex* index_ = nullptr;
    const fleet::kv_index::ExactIndexSnapshot* exact_ = nullptr;
    fleet::kv_index::PrefixCacheMode mode_ = fleet::kv_index::PrefixCacheMode::kAuto;
    std::span<const uint64_t> blocks_;
  };
  // Takes the exact index's latest snapshot (an atomic load; a refcount when it changed). For a
  // chain (a request routed by prefix-cache), first learns what the other workers routed.
  Probe probe(std::span<const uint64_t> blocks);

  // Inserts what the gateway's other workers routed since the last call (also called once a
  // second, so that a worker that routes nothing keeps its rings drained). Returns the count.
  size_t absorbShared();

  // The request was routed to `model.replicas[chosen]`: it will cache the chain there. When
  // `snapshot` is newer than the last one seen, replicas no longer in it are forgotten first (an
  // allocation per fleet change, none per request).
  void onRouted(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model, int chosen,
                std::span<const uint64_t> blocks);

  const fleet::kv_index::PrefixIndex& index() const { return index_; }

 private:
  // The bound of `replica`'s index: its KV cache in blocks (fleet/kv_index/prefix_cache_config.h),
  // derived once per replica and reported size, then a lookup.
  uint32_t kvBlocksOf(std::string_view model, const fleet::ReplicaEntry& replica);

  fleet::kv_index::PrefixCacheParams params_;
  fleet::kv_index::PromptBlockHasher hasher_;
  fleet::kv_index::PrefixIndex index_;
  fleet::kv_index::ExactIndexCache exact_;
  fleet::kv_index::RoutedChainExchange* exchange_;
  int worker_;
  // Per replica: its index's bound, and the engine-reported KV size it was derived from (0:
  // none), so a size reported later re-derives it.
  struct KvBound {
    uint32_t blocks = 0;
    double reported_tokens = 0;
  };
  std::unordered_map<const void*, KvBound> kv_blocks_;
  uint64_t snapshot_version_ = 0;
};

}  // namespace switchyard::gateway
