#include "state/memory_state.h"

#include <utility>

namespace switchyard::state {
namespace {

// What a memory client and a memory sync both hold. Answers are immediate, so every answered
// call lands in the latency histogram's first bucket; the counters still tell how often the
// gateway consulted shared state.
class MemoryEndpoint {
 public:
  MemoryEndpoint(std::shared_ptr<MemoryStore> store, std::string gateway, const Clock& clock)
      : store_(std::move(store)), gateway_(std::move(gateway)), clock_(clock) {
    stats_.connected.store(true, std::memory_order_relaxed);
  }

 protected:
  // Counts one call and answers the time to make it at.
  TimeNs startCall() {
    stats_.calls.fetch_add(1, std::memory_order_relaxed);
    stats_.latency_buckets[0].fetch_add(1, std::memory_order_relaxed);
    return clock_.now();
  }

  std::shared_ptr<MemoryStore> store_;
  std::string gateway_;
  const Clock& clock_;
  SharedStateStats stats_;
};

class MemoryClient final : public SharedStateClient, private MemoryEndpoint {
 public:
  using MemoryEndpoint::MemoryEndpoint;

  bool distributed() const override { return false; }

  boost::asio::awaitable<AdmitResult> admit(const AdmitRequest& request) override {
    co_return store_->admit(request, gateway_, startCall());
  }
  void release(std::string_view model, std::string_view replica) override {
    store_->release(model, replica, gateway_);
  }
  boost::asio::awaitable<SessionPin> lookupSession(std::string_view model,
                                                   std::string_view session,
                                                   TimeNs ttl) override {
    co_return store_->lookupSession(model, session, ttl, startCall());
  }
  boost::asio::awaitable<SessionPin> pinSession(std::string_view model, std::string_view session,
                                                std::string_view expected,
                                                std::string_view replica, TimeNs ttl) override {
    co_return store_->pinSession(model, session, expected, replica, ttl, startCall());
  }
  void recordJob(std::string_view job_id, std::string_view model, std::string_view replica,
                 TimeNs ttl) override {
    store_->recordJob(job_id, model, replica, ttl, clock_.now());
  }
  boost::asio::awaitable<JobOwner> lookupJob(std::string_view job_id) override {
    co_return store_->lookupJob(job_id, startCall());
  }
  boost::asio::awaitable<QuotaResult> checkQuota(const QuotaRequest& request) override {
    co_return QuotaResult{false, store_->takeQuota(request, startCall())};
  }
  void settleQuota(std::string_view key, int64_t tpm, int64_t delta_tokens) override {
    store_->settleQuota(key, tpm, delta_tokens);
  }
  const SharedStateStats& stats() const override { return stats_; }
};

class MemorySync final : public SharedStateSync, private MemoryEndpoint {
 public:
  using MemoryEndpoint::MemoryEndpoint;

  bool distributed() const override { return false; }

  boost::asio::awaitable<bool> publish(std::span<const ReplicaReport> reports,
                                       TimeNs liveness_ttl) override {
    store_->publish(reports, gateway_, liveness_ttl, startCall());
    co_return true;
  }
  boost::asio::awaitable<std::optional<std::vector<ReplicaGlobalView>>> read(
      std::span<const ReplicaReport> replicas) override {
    co_return store_->read(replicas, gateway_, startCall());
  }
  boost::asio::awaitable<std::optional<std::vector<ModelChanges>>> readChanges(
      std::span<const ChangeQuery> queries) override {
    co_return store_->readChanges(queries, gateway_, startCall());
  }
  boost::asio::awaitable<bool> retire(std::span<const ReplicaReport> replicas) override {
    startCall();
    store_->retire(replicas, gateway_);
    co_return true;
  }
  boost::asio::awaitable<std::optional<SignalExchange>> exchangeSignals(
      std::string_view payload, std::string_view cursor, TimeNs liveness_ttl) override {
    co_return store_->exchangeSignals(payload, cursor, gateway_, liveness_ttl, startCall());
  }
  boost::asio::awaitable<std::optional<bool>> holdLease(std::string_view name,
                                                        TimeNs ttl) override {
    co_return store_->holdLease(name, gateway_, ttl, startCall());
  }
  boost::asio::awaitable<bool> putMark(std::string_view set, std::string_view key,
                                       std::string_view value, TimeNs ttl) override {
    store_->putMark(set, key, value, ttl, startCall());
    co_return true;
  }
  boost::asio::awaitable<std::optional<std::vector<Mark>>> readMarks(
      std::string_view set) override {
    co_return store_->readMarks(set, startCall());
  }
  const SharedStateStats& stats() const override { return stats_; }
};

class MemoryBackend final : public SharedStateBackend {
 public:
  MemoryBackend(std::shared_ptr<MemoryStore> store, std::string gateway, const Clock& clock)
      : store_(std::move(store)), gateway_(std::move(gateway)), clock_(clock) {}

  std::unique_ptr<SharedStateClient> makeClient(boost::asio::any_io_executor) override {
    return std::make_unique<MemoryClient>(store_, gateway_, clock_);
  }
  std::unique_ptr<SharedStateSync> makeSync(boost::asio::any_io_executor) override {
    return std::make_unique<MemorySync>(store_, gateway_, clock_);
  }
  const std::string& gatewayId() const override { return gateway_; }

 private:
  std::shared_ptr<MemoryStore> store_;
  std::string gateway_;
  const Clock& clock_;
};

}  // namespace

std::shared_ptr<SharedStateBackend> makeMemoryBackend(std::shared_ptr<MemoryStore> store,
                                                      std::string gateway_id,
                                                      const Clock& clock) {
  return std::make_shared<MemoryBackend>(std::move(store), std::move(gateway_id), clock);
}

}  // namespace switchyard::state
