// The fleet simulator: one scenario, one routing strategy, on a virtual clock.
//
// The second driver of Switchyard's two pure cores. Every simulated gateway runs the production
// routing core (routing::route with the strategy and its knobs, filters, slow start, candidate
// sampling), its own FleetRegistry snapshot and ReplicaStates (in-flight counts, engine signals,
// health, learned capacity), the capacity estimator (fleet::CapacityTracker), the traffic-driven
// health decisions (health::FleetHealth) and the request path's admission (rate limit, in-flight
// check-and-admit, retries with a budget); every replica runs the engine model
// (engine::BatchingModel). What the live system does over sockets and timers is replaced at
// these seams (docs/simulation.md):
//   - the load generator and the client side of HTTP: the workload's arrivals (workload.h);
//   - gateway <-> engine HTTP: a direct submit after `network_latency`; the engine's tokens come
//     back as its TokenEvents;
//   - /metrics scraping: the engine's load, through the one mapping the emulator's /metrics
//     exports (engine_telemetry.h), every scrape interval;
//   - health probes: a probe succeeds when the replica is up;
//   - Redis (shared state): SharedView, which publishes each gateway's counts every sync interval
//     and applies the others' after `sync_delay`; admission with shared limits is atomic in it;
//     an outage makes every call degraded;
//   - Asio timers: events in one queue (event_queue.h).
// Deterministic for a scenario, strategy and seed: no wall-clock reads in simulated code (the
// optional `wall_clock` only measures routing CPU time), no threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/scenario.h"
#include "sim/stats.h"

namespace switchyard::sim {

struct Progress {
  TimeNs now = 0;
  TimeNs end = 0;  // the arrivals' end (duration); draining may run past it
  uint64_t events = 0;
  int64_t requests = 0;
};

struct RunOptions {
  std::string strategy;  // as a routing-strategy header
  std::string label;     // names the run in the results ("" : the strategy)
  double rate = 0;       // open-loop requests/s (a `load:` turned into a rate by the caller)
  // Optional: a monotonic wall clock, to measure the CPU time of each routing decision.
  std::function<TimeNs()> wall_clock;
  // Called every few thousand events.
  std::function<void(const Progress&)> progress;
  std::string per_request_csv;  // "" : none
};

// The replicas the first `add_replicas` event added, over the first seconds after it (the
// new-replica stampede): their share of the requests routed, and their engine in-flight count
// (running + waiting, sampled every 100 ms) against the established replicas'.
struct AddedReplicas {
  double at_s = -1;  // when they joined the gateways' fleet (added + start-up); -1: none added
  int count = 0;
  int fleet = 0;  // replicas in the fleet after the add
  double share_2s = 0, share_5s = 0, share_10s = 0;
  double peak_inflight_5s = 0;       // the highest of any added replica in the first 5 s
  double established_median_5s = 0;  // the established replicas' median over the same samples
  double fairShare() const { return fleet ? static_cast<double>(count) / fleet : 0; }
};

// Replicas that left the fleet (`remove_replicas` events and autoscaling), as the gateways'
// `scale_down:` chose and stopped them.
struct RemovedReplicas {
  int victims = 0;
  int64_t in_flight_at_decision = 0;  // the victims' engine in-flight requests when chosen
  // Requests that followed a session's pin to a victim in the scale-down window before it was
  // chosen (the deciding gateway's count): sessions whose replica goes.
  int64_t session_requests = 0;
  int64_t cut_mid_stream = 0;          // stop: kill, the request's first token already out
  int64_t cut_before_first_token = 0;  // stop: kill, re-routed when the retry budget allowed
  Distribution drain_s;  // stop: drain, from the decision until the victim's last request ended
  int undrained = 0;     // stop: drain, still serving when the run ended
};

// One interval of autoscaling (the scenario's `autoscale:`): the optimizer's answer put in force.
struct AutoscaleStep {
  double at_s = 0;
  double planned_rps = 0;     // the load the solver planned for (summed over cells)
  std::vector<int> replicas;  // per autoscale deployment, in its order
  double usd_per_hour = 0;    // of the fleet in force after the step
  bool kept = false;          // hysteresis kept the answer in force
  bool feasible = true;
  double solve_ms = 0;
};

struct RunResult {
  std::string strategy;
  double rate = 0;
  TimeNs simulated = 0;  // virtual time at the end
  uint64_t events = 0;
  TimeNs window = 0;               // the measurement window's length (duration - warmup)
  std::vector<GroupStats> groups;  // one per GPU type (fleet order), then "all"
  std::vector<SecondRow> seconds;  // per second and group
  // Routing cost per decision (wall clock, when measured).
  Distribution routing_ns;
  // Engine queue depth (waiting requests), sampled per replica every 100 ms over the window.
  Distribution queue_depth;
  int64_t decisions = 0;
  double wall_seconds = 0;  // set by the caller that timed the run (0: not timed)
  double cpu_seconds = 0;   // the run's thread's CPU time (user + system), set likewise
  int64_t health_exclusions = 0;
  // Exclusions by reason (health::healthReasonName: load_outlier, request_failures, ...), summed
  // over every gateway's health decisions.
  std::map<std::string, int64_t> health_exclusions_by_reason;
  int64_t shared_state_degraded = 0;  // admission or sync calls answered degraded
  int64_t shared_admission_calls = 0;  // request-path calls to shared state (admit, lease)
  // Telemetry reads of engines, all gateways together (sharded and adaptive as configured).
  int64_t scrapes = 0;
  // Of every live gateway's view of each answering replica, sampled each second: the share whose
  // signal was at most three scrape intervals old (the gateway's telemetry_fresh_ratio).
  double telemetry_fresh_ratio = 1.0;
  // The admission queue: the most requests any gateway held at once; engine work spent on
  // requests whose client gave up (or whose gateway died) before the answer: the seconds they
  // held a batch slot and the tokens computed for them (the emulator's aborted_* counters).
  int64_t gateway_queue_max = 0;
  int64_t queue_full_client = 0;  // of the measured queue_full refusals: the client's share
  // Cost: replica-hours over the measurement window by GPU type (fleet order, as `groups`) and
  // their price (the scenario's `prices:`); -1 when a GPU type has no price.
  std::vector<double> replica_hours;
  double cost_usd = -1;
  std::vector<std::string> autoscale_deployments;  // GPU types, the order of `replicas` below
  std::vector<AutoscaleStep> autoscale;
  int64_t wasted_requests = 0;  // aborted at an engine
  double wasted_slot_seconds = 0;
  int64_t wasted_tokens = 0;
  AddedReplicas added;
  RemovedReplicas removed;
  // Capacity learning: seconds from the start until every GPU type's mean learned capacity
  // (gateway 0) stayed within 10 % of its value at the end of the arrivals; -1 if never.
  double capacity_convergence_s = -1;
};

// Throws ConfigError for problems found while running (a malformed trace line).
RunResult runSimulation(const Scenario& scenario, const RunOptions& options);

}  // namespace switchyard::sim
