// Decision records: what the router chose for a request and why, for the explain header and the
// /debug/decisions ring.
//
// Every routed request writes one fixed-size DecisionRecord into its worker's ring (a slot copy,
// no allocation once the ring exists; replicas are stored as metric slot ids, names are looked
// up only when the ring is read). Only the owning worker touches its ring: the control thread
// reads it by posting a copy job to the worker (see Observability::recentDecisions), so there
// are no locks or shared writes on the request path.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"
#include "routing/decision.h"

namespace switchyard::observe {

class MetricsRegistry;

// How a replica's in-flight limit shared with other gateways admitted a request.
enum class InflightAdmission : uint8_t {
  kNone,        // no shared in-flight limit, or not recorded
  kLeasedSlot,  // within a slot its worker had leased: no call to shared state
  kNewLease,    // its worker leased slots for it, in one call
  kShared,      // request by request in shared state, in one call
  kLocalShare,  // shared state did not answer: within this gateway's share of the limit
};
std::string_view inflightAdmissionName(InflightAdmission how);

struct DecisionRecord {
  static constexpr size_t kMaxRows = 16;  // the candidate table keeps the best-scored 16 rows
  struct Row {
    uint32_t replica_slot = 0;
    uint8_t excluded = 0;  // routing::Exclusion
    bool in_pick_set = false;  // top-K: among the replicas the random pick was made from
    uint8_t passed_over = 0;   // routing::PassOver: a blend's component scored it +Inf, and why
    double score = 0;
    double synthetic_load = 0;  // slow start's part of the score
    float predicted_ttft = -1;  // SLO routing: predicted latency (seconds; -1 none)
    float predicted_tpot = -1;
    float cost_per_request = -1;  // SLO routing: the shape's cost there (+inf: no rate; -1 none)
    int32_t prefix_blocks = -1;  // prefix-cache: leading prompt blocks cached there (-1: n/a)
    bool prefix_exact = false;   // ... from the replica's KV events (else approximate)
    bool prefix_home = false;    // ... held nowhere known: the prefix's home (placement)
  };
  int64_t unix_ns = 0;    // wall-clock time of the decision
  int64_t latency_ns = 0;  // time spent routing
  uint64_t sequence = 0;   // per-worker order
  uint32_t model_slot = 0;
  int32_t chosen_slot = -1;  // -1: nothing could be chosen
  uint16_t worker = 0;
  uint16_t attempt = 0;      // 0 first pick, 1 failover
  uint16_t total_rows = 0;   // replicas considered (rows beyond kMaxRows are dropped)
  uint16_t ready = 0;        // replicas of the model
  uint16_t sampled = 0;      // candidate sampling: replicas drawn (0: every replica)
  uint16_t row_count = 0;
  uint16_t candidates = 0;
  uint16_t pick_set = 0;  // top-K set size; 0 when the lowest score won
  bool relaxed = false;
  bool affinity = false;  // the session's pinned replica was kept, without scoring
  bool hold = false;          // SLO routing held the request: no replica would meet its SLO
  bool slo_fallback = false;  // SLO routing had no profile for some replica: load-balance
  bool slo = false;           // SLO routing took part: the objective below
  uint16_t prefix_block_tokens = 0;  // prefix-cache took part: tokens per block (0: did not)
  uint32_t prefix_total_blocks = 0;  // ... and the prompt's full blocks
  uint8_t slo_percentile = 0;
  float slo_ttft_ms = 0, slo_tpot_ms = 0, slo_e2e_ms = 0;  // 0: not part of the objective
  uint8_t client_cancelled = 0;  // CancelStage: the client left before the answer was complete
  // Admission (docs/admission.md), when a deadline or the queue took part; -1: not applicable.
  int32_t queued_ms = -1;     // time the request waited in the gateway's queue
  int32_t deadline_ms = -1;   // deadline left when the request arrived
  int32_t predicted_ms = -1;  // its predicted execution on the chosen replica
  uint8_t refused = 0xFF;     // LimitKind that refused it after this decision; 0xFF: none
  uint8_t inflight = 0;       // InflightAdmission: how the shared in-flight limit admitted it
  char request_id[40] = {};
  char strategy[64] = {};
  char key_name[65] = {};  // the request's API key by name ("" none); never the key
  std::array<Row, kMaxRows> rows;
};

// Fills `record` from a decision. Allocation-free.
void fillDecisionRecord(DecisionRecord& record, const routing::Decision& decision,
                        std::span<const uint32_t> replica_slots, uint32_t model_slot,
                        std::string_view request_id, int64_t unix_ns, int64_t latency_ns,
                        int attempt);

// A fixed ring of records owned by one worker.
class DecisionRing {
 public:
  explicit DecisionRing(size_t capacity) : slots_(capacity) {}
  // Owner thread: the slot to write next (overwrites the oldest).
  DecisionRecord& next() {
    DecisionRecord& r = slots_[written_ % slots_.size()];
    r.sequence = written_++;
    return r;
  }
  // Owner thread: the record written as `sequence`, or nullptr once it has been overwritten.
  DecisionRecord* find(uint64_t sequence) {
    if (sequence >= written_ || written_ - sequence > slots_.size()) return nullptr;
    DecisionRecord& r = slots_[sequence % slots_.size()];
    return r.sequence == sequence ? &r : nullptr;
  }
  // Owner thread: the newest `limit` records, oldest first.
  std::vector<DecisionRecord> copyNewest(size_t limit) const;
  size_t capacity() const { return slots_.size(); }

 private:
  std::vector<DecisionRecord> slots_;
  uint64_t written_ = 0;
};

// /debug/decisions JSON: {"decisions":[...]} newest first. With `labels_from`, each decision
// also carries "chosen_labels": the chosen replica's labels (every Pod label, for a discovered
// replica) as that snapshot has them.
std::string renderDecisionsJson(std::vector<DecisionRecord> records,
                                const MetricsRegistry& names, size_t limit,
                                const fleet::FleetSnapshot* labels_from = nullptr);

// The compact x-switchyard-decision header value:
//   strategy=S; chosen=R; candidates=R1=0.12,R2=0.5; excluded=R3(failed_this_request)
// then, when they apply, "; pick_set=R1,R2" (top-K: the replicas the random pick was among),
// "; warming=R4+3.2" (slow start's synthetic load, included in the score), "; affinity=session"
// (a session's pin decided) and "; relaxed=1". Scores are lower-is-better. Bounded by
// `max_bytes`; a cut value ends with ";truncated".
void appendDecisionHeader(std::string& out, const routing::Decision& decision,
                          const fleet::ModelEntry& model, size_t max_bytes = 4000);

}  // namespace switchyard::observe
