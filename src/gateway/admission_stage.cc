#include "gateway/admission_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "admission/inflight_admission.h"

namespace switchyard::gateway {
namespace {

// A request counted in a replica's `running` that waits for shared state to lease it a slot
// (ReplicaCounters::awaiting_slot), until the answer comes or the request is gone.
class AwaitingSlot {
 public:
  explicit AwaitingSlot(fleet::ReplicaCounters& counters) : counters_(&counters) {
    counters_->awaiting_slot.fetch_add(1, std::memory_order_relaxed);
  }
  AwaitingSlot(const AwaitingSlot&) = delete;
  AwaitingSlot& operator=(const AwaitingSlot&) = delete;
  ~AwaitingSlot() { end(); }
  void end() {
    if (counters_ == nullptr) return;
    counters_->awaiting_slot.fetch_sub(1, std::memory_order_relaxed);
    counters_ = nullptr;
  }

 private:
  fleet::ReplicaCounters* counters_;
};

}  // namespace

std::optional<Refusal> AdmissionStage::beforeRouting(const fleet::ModelEntry& model, TimeNs now) {
  // Model-wide rate limit: per-replica RPS x routable replicas, shared by all workers.
  if (model.limits.requests_per_second_per_replica <= 0 || sharesLimits(model)) {
    return std::nullopt;
  }
  const TimeNs wait = model.runtime->rate.tryAcquire(now);
  if (wait <= 0) return std::nullopt;
  return rateLimited(wait);
}

ReplicaAdmission AdmissionStage::onReplicaHere(const fleet::ModelEntry& model,
                                               fleet::ReplicaState& replica) {
  return admission::admitLocally(replica, model.limits.max_inflight_per_replica)
             ? ReplicaAdmission::kAdmitted
             : ReplicaAdmission::kAtLimit;
}

boost::asio::awaitable<ReplicaAdmission> AdmissionStage::onReplica(
    const fleet::ModelEntry& model, fleet::ReplicaState& replica, TimeNs now,
    SharedAdmission& shared, std::optional<Refusal>& refusal, RequestAuth* key_budgets) {
  const int64_t limit = model.limits.max_inflight_per_replica;
  // Check-and-admit (admission/inflight_admission.h); other gateways' requests count too, as
  // last read from shared state, then exactly in the shared admission below.
  if (onReplicaHere(model, replica) == ReplicaAdmission::kAtLimit) {
    co_return ReplicaAdmission::kAtLimit;
  }
  if (leasesSlots(model)) {
    co_return co_await onLeasedReplica(model, replica, now, shared, refusal, key_budgets);
  }
  if (!sharesLimits(model)) co_return ReplicaAdmission::kAdmitted;

  const double per_replica_rate = model.limits.requests_per_second_per_replica;
  const double model_rate =
      per_replica_rate *
      std::max(1, model.runtime->routable_replicas.load(std::memory_order_relaxed));
  state::AdmitRequest request{model.name,    replica.name(), limit, model_rate,
                              std::max(1.0, model_rate), liveness_ttl_};
  if (key_budgets != nullptr) request.quota = &key_budgets->quota;
  const state::AdmitResult admitted = co_await shared_.admit(request);
  notice_.note(admitted.verdict == state::AdmitVerdict::kDegraded);
  switch (admitted.verdict) {
    case state::AdmitVerdict::kAdmitted:
      if (key_budgets != nullptr) key_budgets->stage->onSharedAnswer(*key_budgets, admitted.quota);
      shared.hold(shared_, model.name, replica.name());
      shared.note(observe::InflightAdmission::kShared);
      co_return ReplicaAdmission::kAdmitted;
    case state::AdmitVerdict::kQuotaLimited:
      admission::releaseLocally(replica);
      refusal = key_budgets->stage->onSharedAnswer(*key_budgets, admitted.quota);
      co_return ReplicaAdmission::kRateLimited;
    case state::AdmitVerdict::kInflightLimit:
      admission::releaseLocally(replica);
      co_return ReplicaAdmission::kAtLimit;
    case state::AdmitVerdict::kRateLimited:
      admission::releaseLocally(replica);
      refusal = rateLimited(admitted.retry_after);
      co_return ReplicaAdmission::kRateLimited;
    case state::AdmitVerdict::kDegraded:
      break;
  }
  // Local decisions: this gateway stays within its share of the replica's limit (the shares of
  // all live gateways add up to the limit); the rate limit falls back to this gateway's share
  // of the model-wide rate.
  if (withinOwnShare(model, replica) == ReplicaAdmission::kAtLimit) {
    co_return ReplicaAdmission::kAtLimit;
  }
  if (per_replica_rate > 0) {
    if (const TimeNs wait = model.runtime->rate.tryAcquire(now); wait > 0) {
      admission::releaseLocally(replica);
      refusal = rateLimited(wait);
      co_return ReplicaAdmission::kRateLimited;
    }
  }
  if (key_budgets != nullptr) {
    refusal = key_budgets->stage->onSharedDegraded(
        *key_budgets, model.runtime->live_gateways.load(std::memory_order_relaxed), now);
    if (refusal) {
      admission::releaseLocally(replica);
      co_return ReplicaAdmission::kRateLimited;
    }
  }
  shared.holdLocal(shared_, model.name, replica);
  shared.note(observe::InflightAdmission::kLocalShare);
  co_return ReplicaAdmission::kAdmitted;
}

boost::asio::awaitable<ReplicaAdmission> AdmissionStage::onLeasedReplica(
    const fleet::ModelEntry& model, fleet::ReplicaState& replica, TimeNs now,
    SharedAdmission& shared, std::optional<Refusal>& refusal, RequestAuth* key_budgets) {
  const int64_t limit = model.limits.max_inflight_per_replica;
  const int live_gateways = model.runtime->live_gateways.load(std::memory_order_relaxed);
  const int64_t lead =
      admission::InflightSlots::lead(limit, live_gateways, shared_config_.worker_count,
                                     shared_config_.inflight_slots_ahead);
  if (slots_.take(model.name, replica.name())) {
    // Held at once: however the request ends from here, its slot goes back to the lease.
    shared.holdSlot(shared_, slots_, model.name, replica.name(), lead);
    shared.note(observe::InflightAdmission::kLeasedSlot);
    if (key_budgets != nullptr) {
      refusal = co_await keyBudgetsAlone(model, *key_budgets, now);
      if (refusal) {
        admission::releaseLocally(replica);
        co_return ReplicaAdmission::kRateLimited;
      }
    }
    co_return ReplicaAdmission::kAdmitted;
  }
  // No free slot: lease one for this request and `lead` more ahead, with the key's budgets, in
  // one call.
  state::SlotRequest request{model.name, replica.name(), limit, 1 + lead, liveness_ttl_};
  if (key_budgets != nullptr) request.quota = &key_budgets->quota;
  AwaitingSlot awaiting(replica.counters());
  const state::SlotGrant grant = co_await shared_.growSlots(request);
  awaiting.end();
  notice_.note(grant.degraded);
  if (grant.degraded) {
    if (withinOwnShare(model, replica) == ReplicaAdmission::kAtLimit) {
      co_return ReplicaAdmission::kAtLimit;
    }
    if (key_budgets != nullptr) {
      refusal = key_budgets->stage->onSharedDegraded(*key_budgets, live_gateways, now);
      if (refusal) {
        admission::releaseLocally(replica);
        co_return ReplicaAdmission::kRateLimited;
      }
    }
    shared.note(observe::InflightAdmission::kLocalShare);
    co_return ReplicaAdmission::kAdmitted;
  }
  if (grant.granted <= 0) {
    admission::releaseLocally(replica);
    if (key_budgets != nullptr && grant.quota.verdict != state::QuotaVerdict::kAdmitted) {
      refusal = key_budgets->stage->onSharedAnswer(*key_budgets, grant.quota);
      co_return ReplicaAdmission::kRateLimited;
    }
    co_return ReplicaAdmission::kAtLimit;
  }
  if (key_budgets != nullptr) key_budgets->stage->onSharedAnswer(*key_budgets, grant.quota);
  // Slots shared state no longer has (it lost them) are leased again, so the others count them.
  const int64_t missing = slots_.granted(model.name, replica.name(), grant.granted, grant.held);
  if (missing > 0) shared_.changeSlots(model.name, replica.name(), missing);
  shared.holdSlot(shared_, slots_, model.name, replica.name(), lead);
  shared.note(observe::InflightAdmission::kNewLease);
  co_return ReplicaAdmission::kAdmitted;
}

boost::asio::awaitable<std::optional<Refusal>> AdmissionStage::keyBudgetsAlone(
    const fleet::ModelEntry& model, RequestAuth& key_budgets, TimeNs now) {
  const state::QuotaResult result = co_await shared_.checkQuota(key_budgets.quota);
  notice_.note(result.degraded);
  if (result.degraded) {
    co_return key_budgets.stage->onSharedDegraded(
        key_budgets, model.runtime->live_gateways.load(std::memory_order_relaxed), now);
  }
  co_return key_budgets.stage->onSharedAnswer(key_budgets, result.answer);
}

ReplicaAdmission AdmissionStage::withinOwnShare(const fleet::ModelEntry& model,
                                                fleet::ReplicaState& replica) {
  if (!admission::withinShare(replica, model.limits.max_inflight_per_replica,
                              model.runtime->live_gateways.load(std::memory_order_relaxed),
                              model.runtime->gateway_rank.load(std::memory_order_relaxed))) {
    admission::releaseLocally(replica);
    return ReplicaAdmission::kAtLimit;
  }
  return ReplicaAdmission::kAdmitted;
}

Refusal AdmissionStage::rateLimited(TimeNs retry_after) {
  observer_.countRejected(observe::LimitKind::kModelRate);
  return Refusal::limited(observe::LimitKind::kModelRate, "model_rate_limit_exceeded",
                          "the model's request rate limit is exceeded", retry_after);
}

Refusal AdmissionStage::saturated() {
  observer_.countRejected(observe::LimitKind::kReplicaInflight);
  return Refusal::limited(observe::LimitKind::kReplicaInflight, "replica_inflight_limit",
                          "every replica of the model is at its in-flight limit", kNsPerSec);
}

Refusal AdmissionStage::deadlineUnattainable(TimeNs left, TimeNs needed) {
  observer_.countRejected(observe::LimitKind::kDeadline);
  // Retry once the backlog that made it late may have drained: the time it lacked, at least 1 s.
  return Refusal::limited(
      observe::LimitKind::kDeadline, "deadline_unattainable",
      fmt::format("the request cannot finish within its deadline: {} ms left, about {} ms "
                  "needed (waiting and execution)",
                  std::max<TimeNs>(0, left) / kNsPerMs, needed / kNsPerMs),
      std::max<TimeNs>(kNsPerSec, needed - left));
}

Refusal AdmissionStage::queueFull(bool client_share) {
  observer_.countRejected(observe::LimitKind::kQueueFull);
  return Refusal::limited(observe::LimitKind::kQueueFull, "queue_full",
                          client_share ? "this client already has as many requests queued for "
                                         "the model as one client may"
                                       : "every replica of the model is at its in-flight limit "
                                         "and the gateway's queue for it is full",
                          kNsPerSec);
}

Refusal AdmissionStage::sloBreached(TimeNs waited) {
  observer_.countRejected(observe::LimitKind::kSloBreached);
  return Refusal::limited(
      observe::LimitKind::kSloBreached, "slo_breached",
      fmt::format("no replica was predicted to meet the request's SLO, and after {} ms of "
                  "waiting it can no longer be met",
                  waited / kNsPerMs),
      kNsPerSec);
}

Refusal AdmissionStage::queueTimeout(TimeNs max_wait) {
  observer_.countRejected(observe::LimitKind::kQueueTimeout);
  return Refusal::limited(
      observe::LimitKind::kQueueTimeout, "queue_timeout",
      fmt::format("no replica of the model had room within {} ms", max_wait / kNsPerMs),
      kNsPerSec);
}

}  // namespace switchyard::gateway
