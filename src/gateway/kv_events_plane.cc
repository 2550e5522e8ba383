#include "gateway/kv_events_plane.h"

#include <set>

#include "observe/prometheus_writer.h"

namespace switchyard::gateway {

using fleet::kv_index::KvEventTarget;
using fleet::kv_index::PrefixCacheMode;

std::vector<KvEventTarget> kvEventTargets(const fleet::FleetSnapshot& snapshot,
                                          const fleet::kv_index::PrefixCacheParams& params) {
  std::vector<KvEventTarget> targets;
  std::set<const void*> seen;
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      const auto endpoint = replica.labels.find("kv_events");
      if (endpoint == replica.labels.end() || endpoint->second.empty()) continue;
      if (!seen.insert(replica.state.get()).second) continue;
      KvEventTarget target;
      target.replica = replica.state->name();
      target.key = replica.state;
      target.endpoint = endpoint->second;
      if (const auto replay = replica.labels.find("kv_events_replay");
          replay != replica.labels.end()) {
        target.replay_endpoint = replay->second;
      }
      if (const auto hash = replica.labels.find("kv_events_hash");
          hash != replica.labels.end() && hash->second != "xxh3-text") {
        target.compatible = false;
      }
      if (const auto size = replica.labels.find("block_size");
          size != replica.labels.end() && size->second != std::to_string(params.block_tokens)) {
        target.compatible = false;
      }
      targets.push_back(std::move(target));
    }
  }
  return targets;
}

KvEventsPlane::KvEventsPlane(const fleet::kv_index::PrefixCacheParams& params, int workers)
    : params_(params) {
  if (workers >= 2 && params_.share_between_workers) {
    exchange_ = std::make_unique<fleet::kv_index::RoutedChainExchange>(
        workers, fleet::kv_index::RoutedChainExchange::defaultRingWords(workers));
  }
  if (params_.mode == PrefixCacheMode::kApproximate) return;
  fleet::kv_index::KvSubscriberOptions options;
  options.block_tokens = params_.block_tokens;
  options.resync = static_cast<TimeNs>(params_.resync_seconds * kNsPerSec);
  subscriber_ = std::make_unique<fleet::kv_index::KvEventSubscriber>(hub_, options);
  subscriber_->start();
}

KvEventsPlane::~KvEventsPlane() {
  if (subscriber_) subscriber_->stop();
}

void KvEventsPlane::sync(const fleet::FleetSnapshot& snapshot) {
  if (subscriber_) subscriber_->setTargets(kvEventTargets(snapshot, params_));
}

void KvEventsPlane::appendMetrics(std::string& out) const {
  if (exchange_) appendChainExchangeMetrics(out, *exchange_);
  if (subscriber_) appendKvEventMetrics(out, *subscriber_);
}

void appendChainExchangeMetrics(std::string& out,
                                const fleet::kv_index::RoutedChainExchange& exchange) {
  observe::appendHeader(out, "switchyard_prefix_index_shared_total", "counter",
                        "Routed prompts one worker passed to another's approximate prefix index.");
  observe::appendSample(out, "switchyard_prefix_index_shared_total", {},
                        static_cast<double>(exchange.published()));
  observe::appendHeader(out, "switchyard_prefix_index_share_dropped_total", "counter",
                        "Routed prompts not passed to another worker: its inbound ring was full.");
  observe::appendSample(out, "switchyard_prefix_index_share_dropped_total", {},
                        static_cast<double>(exchange.dropped()));
}

void appendKvEventMetrics(std::string& out, const fleet::kv_index::KvEventSubscriber& subscriber) {
  using Stats = fleet::kv_index::KvEventStats;
  const auto replicas = subscriber.stats();
  auto family = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto read) {
    observe::appendHeader(out, name, type, help);
    for (const auto& r : replicas) {
      observe::appendSample(out, name, {{"replica", r.replica}}, read(*r.stats));
    }
  };
  auto counter = [](std::atomic<int64_t> Stats::*field) {
    return [field](const Stats& s) {
      return static_cast<double>((s.*field).load(std::memory_order_relaxed));
    };
  };
  family("switchyard_kv_events_received_total", "counter",
         "KV-cache events applied to the replica's exact index (live and replayed).",
         counter(&Stats::events));
  family("switchyard_kv_event_batches_total", "counter",
         "KV-event batches applied (live and replayed).", counter(&Stats::batches));
  family("switchyard_kv_event_gaps_total", "counter",
         "Gaps in the replica's KV-event sequence numbers (lost batches).", counter(&Stats::gaps));
  family("switchyard_kv_event_gaps_repaired_total", "counter",
         "Gaps filled from the replica's replay endpoint.", counter(&Stats::gaps_repaired));
  family("switchyard_kv_event_replay_failures_total", "counter",
         "Gaps the replay could not fill: the exact index was cleared and the replica routed "
         "approximately while it resynced.",
         counter(&Stats::replay_failures));
  family("switchyard_kv_event_decode_errors_total", "counter",
         "KV-event batches that were not a valid EventBatch.", counter(&Stats::decode_errors));
  family("switchyard_kv_index_blocks", "gauge",
         "Engine blocks in the replica's exact prefix-cache index.", counter(&Stats::blocks));
  family("switchyard_kv_index_exact", "gauge",
         "1 when prefix-cache routing uses the replica's exact index, 0 when it falls back to the "
         "approximate one.",
         [](const Stats& s) { return s.exact.load(std::memory_order_relaxed) ? 1.0 : 0.0; });
}

}  // namespace switchyard::gateway
