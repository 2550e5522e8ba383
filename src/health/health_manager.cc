#include "health/health_manager.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "http/control_client.h"

namespace switchyard::health {

namespace asio = boost::asio;

// One replica's probe loop.
struct HealthManager::Prober {
  Prober(asio::io_context& io, std::shared_ptr<fleet::ReplicaState> r)
      : replica(std::move(r)),
        timer(io),
        client(io, replica->host(), replica->port(), replica->name()) {}
  std::shared_ptr<fleet::ReplicaState> replica;
  asio::steady_timer timer;  // the probe loop's wait; cancelled for a confirming probe
  http::ControlHttpClient client;
  bool stopped = false;
  bool probing = false;
  int64_t successes_at_last_round = -1;  // outcome successes when the probe loop last woke
};

HealthManager::HealthManager(asio::io_context& io, const Clock& clock, HealthSettings settings)
    : io_(io), clock_(clock), health_(std::move(settings)) {
  probe_budget_.configure(health_.settings().max_probes_per_second,
                          health_.settings().probe_interval);
}

HealthManager::~HealthManager() { stopAll(); }

void HealthManager::stopAll() {
  for (auto& [key, prober] : probers_) {
    prober->stopped = true;
    prober->timer.cancel();
  }
  probers_.clear();
}

void HealthManager::sync(std::shared_ptr<const fleet::FleetSnapshot> snapshot) {
  std::map<const fleet::ReplicaState*, std::shared_ptr<Prober>> next;
  health_.sync(snapshot, [&](const std::shared_ptr<fleet::ReplicaState>& added) {
    auto prober = std::make_shared<Prober>(io_, added);
    next.emplace(added.get(), prober);
    startProbing(prober);
  });
  for (const fleet::ModelEntry& model : snapshot->models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      auto it = probers_.find(entry.state.get());
      if (it == probers_.end()) continue;
      next.emplace(it->first, it->second);
      probers_.erase(it);
    }
  }
  for (auto& [key, prober] : probers_) {  // replicas that left the fleet
    prober->stopped = true;
    prober->timer.cancel();
  }
  probers_ = std::move(next);
}

void HealthManager::startProbing(const std::shared_ptr<Prober>& prober) {
  asio::co_spawn(
      io_,
      [this, prober]() -> asio::awaitable<void> {
        constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
        const HealthSettings& settings = health_.settings();
        while (!prober->stopped) {
          const bool urgent = health_.probeIsUrgent(*prober->replica);
          const fleet::ReplicaCounters& c = prober->replica->counters();
          const int64_t successes = c.outcome_successes_total.load(std::memory_order_relaxed);
          const bool proven = settings.skip_probes_with_traffic &&
                              prober->successes_at_last_round >= 0 &&
                              successes > prober->successes_at_last_round &&
                              c.consecutive_failures.load(std::memory_order_relaxed) == 0;
          prober->successes_at_last_round = successes;
          bool skip = false;
          if (!urgent && proven) {
            ++skipped_traffic_;
            skip = true;
          } else if (!urgent && !probe_budget_.take(clock_.now())) {
            ++deferred_budget_;
            skip = true;
          }
          if (skip) {
            prober->timer.expires_after(std::chrono::nanoseconds(settings.probe_interval));
            co_await prober->timer.async_wait(kTuple);
            continue;
          }
          ++probes_;
          prober->probing = true;
          const http::GetResult result = co_await prober->client.get(
              settings.probe_path, std::chrono::nanoseconds(settings.probe_timeout), 64 * 1024);
          prober->probing = false;
          if (prober->stopped) break;
          const bool ok = result.status >= 200 && result.status < 300;
          if (!ok) prober->client.close();
          health_.onProbe(*prober->replica, ok, clock_.now());
          prober->timer.expires_after(std::chrono::nanoseconds(settings.probe_interval));
          co_await prober->timer.async_wait(kTuple);
        }
      },
      asio::detached);
}

void HealthManager::tick() {
  health_.tick(clock_.now(), [this](const fleet::ReplicaState& replica) {
    auto it = probers_.find(&replica);
    if (it != probers_.end() && !it->second->probing) it->second->timer.cancel();
  });
}

}  // namespace switchyard::health
