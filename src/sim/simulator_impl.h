// The simulator's internals (simulator.h has the contract). One Simulator runs one scenario with
// one strategy; its member functions are split by job: simulator.cc (set-up, the event loop,
// fleet and scenario events), request_path.cc (a request from arrival to completion, as the
// gateway's worker handles it), control_plane.cc (each gateway's scrape, capacity, health and
// shared-state timers) and recording.cc (statistics and series).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "admission/inflight_slots.h"
#include "admission/retry_budget.h"
#include "core/rng.h"
#include "engine/batching_model.h"
#include "fleet/capacity_tracker.h"
#include "fleet/fleet_registry.h"
#include "fleet/scrape_schedule.h"
#include "health/fleet_health.h"
#include "observe/load_interval.h"
#include "optimizer/stability.h"
#include "profile/profile.h"
#include "routing/router.h"
#include "routing/strategy_spec.h"
#include "sim/event_queue.h"
#include "sim/shared_view.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace switchyard::sim {

enum EventKind : uint32_t {
  kArrival,          // the workload's next open-loop arrival
  kClientSend,       // closed loop: client `target` sends its next request
  kEngineStep,       // replica `target`'s model has something due (arg: generation)
  kEngineDeliver,    // request `arg` reaches replica `target` (network latency)
  kGatewayComplete,  // request `arg`'s last token reaches its gateway
  kDeadline,         // request `arg`'s client gives up
  kScrape,           // gateway `target`'s telemetry tick: the replicas due, what others shared
  kCapacity,         // gateway `target`'s capacity refresh
  kHealthTick,       // gateway `target`'s health evaluation (100 ms)
  kProbe,            // gateway `target`'s health probes
  kSync,             // gateway `target`'s shared-state sync
  kSyncApply,        // gateway `target` applies the view it read (arg: view slot)
  kSecond,           // statistics: the per-second series
  kQueueSample,      // statistics: engine queue depths (100 ms)
  kScenario,         // scenario event `target`
  kRedisBack,        // a Redis outage ends
  kWindowStart,      // the measurement window opens (warm-up over)
  kWindowEnd,        // ... and closes (the arrivals' end)
  kQueueRecheck,     // gateway `target`'s queued requests re-check (admission recheck_ms)
  kQueueWake,        // a slot freed on gateway `target`: the head of its queue tries again
  kAutoscale,        // the optimizer's interval: solve on the observed load, apply the answer
  kReplicasReady,    // replicas that were starting join the fleet the gateways route to
  kScaleDownSample,  // the scale-down controller's sample of session requests per replica
};

struct SimReplica {
  // What every event and scrape of the replica reads first, together (one cache line).
  std::unique_ptr<engine::BatchingModel> model;
  TimeNs scheduled = -1;  // the pending kEngineStep's time; -1: none
  uint32_t generation = 0;
  uint32_t index = 0;
  int32_t inflight = 0;   // requests submitted to its engine, not finished
  uint16_t group = 0;     // fleet group
  uint16_t gpu_type = 0;  // statistics group
  bool alive = true;      // answers (fail_replica / recover_replica)
  bool removed = false;   // left the fleet: finishes what it has, gets nothing new
  bool added = false;     // by the first add_replicas event (the cohort AddedReplicas follows)
  TimeNs added_at = 0;
  TimeNs ready_at = 0;  // joins the gateways' fleet (added_at + its group's start-up)
  TimeNs removed_at = -1;
  TimeNs drained_at = -1;  // a removed replica's last request ended
  std::string name;  // "A100-3:8000": the gateways' replica address
  engine::PerfConfig perf;
  int64_t tokens_offset = 0;     // tokens its engine produced before it last failed
  double busy_offset = 0;        // busy seconds of the engine before it last failed
  double window_busy_start = 0;  // busy seconds when the measurement window began (or joined)
  int64_t window_tokens_start = 0;
  double second_busy = 0;  // busy seconds at the last per-second tick

