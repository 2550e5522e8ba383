#include "fleet/telemetry_scraper.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "http/control_client.h"

namespace switchyard::fleet {

namespace asio = boost::asio;

struct TelemetryScraper::Loop {
  std::shared_ptr<ReplicaState> replica;
  bool stopped = false;
  asio::steady_timer timer;
  http::ControlHttpClient client;
  explicit Loop(asio::io_context& io, std::shared_ptr<ReplicaState> r)
      : replica(std::move(r)),
        timer(io),
        client(io, replica->host(), replica->port(), replica->name()) {}
};

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr uint64_t kMaxMetricsBytes = 8u << 20;

}  // namespace

TelemetryScraper::~TelemetryScraper() { stopAll(); }

void TelemetryScraper::stopAll() {
  for (auto& [name, loop] : loops_) {
    loop->stopped = true;
    loop->timer.cancel();
  }
  loops_.clear();
}

void TelemetryScraper::sync(const std::vector<std::shared_ptr<ReplicaState>>& replicas) {
  std::map<std::string, std::shared_ptr<Loop>> next;
  for (const auto& replica : replicas) {
    auto it = loops_.find(replica->name());
    if (it != loops_.end() && it->second->replica == replica) {
      next.emplace(replica->name(), it->second);
      loops_.erase(it);
    } else {
      start(replica);
      next.emplace(replica->name(), loops_[replica->name()]);
      loops_.erase(replica->name());
    }
  }
  for (auto& [name, loop] : loops_) {  // replicas that left the fleet
    loop->stopped = true;
    loop->timer.cancel();
  }
  loops_ = std::move(next);
}

void TelemetryScraper::start(const std::shared_ptr<ReplicaState>& replica) {
  auto loop = std::make_shared<Loop>(io_, replica);
  loops_[replica->name()] = loop;
  asio::co_spawn(
      io_,
      [this, loop]() -> asio::awaitable<void> {
        while (!loop->stopped) {
          const TimeNs started = clock_.now();
          const auto timeout = std::chrono::nanoseconds(std::max<TimeNs>(interval_, kNsPerSec));
          http::GetResult result = co_await loop->client.get("/metrics", timeout,
                                                             kMaxMetricsBytes);
          if (loop->stopped) break;
          ++scrapes_total_;
          if (result.status == 200) {
            loop->replica->storeSignals(parseEngineSignals(result.body), clock_.now());
          } else {
            ++scrape_failures_total_;
            loop->replica->markScrapeFailed(clock_.now());
          }
          const TimeNs elapsed = clock_.now() - started;
          loop->timer.expires_after(std::chrono::nanoseconds(std::max<TimeNs>(
              interval_ - elapsed, interval_ / 10)));
          auto [ec] = co_await loop->timer.async_wait(kTuple);
          (void)ec;
        }
      },
      asio::detached);
}

}  // namespace switchyard::fleet
