// The admission stage of the request path (docs/operations.md, "Protection"): the limits a
// request must pass before routing (the model-wide rate limit, when this gateway decides it
// alone) and on the replica routing chose (check-and-admit of the in-flight limit, and with
// several gateways the shared admission in one round trip to shared state). Decisions come back
// as values; the pipeline answers refusals. Every refusal is counted by the limit that refused.
//
// One per worker, used from its thread only; no allocation on the admitting path.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>

#include "admission/inflight_slots.h"
#include "fleet/fleet_snapshot.h"
#include "gateway/auth_stage.h"
#include "gateway/refusal.h"
#include "gateway/shared_state_config.h"
#include "gateway/shared_state_notice.h"
#include "observe/observer.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

// A request admitted in shared state is released there when its attempt ends, however it ends.
// One admitted locally while shared state was away is released there only if shared state was
// given this gateway's count for the replica since (it then counts the request). One admitted
// within a leased slot gives the slot back to its worker's lease, which returns what it no
// longer needs to shared state.
class SharedAdmission {
 public:
  SharedAdmission() = default;
  SharedAdmission(const SharedAdmission&) = delete;
  SharedAdmission& operator=(const SharedAdmission&) = delete;
  ~SharedAdmission() {
    if (client_ == nullptr) return;
    if (slots_ != nullptr) {
      const int64_t back = slots_->put(model_, replica_, slot_lead_);
      if (back > 0) client_->changeSlots(model_, replica_, -back);
      return;
    }
    if (epoch_ != nullptr && epoch_->load(std::memory_order_relaxed) == admitted_epoch_) return;
    client_->release(model_, replica_);
  }
  void hold(state::SharedStateClient& client, std::string_view model, std::string_view replica) {
    client_ = &client;
    model_ = model;
    replica_ = replica;
  }
  void holdLocal(state::SharedStateClient& client, std::string_view model,
                 const fleet::ReplicaState& replica) {
    hold(client, model, replica.name());
    epoch_ = &replica.counters().shared_count_epoch;
    admitted_epoch_ = epoch_->load(std::memory_order_relaxed);
  }
  void holdSlot(state::SharedStateClient& client, admission::InflightSlots& slots,
                std::string_view model, std::string_view replica, int64_t lead) {
    hold(client, model, replica);
    slots_ = &slots;
    slot_lead_ = lead;
  }
  // How the shared in-flight limit admitted the request (its decision record).
  observe::InflightAdmission how() const { return how_; }
  void note(observe::InflightAdmission how) { how_ = how; }

 private:
  state::SharedStateClient* client_ = nullptr;
  admission::InflightSlots* slots_ = nullptr;  // set when admitted within a leased slot
  int64_t slot_lead_ = 0;
  observe::InflightAdmission how_ = observe::InflightAdmission::kNone;
  std::string_view model_;
  std::string_view replica_;
  const std::atomic<int64_t>* epoch_ = nullptr;  // set when admitted locally
  int64_t admitted_epoch_ = 0;
};

enum class ReplicaAdmission : uint8_t {
  kAdmitted,     // counted on the replica (locally, and in shared state when shared)
  kAtLimit,      // the replica is full (lost a race for its last slot): route again
  kRateLimited,  // the model-wide rate refused: answer `refusal`
};

class AdmissionStage {
 public:
  AdmissionStage(observe::WorkerObserver& observer, state::SharedStateClient& shared,
                 SharedStateNotice& notice, const SharedStateConfig& shared_config)
      : observer_(observer),
        shared_(shared),
        notice_(notice),
        liveness_ttl_(shared_config.liveness_ttl),
        shared_config_(shared_config) {}