  double busySeconds() const { return busy_offset + model->load().busy_seconds_total; }
  int64_t generatedTokens() const { return tokens_offset + model->load().generated_tokens_total; }
};

// One request, from arrival to outcome (a reusable slot). Aligned, with what the request path
// reads at each step (an engine event, a completion) in the first cache line: between its arrival
// and its last token seconds pass and it is evicted.
struct alignas(64) SimRequest {
  TimeNs arrival = 0;
  TimeNs sent = -1;         // the gateway forwarded it to the replica (this attempt)
  TimeNs first_token = -1;  // at the engine
  int64_t streams_at_start = 0;
  int32_t prompt_tokens = 1;
  int32_t output_tokens = 1;
  uint32_t replica = 0;  // sim index of the replica of the current attempt
  uint32_t generation = 0;
  uint16_t gateway = 0;
  uint16_t request_class = 0;
  uint8_t attempts = 0;
  uint8_t tried_count = 0;
  bool live = false;
  bool measured = false;
  bool at_engine = false;  // submitted to the engine and not finished there
  bool may_retry = false;  // of the current attempt
  bool shared_admitted = false;  // counted in shared state request by request
  bool slot_leased = false;      // holds a slot of its gateway's lease
  bool prefill_pending = false;  // its prompt counts in the replica's prefill_pending_tokens
  bool queued = false;           // waiting in its gateway's admission queue
  // The second line.
  TimeNs deadline = 0;  // absolute; 0: none
  uint64_t session = 0;
  int32_t client = -1;          // closed loop: the client that sent it
  int32_t identity = -1;        // the client it counts against (max_queued_per_client); -1: its own
  TimeNs enqueued_at = -1;      // when it entered the queue
  TimeNs admit_deadline = -1;   // admission's deadline (admission::deadlineAt); -1: none
  uint8_t failed_count = 0;     // tried[0, failed_count): replicas that failed it (the rest lost
                                // admission races, forgotten when its queue turn comes)
  std::array<int, 16> tried{};  // snapshot positions that failed this request
};
static_assert(offsetof(SimRequest, deadline) == 64, "SimRequest's hot fields fill one line");

// One replica's telemetry schedule on one gateway (fleet/scrape_schedule.h).
struct ScrapeSlot {
  TimeNs due = 0;  // the next scrape
  fleet::ScrapeHistory history;
};

// A scrape one gateway shared with the others (gateway/telemetry_share.h's record).
struct SharedScrape {
  uint32_t replica = 0;
  int32_t from = 0;  // the gateway that read it
  bool ok = false;
  TimeNs read_at = 0;
  fleet::EngineSignals signals;
};

struct SimGateway {
  int index = 0;
  bool alive = true;
  TimeNs died_at = -1;
  fleet::FleetRegistry registry;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot;
  const fleet::ModelEntry* model = nullptr;
  std::vector<std::shared_ptr<fleet::ReplicaState>> states;  // by replica index, kept forever
  std::vector<int32_t> position;     // replica index -> position in model->replicas, or -1
  std::vector<uint32_t> replica_at;  // position -> replica index
  std::vector<std::shared_ptr<fleet::ReplicaState>> fleet_states;       // the snapshot's, in order
  std::unordered_map<const fleet::ReplicaState*, uint32_t> replica_of;  // state -> replica index
  routing::RoutingScratch scratch;
  Rng rng;
  std::unique_ptr<fleet::CapacityTracker> capacity;
  std::unique_ptr<health::FleetHealth> health;
  std::unique_ptr<admission::RetryBudget> retry_budget;
  admission::InflightSlots slots;  // leased in-flight slots (one worker)
  TimeNs slots_swept_at = 0;
  // Shared state: the last view read, and when a sync last succeeded.
  TimeNs last_sync_success = 0;
  bool have_global = false;
  std::vector<fleet::CapacityCounters> global;
  std::vector<ReplicaReport> report;  // scratch for publishing
  // The admission queue (one model, one worker): request ids (slot and generation), oldest
  // first; entries of requests that left it are skipped and dropped at the next re-check.
  std::deque<uint64_t> waiting;
  int64_t queued = 0;  // entries of `waiting` still queued
  std::unordered_map<int32_t, uint32_t> queued_by_client;  // identity -> its requests queued
  bool recheck_pending = false;
  bool wake_pending = false;
  // Telemetry (control_plane.cc): by replica index, when this gateway scrapes it next.
  std::vector<ScrapeSlot> scrape_slots;
  fleet::ScrapeBudget scrape_budget;
  size_t scrape_resume = 0;  // where a scan the budget cut short resumes
  std::vector<size_t> scrape_due;  // scratch: the positions a tick scrapes, in order
  size_t share_cursor = 0;   // shared scrapes read so far (an absolute count)
};

