#include "fleet/telemetry_scraper.h"

#include <algorithm>
#include <cmath>

#include "fleet/metrics_target.h"
#include "http/scrape_connection.h"

namespace switchyard::fleet {

namespace asio = boost::asio;

namespace {

constexpr size_t kMaxMetricsBytes = 8u << 20;
// The scheduler's tick: a wake-up starts every scrape due within one tick and reads the
// answers that have arrived, as the readiness set names them (scrape sockets do not wake the
// thread per answer: http/scrape_connection.h). It grows with the
// replicas this gateway scrapes: about 10 ms for a thousand at the 100 ms interval (a hundred
// wake-ups a second instead of one per answer), 1 ms for a few dozen (which wake the thread
// little either way, and whose signals then arrive at most a millisecond late). Never more
// than a tenth of the interval: a scrape is at most a tick early and a signal a tick older.
constexpr TimeNs kMaxTick = 10 * kNsPerMs;
constexpr TimeNs kMinTick = 1 * kNsPerMs;
constexpr int64_t kReplicasPerMaxTick = 1024;
constexpr TimeNs kSweepEvery = 100 * kNsPerMs;
constexpr TimeNs kAgeSampleEvery = 1 * kNsPerSec;

}  // namespace

struct TelemetryScraper::Target final : http::ScrapeConnection::Sink {
  TelemetryScraper* owner = nullptr;
  std::shared_ptr<ReplicaState> replica;
  std::shared_ptr<http::ScrapeConnection> connection;
  uint32_t slot = 0;
  uint32_t generation = 0;  // bumped when the target stops being scheduled (heap entries die)
  uint64_t readiness_key = 0;  // this target's serial and slot: a reused slot has another
  bool owned = true;
  bool in_flight = false;
  TimeNs started_at = 0;
  ScrapeHistory history;

  void onScrape(int status, std::string_view body) override {
    owner->complete(*this, status, body);
  }
};

TelemetryScraper::TelemetryScraper(asio::io_context& io, const Clock& clock, TimeNs interval,
                                   ScrapePolicy policy)
    : io_(io), clock_(clock), interval_(interval), policy_(policy), timer_(io) {
  budget_.configure(policy_.max_scrapes_per_second, interval_);
}

TelemetryScraper::~TelemetryScraper() { stopAll(); }

void TelemetryScraper::setInterval(TimeNs interval) {
  interval_ = interval;
  budget_.configure(policy_.max_scrapes_per_second, interval_);
}

void TelemetryScraper::setPolicy(const ScrapePolicy& policy) {
  const bool target_changed = policy.family_filter != policy_.family_filter;
  policy_ = policy;
  if (target_changed) {
    for (const auto& target : slots_) {
      if (target) target->connection->setTarget(engineMetricsTarget(policy_.family_filter));
    }
  }
  budget_.configure(policy_.max_scrapes_per_second, interval_);
}

void TelemetryScraper::stopAll() {
  stopped_ = true;
  timer_.cancel();
  for (auto& target : slots_) {
    if (target) target->connection->detach();
  }
  slots_.clear();
  free_slots_.clear();
  by_name_.clear();
  heap_.clear();
  to_collect_.clear();
  collect_at_ = -1;
  owned_count_ = 0;
}

ReplicaState* TelemetryScraper::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : slots_[it->second]->replica.get();
}

bool TelemetryScraper::owns(const ReplicaState& replica) const {
  const auto it = by_name_.find(replica.name());
  return it != by_name_.end() && slots_[it->second]->owned;
}

bool TelemetryScraper::computeOwned(const ReplicaState& replica) const {
  if (live_gateways_.empty()) return true;
  const int owner = rendezvousOwner(replica.nameHash(), live_gateways_);
  return owner >= 0 && live_gateways_[static_cast<size_t>(owner)] == self_;
}

TelemetryScraper::Target* TelemetryScraper::makeTarget(
    const std::shared_ptr<ReplicaState>& replica) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  auto target = std::make_unique<Target>();
  target->owner = this;
  target->replica = replica;
  target->slot = slot;
  target->connection = std::make_shared<http::ScrapeConnection>(
      io_, replica->host(), replica->port(), replica->name(),
      engineMetricsTarget(policy_.family_filter), kMaxMetricsBytes, target.get());
  target->readiness_key = (uint64_t{next_serial_++} << 32) | slot;
  target->connection->watchWith(&readiness_, target->readiness_key);
  Target* raw = target.get();
  slots_[slot] = std::move(target);
  by_name_.emplace(raw->replica->name(), slot);
  return raw;
}

void TelemetryScraper::dropTarget(uint32_t slot) {
  Target& target = *slots_[slot];
  target.connection->detach();
  if (target.owned) --owned_count_;
  by_name_.erase(target.replica->name());
  slots_[slot].reset();
  free_slots_.push_back(slot);
}