  // Whether the model's limits are admitted in shared state (several gateways, a limit set),
  // request by request or within leased slots: a key's budgets then go with the admission.
  bool sharesLimits(const fleet::ModelEntry& model) const {
    return shared_.distributed() && (model.limits.max_inflight_per_replica > 0 ||
                                     model.limits.requests_per_second_per_replica > 0);
  }
  // Whether the model's in-flight limit is admitted within leased slots (inflight_slots.h).
  bool leasesSlots(const fleet::ModelEntry& model) const {
    return shared_.distributed() &&
           leasesInflightSlots(shared_config_, model.limits.max_inflight_per_replica,
                               model.limits.requests_per_second_per_replica);
  }

  // Before routing: the model-wide rate limit, when this gateway decides it alone (shared
  // limits check it together with the replica, after routing).
  std::optional<Refusal> beforeRouting(const fleet::ModelEntry& model, TimeNs now);

  // After routing: admits the request on `replica`. On kAdmitted the caller owns one count of
  // the replica's `running` (released when its attempt ends) and `shared` releases the shared
  // count; on kRateLimited `refusal` says what to answer. `key_budgets` (auth_stage.h): an API
  // key's budgets checked in the same shared call.
  boost::asio::awaitable<ReplicaAdmission> onReplica(const fleet::ModelEntry& model,
                                                     fleet::ReplicaState& replica, TimeNs now,
                                                     SharedAdmission& shared,
                                                     std::optional<Refusal>& refusal,
                                                     RequestAuth* key_budgets = nullptr);
  // Whether this gateway admits the model's requests alone (no shared state involved): then
  // onReplicaHere() decides without awaiting, and without the coroutine frame onReplica costs.
  bool admitsAlone(const fleet::ModelEntry& model) const {
    return !leasesSlots(model) && !sharesLimits(model);
  }
  // onReplica's answer when admitsAlone(model): kAdmitted or kAtLimit.
  static ReplicaAdmission onReplicaHere(const fleet::ModelEntry& model,
                                        fleet::ReplicaState& replica);

  // Gives back the leased slots of replicas this worker stopped sending to (every second).
  void sweepIdleSlots() {
    slots_.sweep([this](std::string_view model, std::string_view replica, int64_t n) {
      shared_.changeSlots(model, replica, -n);
    });
  }

  // Every replica of the model is at its in-flight limit (counted).
  Refusal saturated();
  // The request cannot finish within its deadline: `left` remains, it needs `needed` (counted).
  Refusal deadlineUnattainable(TimeNs left, TimeNs needed);
  // The model's queue on this worker (or this client's part of it) is full (counted).
  Refusal queueFull(bool client_share);
  // The request waited `max_wait` in the queue without getting a slot (counted).
  Refusal queueTimeout(TimeNs max_wait);
  // SLO routing held the request for a replica predicted to meet its SLO until the SLO could no
  // longer be met (counted).
  Refusal sloBreached(TimeNs waited);

 private:
  Refusal rateLimited(TimeNs retry_after);
  // onReplica for a model whose in-flight limit is admitted within leased slots.
  boost::asio::awaitable<ReplicaAdmission> onLeasedReplica(const fleet::ModelEntry& model,
                                                           fleet::ReplicaState& replica,
                                                           TimeNs now, SharedAdmission& shared,
                                                           std::optional<Refusal>& refusal,
                                                           RequestAuth* key_budgets);
  // A key's budgets for a request admitted within a slot it already held: the budgets alone in
  // shared state (or this gateway's share of them when it does not answer).
  boost::asio::awaitable<std::optional<Refusal>> keyBudgetsAlone(const fleet::ModelEntry& model,
                                                                 RequestAuth& key_budgets,
                                                                 TimeNs now);
  // Shared state did not answer: this gateway's share of the limit decides (counted locally).
  ReplicaAdmission withinOwnShare(const fleet::ModelEntry& model, fleet::ReplicaState& replica);

  observe::WorkerObserver& observer_;
  state::SharedStateClient& shared_;
  SharedStateNotice& notice_;
  TimeNs liveness_ttl_;
  SharedStateConfig shared_config_;  // as at start: slot leases are not switched by a reload
  admission::InflightSlots slots_;
};

}  // namespace switchyard::gateway