class Simulator {
 public:
  Simulator(const Scenario& scenario, const RunOptions& options);
  RunResult run();

 private:
  // --- set-up and the loop (simulator.cc)
  // `starting`: added during the run, so it joins the gateways' fleet after its group's start-up.
  void addReplica(size_t group, TimeNs now, bool starting);
  std::unique_ptr<engine::BatchingModel> newModel(const engine::PerfConfig& perf);
  void applyFleet(TimeNs now);
  void applyFleet(SimGateway& g, TimeNs now);
  void scheduleReplica(SimReplica& r);
  void dispatch(const Event& e);
  void onScenarioEvent(const ScenarioEvent& e);
  void failReplica(SimReplica& r);
  void killGateway(SimGateway& g);
  bool pullArrival();

  // --- request path (request_path.cc)
  uint32_t newRequest(const Arrival& a, int client);
  void onArrival(uint32_t slot);
  void route(uint32_t slot);
  // Shared limits on the chosen replica, as the gateway's admission stage: leased slots or a
  // request-by-request admission, this gateway's share while shared state is down.
  enum class SharedAdmission : uint8_t { kAdmitted, kAtLimit, kRateLimited };
  SharedAdmission admitShared(SimGateway& g, SimRequest& q, uint32_t replica,
                              fleet::ReplicaState& state);
  void releaseShared(SimGateway& g, SimRequest& q);
  bool leasesSlots() const;
  int64_t slotLead(const SimGateway& g) const;
  void sweepSlots(SimGateway& g);
  void deliver(uint64_t id);
  void noteRouted(const SimReplica& r);
  void onEngineStep(SimReplica& r);
  void catchUp(SimReplica& r);
  void onEngineFinished(uint32_t slot, TimeNs at);
  void gatewayComplete(uint64_t id);
  void attemptFailed(uint32_t slot, bool before_first_byte);
  void prefillDone(SimRequest& q);
  void finish(uint32_t slot, Outcome outcome);
  void onDeadline(uint64_t id);
  // The admission queue (request_path.cc), as RequestQueue and waitTurn() in the gateway.
  void saturated(uint32_t slot);  // every replica at its limit: queue, keep queued, or refuse
  void enqueue(uint32_t slot);
  void leaveQueue(SimRequest& q);
  void wakeQueue(SimGateway& g);     // a slot freed: the head tries (as an event, no re-entry)
  void serveQueue(SimGateway& g);    // the head, then the next, route while there is room
  void recheckQueue(SimGateway& g);  // every recheck_ms: age and deadline of every waiter
  bool recheckWaiter(uint32_t slot, size_t ahead);  // false: refused
  void cancelAtEngine(uint32_t slot);               // the client or its gateway went away
  // The slot of a request id (slot and generation) that is still live.
  std::optional<uint32_t> liveSlot(uint64_t id) const;
  // The engine's event hint: the request's slot, and the gateway's record of the replica that
  // the first token and the completion update, are read when the event is handled, long out of
  // cache by then (at 10,000 replicas both come from memory). The id names the gateway;
  // advance() runs for one replica at a time (advancing_).
  static void prefetchRequest(void* self, uint64_t id) {
    const auto* sim = static_cast<const Simulator*>(self);
    const auto slot = static_cast<uint32_t>(id);
    if (slot < sim->requests_.size()) __builtin_prefetch(&sim->requests_[slot]);
    const auto gateway = static_cast<uint32_t>((id >> kGatewayShift) & kGatewayMask);
    if (gateway >= sim->gateways_.size()) return;
    const auto& states = sim->gateways_[gateway].states;
    if (sim->advancing_ < states.size() && states[sim->advancing_]) {
      states[sim->advancing_]->prefetchForCompletion();
    }
  }
  // An engine request id: the slot in bits 0-31, the gateway in 32-39 (a hint only: 255 for
  // gateways past it), the slot's generation in 40-63 (a stale id is one whose generation
  // differs; 2^24 reuses of one slot before an old id could match again).
  static constexpr int kGatewayShift = 32;
  static constexpr uint64_t kGatewayMask = 0xff;
  static constexpr int kGenerationShift = 40;
  static constexpr uint32_t kGenerationMask = 0xffffff;
  uint64_t engineId(uint32_t slot) const {
    const SimRequest& q = requests_[slot];
    return (static_cast<uint64_t>(q.generation & kGenerationMask) << kGenerationShift) |
           (std::min<uint64_t>(q.gateway, kGatewayMask) << kGatewayShift) | slot;
  }