void TelemetryScraper::sync(const std::vector<std::shared_ptr<ReplicaState>>& replicas) {
  stopped_ = false;
  const TimeNs now = clock_.now();
  std::vector<bool> keep(slots_.size(), false);
  for (const auto& replica : replicas) {
    const auto it = by_name_.find(replica->name());
    if (it != by_name_.end() && slots_[it->second]->replica == replica) {
      keep[it->second] = true;
      continue;
    }
    if (it != by_name_.end()) dropTarget(it->second);  // same name, new record
    Target* target = makeTarget(replica);
    if (target->slot >= keep.size()) keep.resize(target->slot + 1, false);
    keep[target->slot] = true;
    target->owned = computeOwned(*replica);
    if (target->owned) {
      ++owned_count_;
      // New replicas spread over one interval rather than all at once.
      schedule(*target, now + static_cast<TimeNs>(replica->nameHash() %
                                                   static_cast<uint64_t>(interval_ + 1)));
    }
  }
  for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
    if (slots_[slot] && !keep[slot]) dropTarget(slot);  // replicas that left the fleet
  }
}

void TelemetryScraper::setShard(std::vector<uint64_t> live_gateways, uint64_t self) {
  std::sort(live_gateways.begin(), live_gateways.end());
  live_gateways.erase(std::unique(live_gateways.begin(), live_gateways.end()),
                      live_gateways.end());
  if (live_gateways == live_gateways_ && self == self_) return;
  live_gateways_ = std::move(live_gateways);
  self_ = self;
  const TimeNs now = clock_.now();
  for (auto& target : slots_) {
    if (!target) continue;
    const bool owned = computeOwned(*target->replica);
    if (owned == target->owned) continue;
    target->owned = owned;
    if (owned) {
      ++owned_count_;
      // A replica gained (a gateway left, or shared state went away): its last shared signal
      // is aging, so scrape it within half an interval — spread, not all at once.
      if (!target->in_flight) {
        schedule(*target, now + static_cast<TimeNs>(target->replica->nameHash() %
                                                     static_cast<uint64_t>(interval_ / 2 + 1)));
      }
    } else {
      --owned_count_;
      ++target->generation;  // its heap entry dies; a scrape in flight still completes
    }
  }
}

void TelemetryScraper::schedule(Target& target, TimeNs at) {
  heap_.push_back(Due{at, target.slot, target.generation});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  arm(at);
}

void TelemetryScraper::arm(TimeNs at) {
  if (stopped_) return;
  if (armed_at_ >= 0 && armed_at_ <= at) return;  // an earlier wake-up is already set
  armed_at_ = at;
  timer_.expires_after(std::chrono::nanoseconds(std::max<TimeNs>(0, at - clock_.now())));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: re-armed earlier, or stopping
    armed_at_ = -1;
    onTimer();
  });
}

void TelemetryScraper::onTimer() {
  if (stopped_) return;
  const TimeNs now = clock_.now();
  if (now >= next_sweep_) {
    sweep(now);
    next_sweep_ = now + kSweepEvery;
  }
  if (now >= next_age_sample_) {
    sampleAges(now);
    next_age_sample_ = now + kAgeSampleEvery;
  }
  if (collect_at_ >= 0 && now >= collect_at_) readAnswers();
  TimeNs next = launchDue(now, std::min(next_sweep_, next_age_sample_));
  if (collect_at_ >= 0) next = std::min(next, collect_at_);
  arm(std::max(next, now + 1));
}

TimeNs TelemetryScraper::launchDue(TimeNs now, TimeNs next) {
  const TimeNs horizon = now + tick();
  due_.clear();
  while (!heap_.empty() && heap_.front().at <= horizon) {
    due_.push_back(heap_.front());
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
  }
  if (!heap_.empty()) next = std::min(next, heap_.front().at);
  prefetchTargets(due_, [](const Due& due) { return due.slot; });
  for (size_t i = 0; i < due_.size(); ++i) {
    const Due& due = due_[i];
    Target* target = targetAt(due.slot);
    if (!target || target->generation != due.generation || !target->owned) continue;
    if (!budget_.take(now)) {
      // Over the budget: the rest wait in the heap for the next token.
      ++deferred_total_;
      for (size_t j = i; j < due_.size(); ++j) {
        heap_.push_back(due_[j]);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      }
      return std::min(next, budget_.nextToken(now));
    }
    launch(*target, now);
  }
  return next;
}

TelemetryScraper::Target* TelemetryScraper::targetAt(uint32_t slot) const {
  return slot < slots_.size() ? slots_[slot].get() : nullptr;
}

template <typename Items, typename SlotOf>
void TelemetryScraper::prefetchTargets(const Items& items, SlotOf slot_of) const {
  // A target is touched once an interval, so its objects (target, connection, request, read
  // buffer, replica) are cold: a cache miss each, one after another when used in turn. Asking
  // for all of a batch's first lets the misses overlap. The second pass reads the targets
  // the first asked for, to reach what they point to.
  for (const auto& item : items) {
    if (const Target* target = targetAt(slot_of(item))) __builtin_prefetch(target);
  }
  for (const auto& item : items) {
    const Target* target = targetAt(slot_of(item));
    if (!target) continue;
    target->connection->prefetch();
    __builtin_prefetch(target->replica.get());
  }
}

