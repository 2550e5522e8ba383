// TelemetryShare: several gateways scrape each replica once between them and share what they
// read (docs/operations.md, "Telemetry at scale").
//
// Every `period` (a quarter of the scrape interval, 10–100 ms) one round trip to shared state
// (SharedStateSync::exchangeSignals, on its own connection):
//  - appends the scrapes this gateway made since the last round (fleet/signal_batch.h) — unless
//    it was the only live gateway at the last round: then nobody would read them — and renews
//    its telemetry heartbeat;
//  - answers the live gateways, from which the scraper derives its shard (rendezvous hashing
//    over their ids: each replica has one owner; a gateway that stops renewing its heartbeat
//    loses its replicas to the others when its heartbeat expires: ten scrape intervals, at least
//    1 s, at most the liveness period);
//  - answers the batches the other gateways appended since the last round; each record is
//    stored in its replica with the time it was read on this gateway's clock (the backend's
//    append time and the record's own age, never another host's clock), unless this gateway
//    holds a newer reading.
//  - carries each replica's KV cache size (signal_batch.h's capacity line) from the gateway that
//    scrapes it to the others: with every record of a replica for `kCapacityIntroduction` after
//    it is first read or changes (the others may add the replica to their fleet a little later),
//    then every `kCapacityResend` (so a gateway that joins later learns it), applied with the
//    record that follows it. The size bounds the prefix-cache index, whoever scrapes the replica.
// When rounds fail (shared state away or slow) for two scrape intervals — the shared signals are
// about to go stale — the scraper's shard is cleared: this gateway scrapes every replica it
// routes to until shared state answers again. With one gateway (the
// memory backend) nothing is shared and the scraper owns every replica.
//
// Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "fleet/telemetry_scraper.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

class TelemetryShare {
 public:
  TelemetryShare(boost::asio::io_context& io, state::SharedStateBackend& backend,
                 fleet::TelemetryScraper& scraper, TimeNs liveness_ttl);
  ~TelemetryShare();

  void start();
  void stop();

  int64_t exchangesTotal() const { return exchanges_; }
  int64_t exchangeFailuresTotal() const { return failures_; }
  int64_t recordsSentTotal() const { return records_sent_; }
  int64_t recordsReceivedTotal() const { return records_received_; }
  int64_t malformedRecordsTotal() const { return malformed_; }
  int liveGateways() const { return live_gateways_; }
  int64_t capacitiesSentTotal() const { return capacities_sent_; }

  static constexpr TimeNs kCapacityIntroduction = 5 * kNsPerSec;
  static constexpr TimeNs kCapacityResend = 30 * kNsPerSec;
  const state::SharedStateStats& stats() const { return sync_->stats(); }

 private:
  void schedule();
  boost::asio::awaitable<void> round();
  TimeNs period() const;
  TimeNs heartbeatTtl() const;
  void appendRecords(TimeNs sent_at);
  bool capacityDue(std::string_view replica, double tokens, TimeNs now);
  void applyBatch(const state::SignalBatch& batch, TimeNs now);

  struct CapacitySent {
    double tokens = 0;
    TimeNs first_at = 0;  // first sent (at this size)
    TimeNs at = 0;        // last sent
  };
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };

  boost::asio::io_context& io_;
  fleet::TelemetryScraper& scraper_;
  std::unique_ptr<state::SharedStateSync> sync_;
  std::string gateway_id_;
  uint64_t self_hash_;
  TimeNs liveness_ttl_;
  boost::asio::steady_timer timer_;
  bool stopped_ = true;
  bool running_ = false;
  std::string cursor_;
  std::string payload_;
  std::vector<fleet::ScrapeRecord> records_;
  std::vector<uint64_t> live_hashes_;
  // Per replica this gateway scrapes: the capacity it last shared (pruned of replicas that left).
  std::unordered_map<std::string, CapacitySent, NameHash, std::equal_to<>> capacity_sent_;
  TimeNs capacity_pruned_at_ = 0;
  int64_t capacities_sent_ = 0;
  int64_t exchanges_ = 0;
  int64_t failures_ = 0;
  int64_t records_sent_ = 0;
  int64_t records_received_ = 0;
  int64_t malformed_ = 0;
  int live_gateways_ = 0;
  TimeNs last_success_ = 0;
};

}  // namespace switchyard::gateway