  // --- fleet changes and autoscaling (autoscale.cc)
  void addReplicas(const std::string& gpu, int count);
  int activeReplicas(const std::string& gpu) const;
  // --- scale-down (scale_down.cc): which replicas leave, and how they stop
  void removeReplicas(const std::string& gpu, int count);
  std::vector<uint32_t> chooseVictims(const std::string& gpu, int count) const;
  const SimGateway* decidingGateway() const;
  void sampleSessionRequests();
  // An engine request of `r` ended (finished, cancelled): a draining replica may be empty now.
  void leftEngine(SimReplica& r, TimeNs at) {
    if (--r.inflight == 0 && r.removed) noteDrained(r, at);
  }
  void noteDrained(SimReplica& r, TimeNs at);
  void startAutoscale();
  void onAutoscale();
  void noteDemand(const SimRequest& q);

  // --- control plane (control_plane.cc)
  void scrapeTick(SimGateway& g);
  void scrapeReplica(SimGateway& g, size_t position, bool share);
  void readSharedScrapes(SimGateway& g);
  bool telemetrySharded();
  void refreshScrapeOwners();
  void refreshCapacity(SimGateway& g);
  void healthTick(SimGateway& g);
  void probe(SimGateway& g, const fleet::ReplicaState& state);
  void probeAll(SimGateway& g);
  void sync(SimGateway& g);
  void applyView(SimGateway& g, SyncView& view);
  void forgetRemote(SimGateway& g);
  bool distributed() const { return scenario_.gateways.shared_state; }
  bool sharedLimits() const;

  // --- recording (recording.cc)
  void onSecond();
  void onQueueSample();
  void startWindow(SimReplica& r);
  void endWindow();
  void recordOutcome(const SimRequest& q, Outcome outcome, TimeNs done);
  void writeRequestCsv(const SimRequest& q, Outcome outcome, TimeNs done);
  RunResult collect();

  const Scenario& scenario_;
  const RunOptions& options_;
  routing::StrategySpec spec_;
  engine::ProfileCatalog catalog_;
  std::vector<std::string> gpu_types_;  // statistics groups, fleet order
  std::unordered_map<std::string, uint32_t> replica_by_name_;  // SimReplica::name -> index
  EventQueue queue_;
  TimeNs now_ = 0;
  TimeNs end_ = 0;  // the arrivals' end
  uint64_t events_ = 0;
  bool window_open_ = false;
  bool window_closed_ = false;

