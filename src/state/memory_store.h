// MemoryStore: what Redis holds for a fleet of gateways, kept in this process.
//
// Per (model, replica, gateway) in-flight and token counts, per-model gateway heartbeats, the
// model-wide GCRA rate limit, session pins with a sliding TTL and job owners with a TTL; the
// same semantics as the Redis scripts (src/state/redis/redis_scripts.cc), with time passed in.
//
// Thread-safe. Models and jobs are spread over striped mutexes by hash, so callers touching
// different models rarely contend and no single lock sits on every call. Each call holds one
// stripe's mutex for a few map lookups; inserting a new key allocates, updating one does not.
#pragma once

#include <array>
#include <deque>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "state/shared_state.h"

namespace switchyard::state {

class MemoryStore {
 public:
  MemoryStore();
  ~MemoryStore();
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  AdmitResult admit(const AdmitRequest& request, std::string_view gateway, TimeNs now);
  // An API key's budgets (auth/quota_bucket.h arithmetic), and their correction at completion.
  QuotaAnswer takeQuota(const QuotaRequest& request, TimeNs now);
  void settleQuota(std::string_view key, int64_t tpm, int64_t delta_tokens);
  void release(std::string_view model, std::string_view replica, std::string_view gateway);

  SessionPin lookupSession(std::string_view model, std::string_view session, TimeNs ttl,
                           TimeNs now);
  SessionPin pinSession(std::string_view model, std::string_view session,
                        std::string_view expected, std::string_view replica, TimeNs ttl,
                        TimeNs now);

  void recordJob(std::string_view job_id, std::string_view model, std::string_view replica,
                 TimeNs ttl, TimeNs now);
  JobOwner lookupJob(std::string_view job_id, TimeNs now);

  void publish(std::span<const ReplicaReport> reports, std::string_view gateway,
               TimeNs liveness_ttl, TimeNs now);
  std::vector<ReplicaGlobalView> read(std::span<const ReplicaReport> replicas,
                                      std::string_view gateway, TimeNs now);
  std::vector<ModelChanges> readChanges(std::span<const ChangeQuery> queries,
                                        std::string_view gateway, TimeNs now);
  void retire(std::span<const ReplicaReport> replicas, std::string_view gateway);
  SignalExchange exchangeSignals(std::string_view payload, std::string_view cursor,
                                 std::string_view gateway, TimeNs liveness_ttl, TimeNs now);

  // Coordination (SharedStateSync::holdLease, putMark, readMarks).
  bool holdLease(std::string_view name, std::string_view gateway, TimeNs ttl, TimeNs now);
  void putMark(std::string_view set, std::string_view key, std::string_view value, TimeNs ttl,
               TimeNs now);
  std::vector<Mark> readMarks(std::string_view set, TimeNs now);

  // How long a gateway's token counters outlive its last publish (as the Redis keys do).
  static constexpr TimeNs kTokenRetention = 3600 * kNsPerSec;

 private:
  struct Stripe;
  struct Quotas;
  static constexpr size_t kStripes = 16;
  Stripe& stripeFor(std::string_view key);
  QuotaAnswer takeQuotaLocked(const QuotaRequest& request, TimeNs now);

  std::array<std::unique_ptr<Stripe>, kStripes> stripes_;
  // Keys' budgets: one mutex, taken after a model stripe's (never before), so a merged admission
  // cannot deadlock with a quota-only call.
  std::unique_ptr<Quotas> quotas_;
  struct Telemetry;
  std::unique_ptr<Telemetry> telemetry_;  // fleet-wide, behind its own mutex
  struct Coordination;  // leases and marks: rare control-plane calls, one mutex
  std::unique_ptr<Coordination> coordination_;
};

}  // namespace switchyard::state
