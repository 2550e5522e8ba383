// TelemetryScraper: polls replicas' /metrics on the control thread and stores the mapped
// EngineSignals in their ReplicaState, stamped with the time of the read.
//
// Built for thousands of replicas (docs/operations.md, "Telemetry at scale"):
//  - one scheduler, not a coroutine per replica: a heap of due times and one timer, woken in
//    ticks (1 to 10 ms, longer for more replicas): each wake-up starts the scrapes due
//    within the tick and reads the answers to the previous tick's (polled connections: one
//    read per answer, no wake-up per answer);
//  - each scrape goes over the replica's keep-alive http::ScrapeConnection into a reused
//    buffer and parses only the families the gateway reads (parseEngineSignals): no allocation
//    per scrape on an open connection;
//  - each replica's period follows fleet/scrape_schedule.h (stable replicas less often, those
//    near the KV-critical threshold more often), under the `max_scrapes_per_second` budget;
//  - with several gateways, setShard() narrows the scraping to the replicas this gateway owns
//    among the live ones; the others' signals arrive through shared state
//    (gateway/telemetry_share.h) and are stored with storeShared(). An empty live set (one
//    gateway, or shared state away) means every replica is scraped here.
// A failed or timed-out scrape marks the replica's signals unknown at once.
//
// Not thread-safe: the io_context given at construction only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "fleet/replica_state.h"
#include "fleet/scrape_schedule.h"
#include "http/scrape_connection.h"

namespace switchyard::fleet {

// One scrape this gateway made, for sharing with the others.
struct ScrapeRecord {
  std::shared_ptr<ReplicaState> replica;
  bool ok = false;
  EngineSignals signals;
  TimeNs read_at = 0;
};

class TelemetryScraper {
 public:
  TelemetryScraper(boost::asio::io_context& io, const Clock& clock, TimeNs interval,
                   ScrapePolicy policy = {});
  ~TelemetryScraper();

  void setInterval(TimeNs interval);
  void setPolicy(const ScrapePolicy& policy);
  TimeNs interval() const { return interval_; }

  // The fleet changed: scrape new replicas, forget removed ones.
  void sync(const std::vector<std::shared_ptr<ReplicaState>>& replicas);
  void stopAll();

  // The live gateways' id hashes (fleet::stableHash of each id) and this gateway's. Empty:
  // scrape every replica. Replicas this gateway gains are scraped at once.
  void setShard(std::vector<uint64_t> live_gateways, uint64_t self);
  // Keep the records of this gateway's scrapes for takeRecords() (only while sharing).
  void keepRecords(bool keep) {
    keep_records_ = keep;
    if (!keep) records_.clear();
  }
  // The records kept since the last call; the vector is reused (swap in an empty one).
  void takeRecords(std::vector<ScrapeRecord>& out) {
    out.clear();
    out.swap(records_);
  }
  // A replica by name (for signals shared by other gateways); null if not in the fleet.
  ReplicaState* find(std::string_view name) const;
  // Whether this gateway scrapes the replica itself.
  bool owns(const ReplicaState& replica) const;

  // Scrapes this gateway made (the sum over gateways is what the engines see).
  uint64_t scrapesTotal() const { return scrapes_total_; }
  uint64_t scrapeFailuresTotal() const { return scrape_failures_total_; }
  // Times a due scrape waited for the budget.
  uint64_t deferredTotal() const { return deferred_total_; }
  size_t replicaCount() const { return by_name_.size(); }
  size_t ownedCount() const { return owned_count_; }

  // Ages of every replica's signals (time since the last successful read, here or by another
  // gateway) sampled once a second; the p99 over the last sample (seconds; NaN before one).
  double signalAgeP99Seconds() const { return age_p99_seconds_; }
  // Fraction of replicas whose signals were fresh (within three intervals) at the last sample.
  double freshFraction() const { return fresh_fraction_; }
  // p99 of this gateway's scrape latencies (start to parsed) over the last second, in seconds,
  // to the next power of two of a millisecond: when signals age, is it the engines' answer?
  double scrapeLatencyP99Seconds() const { return latency_p99_seconds_; }

 private:
  struct Target;
  struct Due {
    TimeNs at;
    uint32_t slot;
    uint32_t generation;
    bool operator>(const Due& o) const { return at > o.at; }
  };

  void schedule(Target& target, TimeNs at);
  void arm(TimeNs at);
  void onTimer();
  // Starts the scrapes due within a tick; returns the earlier of `next` and the next one due.
  TimeNs launchDue(TimeNs now, TimeNs next);
  void launch(Target& target, TimeNs now);
  Target* targetAt(uint32_t slot) const;  // null: a free slot, or past the end
  template <typename Items, typename SlotOf>
  void prefetchTargets(const Items& items, SlotOf slot_of) const;
  // Reads the answers that arrived (as the readiness set says); scrapes still waiting are
  // kept for the next tick.
  void readAnswers();
  TimeNs tick() const;
  void complete(Target& target, int status, std::string_view body);
  void sweep(TimeNs now);
  void sampleAges(TimeNs now);
  bool computeOwned(const ReplicaState& replica) const;
  Target* makeTarget(const std::shared_ptr<ReplicaState>& replica);
  void dropTarget(uint32_t slot);

  boost::asio::io_context& io_;
  const Clock& clock_;
  TimeNs interval_;
  ScrapePolicy policy_;
  ScrapeBudget budget_;
  boost::asio::steady_timer timer_;
  TimeNs armed_at_ = -1;
  bool stopped_ = false;

  std::vector<std::unique_ptr<Target>> slots_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<std::string_view, uint32_t> by_name_;  // views into ReplicaState names
  std::vector<Due> heap_;  // min-heap on `at`
  std::vector<Due> due_;   // scratch of launchDue()
  http::ScrapeReadiness readiness_;   // the scrape sockets, asked once a tick
  std::vector<http::ScrapeReadiness::Ready> ready_;  // scratch of readAnswers()
  uint32_t next_serial_ = 0;
  std::vector<uint32_t> to_collect_;  // slots whose scrapes run: the tick goes on while any do
  TimeNs collect_at_ = -1;            // the next tick that reads answers (-1: none running)

  std::vector<uint64_t> live_gateways_;
  uint64_t self_ = 0;
  size_t owned_count_ = 0;

  bool keep_records_ = false;
  std::vector<ScrapeRecord> records_;

  TimeNs next_sweep_ = 0;
  TimeNs next_age_sample_ = 0;
  std::vector<TimeNs> age_scratch_;
  double age_p99_seconds_ = std::numeric_limits<double>::quiet_NaN();
  double fresh_fraction_ = 0;
  std::array<uint64_t, 16> latency_buckets_{};  // bucket b: latency below 2^b ms
  double latency_p99_seconds_ = std::numeric_limits<double>::quiet_NaN();

  uint64_t scrapes_total_ = 0;
  uint64_t scrape_failures_total_ = 0;
  uint64_t deferred_total_ = 0;
};

}  // namespace switchyard::fleet