  // Every engine model's request state, one pool: a request finished on one replica leaves its
  // state in cache for the next request submitted anywhere.
  std::shared_ptr<engine::BatchingModel::SeqPool> seq_pool_ = engine::BatchingModel::makeSeqPool();
  std::vector<SimReplica> replicas_;
  // replicas_[i].model, packed (a few lines per thousand replicas, so it stays in cache): the
  // run loop reads the next event's model from here to prefetch it (Simulator::run).
  std::vector<engine::BatchingModel*> models_;
  uint32_t advancing_ = 0;  // the replica whose model advance() runs (prefetchRequest)
  std::vector<SimGateway> gateways_;  // sized once: a FleetRegistry does not move
  std::vector<int> live_gateways_;
  SharedView shared_;
  std::vector<SyncView> views_;  // read, waiting for their kSyncApply (one slot per gateway)
  TimeNs shared_down_at_ = -1;   // when the current Redis outage began

  // Telemetry sharded among the gateways (control_plane.cc): each replica's scraping gateway,
  // the gateways that was computed over, and the scrapes shared (the Redis stream's stand-in).
  std::vector<int32_t> scrape_owner_;
  std::vector<int> owner_set_;
  std::vector<int> owner_set_now_;  // scratch
  std::vector<uint64_t> gateway_hashes_;
  std::vector<SharedScrape> shared_scrapes_;
  size_t shared_scrapes_base_ = 0;  // the absolute count of shared_scrapes_[0]
  int64_t telemetry_checked_ = 0;  // each second, every live gateway's view of each replica up
  int64_t telemetry_fresh_ = 0;    // ... of which the signal was within three intervals

  Workload workload_;
  Rng gateway_rng_;  // which gateway an arrival goes to
  Arrival next_arrival_;
  bool have_arrival_ = false;
  std::vector<SimRequest> requests_;
  std::vector<uint32_t> free_requests_;
  int64_t requests_total_ = 0;
  int64_t live_requests_ = 0;
  std::vector<engine::TokenEvent> token_events_;
  std::vector<const fleet::ReplicaState*> urgent_;  // health: replicas to probe now

  // Statistics.
  std::vector<GroupStats> groups_;  // gpu types, then all
  RunResult result_;
  std::vector<Distribution> second_ttft_;  // per group, this second's completions
  std::vector<Distribution> second_e2e_;
  std::vector<SecondRow> second_counts_;             // per group, this second's counts
  std::vector<std::vector<double>> capacity_trace_;  // per second, per gpu type (gateway 0)
  std::unique_ptr<std::ofstream> request_csv_;
  // Autoscaling: the profiles solved with (one per autoscale deployment), the stabilizer and the
  // answer in force, this interval's arrivals by shape cell (observe/load_shape.h) and the
  // closed intervals the solver plans from.
  bool autoscaling_ = false;
  std::vector<profile::GpuProfile> autoscale_profiles_;
  optimizer::Stabilizer stabilizer_;
  std::vector<int> in_force_;
  std::vector<uint64_t> demand_cells_;
  uint64_t demand_ = 0;
  std::deque<observe::LoadInterval> intervals_;
  // The first add_replicas event's cohort: requests routed to it and to all, per window (2, 5,
  // 10 s after the add), and the in-flight samples of its first 5 s.
  TimeNs added_at_ = -1;
  std::array<int64_t, 3> routed_added_{};
  std::array<int64_t, 3> routed_all_{};
  Distribution established_inflight_;
  // Scale-down (runs that remove replicas): per replica, the deciding gateway's count of session
  // requests at each sample over the window (as the controller's review keeps them).
  std::vector<std::deque<std::pair<TimeNs, int64_t>>> session_samples_;
};

}  // namespace switchyard::sim
