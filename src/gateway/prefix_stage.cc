#include "gateway/prefix_stage.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace switchyard::gateway {

PrefixStage::PrefixStage(const fleet::kv_index::PrefixCacheParams& params,
                         const fleet::kv_index::ExactIndexHub* exact,
                         fleet::kv_index::RoutedChainExchange* exchange, int worker)
    : params_(params),
      hasher_(params.block_tokens, params.hash_seed),
      exact_(params.mode == fleet::kv_index::PrefixCacheMode::kApproximate ? nullptr : exact),
      exchange_(exchange),
      worker_(worker) {}

bool PrefixStage::capture(const routing::StrategySpec& spec, std::vector<uint64_t>& blocks) const {
  blocks.clear();
  const bool uses = std::any_of(spec.parts().begin(), spec.parts().end(),
                                [](const routing::StrategyComponent& part) {
                                  return part.strategy->name() == "prefix-cache";
                                });
  if (!uses) return false;
  const std::span<const uint64_t> chain = hasher_.blocks();
  blocks.assign(chain.begin(), chain.end());
  return true;
}

routing::PrefixMatch PrefixStage::Probe::match(const fleet::ReplicaState& replica) const {
  using fleet::kv_index::PrefixCacheMode;
  if (exact_ != nullptr) {
    if (const fleet::kv_index::BlockTable* table = exact_->find(&replica); table != nullptr) {
      return {table->matchPrefix(blocks_), true};
    }
  }
  if (mode_ == PrefixCacheMode::kPrecise) return {0, false};
  return {index_->match(&replica, blocks_), false};
}

double PrefixStage::Probe::homeWeight(std::string_view model,
                                      const fleet::ReplicaEntry& replica) const {
  return stage_->kvBlocksOf(model, replica);
}

size_t PrefixStage::absorbShared() {
  if (exchange_ == nullptr) return 0;
  return exchange_->drain(worker_, [this](const fleet::kv_index::RoutedChainExchange::Routed& r) {
    // A decision on an older fleet than this worker's may name a replica since removed (its
    // address possibly reused): skip it. A newer one names a live replica.
    if (r.fleet_version < snapshot_version_) return;
    index_.insertKeepingBound(r.replica, r.chain, r.capacity_blocks);
  });
}

PrefixStage::Probe PrefixStage::probe(std::span<const uint64_t> blocks) {
  if (!blocks.empty()) absorbShared();
  Probe probe;
  probe.stage_ = this;
  probe.index_ = &index_;
  probe.exact_ = exact_.get();
  probe.mode_ = params_.mode;
  probe.blocks_ = blocks;
  probe.total_blocks = static_cast<uint32_t>(blocks.size());
  probe.block_tokens = params_.block_tokens;
  probe.hot_spot_factor = params_.hot_spot_factor;
  probe.hot_spot_tokens = params_.hot_spot_tokens;
  const uint32_t block = std::max<uint32_t>(params_.block_tokens, 1);
  if (params_.home_tokens > 0 && !blocks.empty() &&
      blocks.size() * block >= params_.home_min_tokens) {
    probe.home_blocks = std::max<uint32_t>(1, (params_.home_tokens + block - 1) / block);
    probe.home_anchor = blocks[std::min<size_t>(probe.home_blocks, blocks.size()) - 1];
  }
  return probe;
}

void PrefixStage::onRouted(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model,
                           int chosen, std::span<const uint64_t> blocks) {
  if (snapshot.version != snapshot_version_) {
    snapshot_version_ = snapshot.version;
    std::vector<const void*> live;
    for (const fleet::ModelEntry& entry : snapshot.models) {
      for (const fleet::ReplicaEntry& replica : entry.replicas) live.push_back(replica.state.get());
    }
    index_.retain(live);
    const std::unordered_set<const void*> keep(live.begin(), live.end());
    std::erase_if(kv_blocks_, [&](const auto& known) { return !keep.contains(known.first); });
  }
  if (chosen < 0 || static_cast<size_t>(chosen) >= model.replicas.size() || blocks.empty()) {
    return;
  }
  const fleet::ReplicaEntry& replica = model.replicas[static_cast<size_t>(chosen)];
  const uint32_t bound = kvBlocksOf(model.name, replica);
  index_.insert(replica.state.get(), blocks, bound);
  if (exchange_ != nullptr) {
    exchange_->publish(worker_, {replica.state.get(), snapshot.version, bound, blocks});
  }
}

uint32_t PrefixStage::kvBlocksOf(std::string_view model, const fleet::ReplicaEntry& replica) {
  const void* key = replica.state.get();
  const double reported_or_nan = replica.state->kvCapacityTokens();
  const double reported = std::isnan(reported_or_nan) ? 0 : reported_or_nan;  // 0: not reported
  auto it = kv_blocks_.find(key);
  if (it == kv_blocks_.end() || it->second.reported_tokens != reported) {
    // Once per replica and reported size: the profile lookup is start-up work, not per-request.
    const KvBound bound{
        fleet::kv_index::replicaKvBlocks(replica.labels, model, reported, params_), reported};
    it = kv_blocks_.insert_or_assign(key, bound).first;
  }
  return it->second.blocks;
}

}  // namespace switchyard::gateway