void TelemetryScraper::launch(Target& target, TimeNs now) {
  target.in_flight = true;
  target.started_at = now;
  if (!target.connection->start()) {
    target.in_flight = false;  // cannot happen: one at a time
    return;
  }
  to_collect_.push_back(target.slot);
  if (collect_at_ < 0) collect_at_ = now + tick();
}

TimeNs TelemetryScraper::tick() const {
  const TimeNs longest = std::max(kMinTick, std::min(interval_ / 10, kMaxTick));
  const TimeNs by_fleet =
      longest * static_cast<TimeNs>(owned_count_) / kReplicasPerMaxTick;
  return std::clamp(by_fleet, kMinTick, longest);
}

void TelemetryScraper::readAnswers() {
  collect_at_ = -1;
  // Each named socket is read until a short read (or its close), so a second batch holds other
  // sockets; the bound keeps a tick finite while answers keep arriving.
  for (size_t batch = 0; batch <= slots_.size() / 512 + 1; ++batch) {
    const bool more = readiness_.ready(ready_);
    prefetchTargets(ready_, [](const http::ScrapeReadiness::Ready& r) {
      return static_cast<uint32_t>(r.key);
    });
    for (const http::ScrapeReadiness::Ready& r : ready_) {
      Target* target = targetAt(static_cast<uint32_t>(r.key));
      if (target && target->readiness_key == r.key) target->connection->onReadable(r.peer_closed);
    }
    if (!more) break;
  }
  // The scrapes still running keep the tick going; a request the socket could not take whole
  // (never on an empty socket) is sent on.
  size_t kept = 0;
  for (const uint32_t slot : to_collect_) {
    Target* target = targetAt(slot);
    if (!target || !target->in_flight) continue;
    if (target->connection->sending()) target->connection->collect();
    if (target->in_flight) to_collect_[kept++] = slot;
  }
  to_collect_.resize(kept);
  if (!to_collect_.empty()) collect_at_ = clock_.now() + tick();
}

void TelemetryScraper::complete(Target& target, int status, std::string_view body) {
  target.in_flight = false;
  const TimeNs now = clock_.now();
  ++scrapes_total_;
  size_t bucket = 0;
  while (bucket + 1 < latency_buckets_.size() &&
         now - target.started_at >= (TimeNs{1} << bucket) * kNsPerMs) {
    ++bucket;
  }
  ++latency_buckets_[bucket];
  const bool ok = status == 200;
  EngineSignals signals;
  if (ok) {
    signals = parseEngineSignals(body);
    target.replica->storeSignals(signals, now);
  } else {
    ++scrape_failures_total_;
    target.replica->markScrapeFailed(now);
  }
  if (keep_records_) records_.push_back(ScrapeRecord{target.replica, ok, signals, now});
  target.history.record(ok, signals, policy_);
  if (stopped_ || !target.owned) return;
  const TimeNs period = scrapePeriod(policy_, interval_, target.history);
  schedule(target, std::max(target.started_at + period, now + period / 10));
}

void TelemetryScraper::sweep(TimeNs now) {
  const TimeNs timeout = std::max<TimeNs>(interval_, kNsPerSec);
  for (auto& target : slots_) {
    if (target && target->in_flight && now - target->started_at > timeout) {
      target->connection->cancel();  // reports status 0 through complete()
    }
  }
}

void TelemetryScraper::sampleAges(TimeNs now) {
  age_scratch_.clear();
  size_t fresh = 0;
  const TimeNs max_age = 3 * interval_;
  for (const auto& target : slots_) {
    if (!target) continue;
    const ReplicaState& r = *target->replica;
    const TimeNs read_at = r.signalsReadAt();
    // Never read: as old as the gateway's knowledge of the replica, i.e. unknown (max).
    const TimeNs age = read_at < 0 ? std::numeric_limits<TimeNs>::max() : now - read_at;
    age_scratch_.push_back(age);
    if (r.signalsValid() && age <= max_age) ++fresh;
  }
  if (age_scratch_.empty()) return;
  const size_t k = std::min(age_scratch_.size() - 1,
                            static_cast<size_t>(std::ceil(0.99 * age_scratch_.size())) - 1);
  std::nth_element(age_scratch_.begin(), age_scratch_.begin() + static_cast<ptrdiff_t>(k),
                   age_scratch_.end());
  const TimeNs p99 = age_scratch_[k];
  age_p99_seconds_ = p99 == std::numeric_limits<TimeNs>::max()
                         ? std::numeric_limits<double>::infinity()
                         : static_cast<double>(p99) / kNsPerSec;
  fresh_fraction_ = static_cast<double>(fresh) / static_cast<double>(age_scratch_.size());
  uint64_t total = 0;
  for (const uint64_t n : latency_buckets_) total += n;
  if (total > 0) {
    uint64_t seen = 0;
    for (size_t b = 0; b < latency_buckets_.size(); ++b) {
      seen += latency_buckets_[b];
      if (static_cast<double>(seen) >= 0.99 * static_cast<double>(total)) {
        latency_p99_seconds_ = static_cast<double>(TimeNs{1} << b) / 1000.0;
        break;
      }
    }
    latency_buckets_.fill(0);
  }
}

}  // namespace switchyard::fleet
