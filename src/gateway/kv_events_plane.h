// KvEventsPlane: what a gateway's workers share for prefix-cache routing (docs/routing.md): for
// precise routing, the exact index built from the engines' KV events; for approximate routing, the
// exchange through which the workers tell each other where they routed each prompt. Finds the
// replicas that announce KV-event endpoints (labels `kv_events: tcp://…` and optionally
// `kv_events_replay: tcp://…`), keeps the subscriber's set of subscriptions in step with the fleet,
// owns the hub that publishes the exact index to the workers, and renders the subscription's
// metrics.
//
// Control thread: sync() after every fleet change, appendMetrics() from /metrics. The subscriber
// runs on its own thread (fleet/kv_index/kv_event_subscriber.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fleet/fleet_snapshot.h"
#include "fleet/kv_index/chain_exchange.h"
#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/kv_event_subscriber.h"
#include "fleet/kv_index/prefix_cache_config.h"

namespace switchyard::gateway {

// The targets of `snapshot`: one per distinct replica with a `kv_events` label. A replica is
// compatible (its hashes can match the gateway's) unless its `kv_events_hash` label names another
// scheme than "xxh3-text" (the gateway's and the emulator's), or its `block_size` label differs
// from block_tokens.
std::vector<fleet::kv_index::KvEventTarget> kvEventTargets(
    const fleet::FleetSnapshot& snapshot, const fleet::kv_index::PrefixCacheParams& params);

class KvEventsPlane {
 public:
  // `workers`: the gateway's worker count (the exchange needs two or more, and
  // share_between_workers).
  KvEventsPlane(const fleet::kv_index::PrefixCacheParams& params, int workers);
  ~KvEventsPlane();

  // The hub workers read; valid for the plane's life.
  const fleet::kv_index::ExactIndexHub* hub() const { return &hub_; }
  // The workers' chain exchange (null: one worker, or sharing off); valid for the plane's life.
  fleet::kv_index::RoutedChainExchange* chainExchange() const { return exchange_.get(); }
  void sync(const fleet::FleetSnapshot& snapshot);
  void appendMetrics(std::string& out) const;

 private:
  fleet::kv_index::PrefixCacheParams params_;
  fleet::kv_index::ExactIndexHub hub_;
  std::unique_ptr<fleet::kv_index::KvEventSubscriber> subscriber_;  // none in approximate mode
  std::unique_ptr<fleet::kv_index::RoutedChainExchange> exchange_;
};

// The workers' exchange's metrics (also used by tests without a gateway).
void appendChainExchangeMetrics(std::string& out,
                                const fleet::kv_index::RoutedChainExchange& exchange);

// The metrics of `subscriber` (also used by tests without a gateway).
void appendKvEventMetrics(std::string& out, const fleet::kv_index::KvEventSubscriber& subscriber);

}  // namespace switchyard::gateway
