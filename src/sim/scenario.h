// Scenario: what one `switchyard simulate` run simulates, as read from a scenario file
// (docs/simulation.md has the reference): the fleet (GPU types x counts, engine parameters), the
// gateways (how many, how their shared view is synced, the routing knobs), the strategies to
// compare, the workload (Poisson, a diurnal curve, bursts, request-shape mixes, closed loop or a
// trace file), events at times (replicas added, removed, failing or slowing down, a gateway dying,
// a Redis outage) and what to record.
//
// parseScenario() validates everything at load time and throws ConfigError whose message starts
// with "FILE:LINE: " and names the key (e.g. "fleet[1].count: must be between 1 and 100000").
// Nothing is read lazily except the trace file (workload.h), whose errors name its own lines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/config_error.h"
#include "core/rng.h"
#include "engine/perf_profiles.h"
#include "fleet/fleet_snapshot.h"
#include "fleet/scrape_schedule.h"
#include "health/replica_health.h"
#include "sim/autoscale_config.h"

namespace switchyard::sim {

// How many tokens a request has (prompt or output): a fixed number, uniform in [a, b], or
// lognormal with median a and shape sigma b; clamped to [min, max]. In words (the load
// generator's prompts), a count of words is drawn and converted to the emulator's token estimate
// (characters / 4), with the load generator's mean word length.
struct TokenCount {
  enum class Kind : uint8_t { kFixed, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double a = 16;
  double b = 0;
  int min = 1;
  int max = 1 << 20;
  bool words = false;

