#include "gateway/telemetry_share.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>

#include "fleet/signal_batch.h"

namespace switchyard::gateway {

namespace asio = boost::asio;

TelemetryShare::TelemetryShare(asio::io_context& io, state::SharedStateBackend& backend,
                               fleet::TelemetryScraper& scraper, TimeNs liveness_ttl)
    : io_(io),
      scraper_(scraper),
      sync_(backend.makeSync(io.get_executor())),
      gateway_id_(backend.gatewayId()),
      self_hash_(fleet::stableHash(gateway_id_)),
      liveness_ttl_(liveness_ttl),
      timer_(io) {}

TelemetryShare::~TelemetryShare() { stop(); }

TimeNs TelemetryShare::period() const {
  return std::clamp<TimeNs>(scraper_.interval() / 4, 10 * kNsPerMs, 100 * kNsPerMs);
}

// The shard moves when a heartbeat expires, so it is kept short: ten scrape intervals (at least
// a second, to ride out a slow round or two), never longer than the counts' liveness period.
TimeNs TelemetryShare::heartbeatTtl() const {
  return std::min(liveness_ttl_, std::max<TimeNs>(kNsPerSec, 10 * scraper_.interval()));
}

void TelemetryShare::start() {
  if (!sync_->distributed() || !stopped_) return;
  stopped_ = false;
  scraper_.keepRecords(true);
  schedule();
}

void TelemetryShare::stop() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  scraper_.keepRecords(false);
  scraper_.setShard({}, 0);
}

void TelemetryShare::schedule() {
  if (stopped_) return;
  timer_.expires_after(std::chrono::nanoseconds(period()));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    if (running_) return schedule();  // the last round is still waiting for its answer
    running_ = true;
    asio::co_spawn(io_, round(), [this](std::exception_ptr e) {
      running_ = false;
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("telemetry sharing failed: {}", ex.what());
        }
      }
      schedule();
    });
  });
}

bool TelemetryShare::capacityDue(std::string_view replica, double tokens, TimeNs now) {
  auto it = capacity_sent_.find(replica);
  if (it == capacity_sent_.end()) {
    capacity_sent_.emplace(std::string(replica), CapacitySent{tokens, now, now});
    return true;
  }
  CapacitySent& sent = it->second;
  // With every record for a while after the first: the others may add the replica to their
  // fleet a little later (each reloads or hears from discovery on its own).
  const bool introducing = now - sent.first_at < kCapacityIntroduction;
  if (sent.tokens == tokens && !introducing && now - sent.at < kCapacityResend) return false;
  if (sent.tokens != tokens) sent.first_at = now;
  sent.tokens = tokens;
  sent.at = now;
  return true;
}

void TelemetryShare::appendRecords(TimeNs sent_at) {
  payload_.clear();
  for (const fleet::ScrapeRecord& record : records_) {
    const std::string& name = record.replica->name();
    if (record.ok && record.signals.hasKvCapacity() &&
        capacityDue(name, record.signals.kv_capacity_tokens, sent_at)) {
      fleet::appendCapacityRecord(payload_, name, record.signals.kv_capacity_tokens);
      ++capacities_sent_;
    }
    fleet::appendSignalRecord(payload_, name, record.ok, record.signals,
                              (sent_at - record.read_at) / kNsPerMs);
  }
  records_sent_ += static_cast<int64_t>(records_.size());
  records_.clear();  // drop the replicas' references now, not a round later
  if (sent_at - capacity_pruned_at_ >= kCapacityResend) {  // replicas that left the fleet
    capacity_pruned_at_ = sent_at;
    std::erase_if(capacity_sent_, [&](const auto& entry) { return !scraper_.find(entry.first); });
  }
}

void TelemetryShare::applyBatch(const state::SignalBatch& batch, TimeNs now) {
  std::string_view capacity_of;  // a capacity line applies to the record right after it
  double capacity = fleet::EngineSignals::kUnknown;
  malformed_ += fleet::forEachSignalRecord(batch.payload, [&](const fleet::SignalRecord& r) {
    if (r.capacity_only) {
      capacity_of = r.replica;
      capacity = r.signals.kv_capacity_tokens;
      return;
    }
    ++records_received_;
    const bool with_capacity = r.replica == capacity_of;
    capacity_of = {};
    fleet::ReplicaState* replica = scraper_.find(r.replica);
    if (!replica) return;
    const TimeNs read_at = now - (batch.age_ms + r.age_ms) * kNsPerMs;
    if (read_at <= replica->signalsReadAt()) return;  // this gateway knows better
    if (r.ok) {
      fleet::EngineSignals signals = r.signals;
      if (with_capacity) signals.kv_capacity_tokens = capacity;
      replica->storeSignals(signals, read_at);
    } else if (read_at > replica->lastScrapeFailureAt()) {
      replica->markScrapeFailed(read_at);
    }
  });
}

asio::awaitable<void> TelemetryShare::round() {
  scraper_.takeRecords(records_);
  if (live_gateways_ == 1) {
    // Alone: nobody reads the batches. The heartbeat still goes, so that a gateway that joins
    // is seen within a round; capacities are sent afresh to whoever comes.
    records_.clear();
    capacity_sent_.clear();
    payload_.clear();
  } else {
    appendRecords(SteadyClock::instance().now());
  }
  ++exchanges_;
  std::optional<state::SignalExchange> answer =
      co_await sync_->exchangeSignals(payload_, cursor_, heartbeatTtl());
  if (stopped_) co_return;
  const TimeNs now = SteadyClock::instance().now();
  if (!answer) {
    ++failures_;
    capacity_sent_.clear();  // the capacity lines of this batch may not have reached anyone
    // One slow round is no outage: the others keep scraping their shares, and what they shared
    // last is still fresh. Only once the shared signals are about to go stale (two intervals
    // without an answer) does this gateway take every replica — at once on every failing
    // gateway would double the load exactly when the machine or Redis is already struggling.
    if (live_gateways_ != 0 && now - last_success_ >= 2 * scraper_.interval()) {
      spdlog::warn("telemetry: shared state does not answer; scraping every replica here");
      live_gateways_ = 0;
      scraper_.setShard({}, self_hash_);
    }
    co_return;
  }
  last_success_ = now;
  cursor_ = std::move(answer->cursor);
  live_hashes_.clear();
  for (const std::string& id : answer->live_gateways) {
    live_hashes_.push_back(fleet::stableHash(id));
  }
  if (static_cast<int>(answer->live_gateways.size()) != live_gateways_) {
    spdlog::info("telemetry: {} live gateways share the scraping", answer->live_gateways.size());
    live_gateways_ = static_cast<int>(answer->live_gateways.size());
  }
  scraper_.setShard(live_hashes_, self_hash_);
  for (const state::SignalBatch& batch : answer->batches) applyBatch(batch, now);
}

}  // namespace switchyard::gateway
