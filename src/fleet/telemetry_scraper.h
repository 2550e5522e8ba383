// TelemetryScraper: polls every replica's /metrics on the control thread and stores the mapped
// EngineSignals in its ReplicaState, stamped with the time of the read.
//
// One coroutine per replica keeps a keep-alive connection and scrapes every `interval`; a failed
// or timed-out scrape marks the replica's signals unknown at once. sync() starts loops for new
// replicas and stops loops for replicas that left the fleet. Runs only on the io_context given at
// construction; not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "fleet/replica_state.h"

namespace switchyard::fleet {

class TelemetryScraper {
 public:
  TelemetryScraper(boost::asio::io_context& io, const Clock& clock, TimeNs interval)
      : io_(io), clock_(clock), interval_(interval) {}
  ~TelemetryScraper();

  void setInterval(TimeNs interval) { interval_ = interval; }
  void sync(const std::vector<std::shared_ptr<ReplicaState>>& replicas);
  void stopAll();

  uint64_t scrapesTotal() const { return scrapes_total_; }
  uint64_t scrapeFailuresTotal() const { return scrape_failures_total_; }

 private:
  struct Loop;
  void start(const std::shared_ptr<ReplicaState>& replica);

  boost::asio::io_context& io_;
  const Clock& clock_;
  TimeNs interval_;
  std::map<std::string, std::shared_ptr<Loop>> loops_;
  uint64_t scrapes_total_ = 0;
  uint64_t scrape_failures_total_ = 0;
};

}  // namespace switchyard::fleet