  int draw(Rng& rng) const;
  double mean() const;  // the mean of draw(), for turning a load into a request rate
};

// Characters per word of the load generator's prompts (its 16 words, mean 5.81 letters, plus a
// space): prompt tokens = ceil((words * this - 1) / 4).
inline constexpr double kCharsPerPromptWord = 6.8125;
int promptTokensOfWords(int words);

struct RequestClass {
  std::string name;
  double weight = 1;
  TokenCount prompt;
  TokenCount output;
  TimeNs deadline = 0;  // 0: none; the client gives up (cancels) after this long
};

struct ArrivalSpec {
  enum class Kind : uint8_t { kPoisson, kDiurnal, kClosedLoop, kTrace };
  Kind kind = Kind::kPoisson;
  double rate = 0;  // requests/s (Poisson; the diurnal curve's mean)
  double load = 0;  // or: a fraction of the fleet's measured capacity (capacity.h)
  // Diurnal: the rate at time t is rate x the curve's multiplier, linearly interpolated between
  // (seconds, multiplier) points and repeated every `period`.
  std::vector<std::pair<double, double>> curve;
  TimeNs period = 86400 * kNsPerSec;
  int clients = 0;         // closed loop: clients that each send their next request when one ends
  TimeNs ramp = 0;         // closed loop: client k starts at k * ramp / clients
  std::string trace_path;  // trace: CSV of arrival_s, prompt_tokens, output_tokens[, deadline_s]
                           // [, session][, client] (relative to the scenario file's folder)
};

// Extra arrivals: `count` requests spread evenly over [at, at + duration) (at once if 0), from
// client `client` (-1: drawn as the main process's are).
struct Burst {
  TimeNs at = 0;
  int count = 0;
  TimeNs duration = 0;
  int client = -1;
};

struct WorkloadSpec {
  ArrivalSpec arrivals;
  std::vector<RequestClass> mix;  // at least one class
  std::vector<Burst> bursts;
  int sessions = 0;  // > 0: each request belongs to one of this many sessions (affinity)
  // > 0: each open-loop request comes from one of this many clients, drawn uniformly (the
  // gateway's per-client queue share, max_queued_per_client); 0: every request is a client of
  // its own. Closed-loop client k and a burst's `client: k` are client k.
  int clients = 0;
};

struct FleetGroup {
  std::string gpu;
  int count = 1;
  int tp = 1;
  engine::EngineTuning tuning;  // the scenario's engine: settings, then the group's
  bool prefix_caching = false;  // the demo runs its engines with --no-prefix-caching
  // A replica added during the run (an add_replicas event, autoscaling) starts this long before
  // it joins the fleet the gateways route to: pulling the image, loading the weights, warming
  // up. It is paid for meanwhile. The fleet at the start is up already.
  TimeNs startup = 0;
};

// How replicas leave the fleet (`remove_replicas` events and autoscaling), as the scale-down
// controller and Kubernetes would do it (docs/kubernetes.md, "Traffic-aware scale-down"):
// which replicas go, and whether they drain first.
struct ScaleDownSpec {
  // kNewest: Kubernetes' own pick without a deletion cost (the most recently added first);
  // kCheapest: the scale-down controller's choice (fleet/discovery/kubernetes/victim_choice.h)
  // from the deciding gateway's view: in-flight requests, session requests in the window, slow
  // start.
  enum class Victims : uint8_t { kNewest, kCheapest };
  // kDrain: excluded from routing at once, removed when its last request ends (drain-wait in
  // the preStop hook); kKill: stopped at once, cutting what it serves (no preStop hook).
  enum class Stop : uint8_t { kDrain, kKill };
  Victims victims = Victims::kNewest;
  Stop stop = Stop::kDrain;
};

struct GatewaySpec {
  int count = 1;
  bool shared_state = false;  // Redis-style sync between the gateways (default: count > 1)
  TimeNs sync_interval = 200 * kNsPerMs;
  TimeNs sync_delay = 1 * kNsPerMs;  // from a sync's start until its view is applied
  TimeNs liveness_ttl = 2 * kNsPerSec;
  TimeNs scrape_interval = 100 * kNsPerMs;
  // The gateway's `telemetry:` knobs (adaptive periods, budget), and whether gateways sharing
  // state split the scraping as gateway/telemetry_share.h does (false: each scrapes every replica).
  fleet::ScrapePolicy scrape_policy;
  bool telemetry_sharing = true;
  TimeNs network_latency = 0;  // gateway <-> engine, one way
  // Shared in-flight limits are leased in slots this far ahead, as the gateway's
  // shared_state.inflight_slots_ahead (one worker per simulated gateway); 0: request by request.
  int64_t inflight_slots_ahead = 16;
  // The model's routing knobs and protection, as under a gateway config's `routing:` and a
  // model's `limits:` (docs/configuration.md).
  fleet::LoadBalanceParams load_balance;
  fleet::TopKParams top_k;
  fleet::SlowStartParams slow_start;
  uint32_t candidate_sample = 0;
  double auto_blend_load_balance_weight = 1.0;
  fleet::ModelLimits limits;
  // The gateway's queue and request deadlines, as under a gateway config's `admission:`
  // (docs/admission.md): off / fifo / deadline, max_queued, max_wait_ms, recheck_ms,
  // default_deadline_ms. A request's deadline is its class's `deadline_s` (its client gives up
  // then, and says so), else default_deadline_ms.
  fleet::AdmissionParams admission;
  TimeNs capacity_refresh = 1 * kNsPerSec;
  TimeNs capacity_window = 60 * kNsPerSec;
  TimeNs capacity_time_constant = 10 * kNsPerSec;
  health::HealthSettings health;
  int retry_max_attempts = 3;
  double retry_budget_ratio = 0.2;
  double retry_budget_min_per_second = 5;
  bool session_affinity = false;
  ScaleDownSpec scale_down;
};

struct ScenarioEvent {
  enum class Kind : uint8_t {
    kAddReplicas,     // `count` new replicas of `gpu`
    kRemoveReplicas,  // `count` replicas of `gpu` leave, as the gateways' scale_down: says
    kFailReplica,     // replica `replica` stops answering: connections refused, requests cut
    kRecoverReplica,  // ... and comes back
    kSlowReplica,     // replica `replica`'s steps take `factor` times as long (1 restores it)
    kKillGateway,     // gateway `gateway` dies: its requests in flight are cut
    kRedisOutage,     // the shared state does not answer for `duration`
  };
  Kind kind = Kind::kAddReplicas;
  TimeNs at = 0;
  std::string gpu;
  int count = 0;
  int replica = -1;
  int gateway = -1;
  double factor = 1;
  TimeNs duration = 0;
  int line = 0;
};

struct Slo {
  double ttft_ms = 0;  // 0: not checked
  double tpot_ms = 50;
  double e2e_ms = 0;
};

struct RecordSpec {
  bool per_request_csv = false;
  bool per_second_csv = true;
  bool plots = true;
  Slo slo;
};

// One run of the scenario: a strategy (or blend), under a label, with the gateways' knobs the
// run uses (the scenario's, with the entry's `routing:` over them).
struct StrategyRun {
  std::string label;     // unique; the strategy's own text when not given
  std::string strategy;  // as a request's routing-strategy header
  GatewaySpec gateways;
  bool autoscale = false;  // the scenario's `autoscale:` applies the optimizer every interval
};

struct Scenario {
  std::string name;
  std::string path;  // the file it was read from ("" for text)
  uint64_t seed = 1;
  TimeNs duration = 60 * kNsPerSec;  // arrivals are generated over [0, duration)
  TimeNs warmup = 0;                 // requests arriving before this are not measured
  TimeNs drain = 120 * kNsPerSec;    // after `duration`, at most this long for requests in flight
  std::string model = "llama2-7b";   // the performance profile (data/profiles.yaml)
  std::string profiles_path;         // "" : the built-in profiles
  std::vector<FleetGroup> fleet;
  GatewaySpec gateways;
  std::vector<StrategyRun> strategies;
  WorkloadSpec workload;
  std::vector<ScenarioEvent> events;  // by time
  RecordSpec record;
  std::map<std::string, double> prices;  // US dollars per GPU-hour by GPU type (`prices:`)
  AutoscaleSpec autoscale;
  // Capacity probe (a `load:` workload): each GPU type alone, saturated by this many closed-loop
  // clients of the mix started over 2 s, measured from 3 s on for `capacity_seconds`.
  int capacity_clients = 64;
  double capacity_seconds = 8;

  int replicaCount() const;
};

// The scenario as one of its runs sees it: the run's gateway knobs in place of the scenario's.
Scenario scenarioFor(const Scenario& scenario, const StrategyRun& run);

// Throws ConfigError("FILE:LINE: key: problem"). `name` labels the messages (a path or "<text>");
// relative paths in the scenario (profiles, trace) are taken from `base_dir`.
Scenario parseScenario(const std::string& yaml_text, const std::string& name,
                       const std::string& base_dir = ".");
Scenario loadScenarioFile(const std::string& path);

}  // namespace switchyard::sim
