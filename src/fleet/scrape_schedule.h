// How often each replica is scraped, under which budget, and which gateway scrapes it.
//
// Pure policy for the telemetry scraper (fleet/telemetry_scraper.h); times are passed in.
//
// Period. The base is the scrape interval. Adaptive scheduling (docs/operations.md,
// "Telemetry at scale"):
//  - a replica near the KV-critical threshold (KV usage at or above `hot_kv_usage`) is scraped
//    `hot_speedup` times as often: that is where a stale signal picks a replica that is about to
//    preempt;
//  - a replica whose signals have not moved for `stable_after` scrapes (running and waiting by
//    less than one request, KV usage by less than `stable_kv_delta`) and that is not near the
//    threshold is scraped every `stable_stretch` intervals — idle fleets and steady replicas are
//    most of a large fleet;
//  - anything else (moving signals, failed or unknown ones) every interval.
// With the default stretch of 2 a stable replica's signal is at most two intervals old when
// read locally, which leaves one interval for sharing it (fleet signals are never used older
// than three intervals).
//
// Budget. `max_scrapes_per_second` (0: none) is a token bucket over this gateway's scrapes:
// when it is empty, due scrapes wait in due-time order, so every replica's period stretches by
// the same factor and hot replicas keep their relative advantage.
//
// Shard. With several gateways each replica is scraped by exactly one of the live ones: the
// rendezvous (highest random weight) owner over the gateways' id hashes. Every gateway computes
// the same owner from the same live set; when a gateway leaves, only its replicas move.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/clock.h"
#include "fleet/engine_signals.h"

namespace switchyard::fleet {

struct ScrapePolicy {
  double max_scrapes_per_second = 0;  // 0: no budget
  bool adaptive = true;
  double stable_stretch = 2.0;
  int stable_after = 3;
  double stable_kv_delta = 0.02;
  double hot_kv_usage = 0.70;
  double hot_speedup = 2.0;
  TimeNs min_period = 10 * kNsPerMs;
  bool family_filter = true;  // engineMetricsTarget(): ask the engine for the read families only
};

// What the scheduler remembers of one replica's recent scrapes.
struct ScrapeHistory {
  EngineSignals last;
  bool last_ok = false;
  int unchanged_runs = 0;  // consecutive successful scrapes whose signals did not move

  // Folds one scrape's outcome in.
  void record(bool ok, const EngineSignals& signals, const ScrapePolicy& policy);
};

// Time from this scrape's start to the next one's.
TimeNs scrapePeriod(const ScrapePolicy& policy, TimeNs interval, const ScrapeHistory& history);
// The shortest period scrapePeriod() gives under `policy`: a hot replica's when adaptive.
TimeNs shortestScrapePeriod(const ScrapePolicy& policy, TimeNs interval);

// A token bucket for the scrape budget. rate 0: unlimited.
class ScrapeBudget {
 public:
  void configure(double rate, TimeNs interval);
  // Takes one token if there is one.
  bool take(TimeNs now);
  // When the next token will be there (now if unlimited or available).
  TimeNs nextToken(TimeNs now) const;
  bool limited() const { return rate_ > 0; }

 private:
  void refill(TimeNs now);
  double rate_ = 0;
  double burst_ = 1;
  double tokens_ = 1;
  TimeNs last_ = 0;
  bool started_ = false;
};

// A 64-bit mix (splitmix64's finalizer): spreads similar hashes apart.
inline uint64_t mixHash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The gateway (index into `gateways`, their id hashes) that scrapes the replica whose name hash
// is `replica`: the highest mixHash(gateway ^ replica). -1 when `gateways` is empty.
int rendezvousOwner(uint64_t replica, std::span<const uint64_t> gateways);

// FNV-1a, as ReplicaState::nameHash: gateways hash each other's ids alike.
uint64_t stableHash(std::string_view text);

}  // namespace switchyard::fleet
