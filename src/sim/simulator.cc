#include "sim/simulator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "fleet/discovery/kubernetes/settings.h"
#include "sim/simulator_impl.h"

namespace switchyard::sim {
namespace {

constexpr uint32_t kNoReplica = std::numeric_limits<uint32_t>::max();
constexpr TimeNs kHealthPeriod = 100 * kNsPerMs;  // the gateway's health evaluation period
constexpr TimeNs kQueuePeriod = 100 * kNsPerMs;
constexpr uint64_t kProgressEvery = 1 << 14;

engine::ProfileCatalog catalogOf(const Scenario& s) {
  return s.profiles_path.empty() ? engine::builtinProfiles()
                                 : engine::loadProfilesFile(s.profiles_path);
}

// The rate each open-loop run uses: the caller's (a `load:` turned into a rate), else the file's.
double rateOf(const Scenario& s, const RunOptions& o) {
  return o.rate > 0 ? o.rate : s.workload.arrivals.rate;
}

}  // namespace

Simulator::Simulator(const Scenario& scenario, const RunOptions& options)
    : scenario_(scenario),
      options_(options),
      catalog_(catalogOf(scenario)),
      gateways_(static_cast<size_t>(scenario.gateways.count)),
      shared_(scenario.gateways.count, scenario.gateways.liveness_ttl),
      workload_(scenario.workload, rateOf(scenario, options), scenario.duration, scenario.seed),
      gateway_rng_(scenario.seed * 0xA24BAED4963EE407ull + 0x6A) {
  std::string_view bad;
  if (routing::parseStrategySpec(options_.strategy, spec_, &bad) != routing::SpecError::kNone) {
    throw ConfigError("unknown routing strategy '" + options_.strategy + "'");
  }
  // Statistics groups: one per GPU type, in fleet order, named as the scenario first names it.
  for (const FleetGroup& g : scenario_.fleet) {
    const std::string canonical = catalog_.findGpu(g.gpu)->name;
    bool known = false;
    for (const std::string& type : gpu_types_) {
      known |= catalog_.findGpu(type)->name == canonical;
    }
    if (!known) gpu_types_.push_back(g.gpu);
  }
  groups_.resize(gpu_types_.size() + 1);
  for (size_t i = 0; i < gpu_types_.size(); ++i) groups_[i].label = gpu_types_[i];
  groups_.back().label = "all";
  second_ttft_.resize(groups_.size());
  second_e2e_.resize(groups_.size());
  second_counts_.resize(groups_.size());

  end_ = scenario_.duration;
  for (size_t group = 0; group < scenario_.fleet.size(); ++group) {
    for (int i = 0; i < scenario_.fleet[group].count; ++i) addReplica(group, 0, /*starting=*/false);
  }

  const GatewaySpec& gs = scenario_.gateways;
  const int gateway_count = gs.count;
  views_.resize(gateways_.size());
  for (int i = 0; i < gateway_count; ++i) {
    SimGateway& g = gateways_[static_cast<size_t>(i)];
    g.index = i;
    g.rng = Rng(scenario_.seed * 0x9FB21C651E98DF25ull + 0x1234567ull * (i + 1));
    g.capacity = std::make_unique<fleet::CapacityTracker>(
        fleet::CapacitySettings{gs.capacity_window, gs.capacity_time_constant});
    g.health = std::make_unique<health::FleetHealth>(gs.health);
    g.scrape_budget.configure(gs.scrape_policy.max_scrapes_per_second, gs.scrape_interval);
    g.retry_budget = std::make_unique<admission::RetryBudget>(gs.retry_budget_ratio,
                                                              gs.retry_budget_min_per_second);
    live_gateways_.push_back(i);
  }
  applyFleet(0);
  token_events_.reserve(1024);
  if (!options_.per_request_csv.empty()) {
    request_csv_ = std::make_unique<std::ofstream>(options_.per_request_csv);
    if (!*request_csv_) throw ConfigError("cannot write " + options_.per_request_csv);
    *request_csv_ << "arrival_s,gateway,replica,gpu,class,prompt_tokens,output_tokens,outcome,"
                     "attempts,ttft_ms,tpot_ms,e2e_ms\n";
  }
}

void Simulator::addReplica(size_t group, TimeNs now, bool starting) {
  const FleetGroup& fg = scenario_.fleet[group];
  SimReplica r;
  r.index = static_cast<uint32_t>(replicas_.size());
  r.group = static_cast<uint16_t>(group);
  const std::string canonical = catalog_.findGpu(fg.gpu)->name;
  for (size_t t = 0; t < gpu_types_.size(); ++t) {
    if (catalog_.findGpu(gpu_types_[t])->name == canonical) r.gpu_type = static_cast<uint16_t>(t);
  }
  r.name = fmt::format("{}-{}:8000", gpu_types_[r.gpu_type], r.index);
  replica_by_name_.emplace(r.name, r.index);
  engine::ProfileCatalog tuned = catalog_;
  tuned.tuning = fg.tuning;
  r.perf = engine::makePerfConfig(tuned, fg.gpu, scenario_.model, fg.tp);
  r.perf.prefix_caching = fg.prefix_caching;
  r.model = newModel(r.perf);
  r.added_at = now;
  r.ready_at = starting ? now + fg.startup : now;
  replicas_.push_back(std::move(r));
  models_.push_back(replicas_.back().model.get());
  if (window_open_ && !window_closed_) startWindow(replicas_.back());
}

std::unique_ptr<engine::BatchingModel> Simulator::newModel(const engine::PerfConfig& perf) {
  auto model = std::make_unique<engine::BatchingModel>(perf);
  // The simulator needs each request's first and last token only: plain decode steps cost O(1).
  model->setDetail(engine::BatchingModel::Detail::kMilestones);
  model->shareSeqPool(seq_pool_);
  model->setEventHint(&Simulator::prefetchRequest, this);
  return model;
}

void Simulator::applyFleet(TimeNs now) {
  shared_.resize(replicas_.size());
  for (SimGateway& g : gateways_) {
    if (g.alive) applyFleet(g, now);
  }
}

void Simulator::applyFleet(SimGateway& g, TimeNs now) {
  const GatewaySpec& gs = scenario_.gateways;
  fleet::ModelSpec model;
  model.name = scenario_.model;
  model.load_balance = gs.load_balance;
  model.top_k = gs.top_k;
  model.slow_start = gs.slow_start;
  model.candidate_sample = gs.candidate_sample;
  model.limits = gs.limits;
  model.admission = gs.admission;
  // Routed to: neither removed nor still starting.
  const auto routed = [now](const SimReplica& r) { return !r.removed && r.ready_at <= now; };
  for (const SimReplica& r : replicas_) {
    if (!routed(r)) continue;
    model.replicas.push_back(
        fleet::ReplicaSpec{r.name, {{"gpu", gpu_types_[r.gpu_type]}, {"engine", "vllm"}}});
  }
  g.registry.apply({model}, 3 * gs.scrape_interval, options_.strategy,
                   gs.auto_blend_load_balance_weight, now);
  g.snapshot = g.registry.latest();
  g.model = &g.snapshot->models[0];
  g.position.assign(replicas_.size(), -1);
  g.replica_of.clear();
  g.replica_at.clear();
  g.fleet_states.clear();
  g.states.resize(replicas_.size());
  size_t p = 0;
  for (const SimReplica& r : replicas_) {
    if (!routed(r)) continue;
    g.position[r.index] = static_cast<int32_t>(p);
    g.replica_at.push_back(r.index);
    g.states[r.index] = g.model->replicas[p].state;
    g.fleet_states.push_back(g.model->replicas[p].state);
    g.replica_of[g.model->replicas[p].state.get()] = r.index;
    ++p;
  }
  g.health->sync(g.snapshot);
  g.scratch.rows.reserve(p);
}

void Simulator::scheduleReplica(SimReplica& r) {
  const TimeNs next = r.model->nextEventTime();
  if (next < 0 || next == r.scheduled) return;
  // A later step than the one already queued cannot happen (the model only moves its next event
  // earlier on a submit); an earlier one replaces it: the queued event goes stale.
  if (r.scheduled >= 0 && r.scheduled <= next && r.scheduled >= now_) return;
  r.scheduled = next;
  ++r.generation;
  queue_.push(std::max(next, now_), kEngineStep, r.index, r.generation);
}

bool Simulator::pullArrival() {
  have_arrival_ = workload_.next(next_arrival_);
  if (have_arrival_) queue_.push(next_arrival_.at, kArrival);
  return have_arrival_;
}

RunResult Simulator::run() {
  const GatewaySpec& gs = scenario_.gateways;
  for (SimGateway& g : gateways_) {
    // The gateways' timers start at staggered phases, as independent processes would.
    const TimeNs phase =
        static_cast<TimeNs>(g.index) * gs.scrape_interval / static_cast<TimeNs>(gateways_.size());
    const auto i = static_cast<uint32_t>(g.index);
    queue_.push(phase, kScrape, i);
    queue_.push(gs.capacity_refresh + phase, kCapacity, i);
    queue_.push(kHealthPeriod + phase, kHealthTick, i);
    queue_.push(gs.health.probe_interval + phase, kProbe, i);
    if (distributed()) {
      queue_.push(phase * gs.sync_interval / std::max<TimeNs>(1, gs.scrape_interval), kSync, i);
    }
  }
  queue_.push(kNsPerSec, kSecond);
  queue_.push(kQueuePeriod, kQueueSample);
  queue_.push(scenario_.warmup, kWindowStart);
  queue_.push(end_, kWindowEnd);
  for (size_t i = 0; i < scenario_.events.size(); ++i) {
    queue_.push(scenario_.events[i].at, kScenario, static_cast<uint32_t>(i));
  }
  const ArrivalSpec& arrivals = scenario_.workload.arrivals;
  if (arrivals.kind == ArrivalSpec::Kind::kClosedLoop) {
    for (int c = 0; c < arrivals.clients; ++c) {
      queue_.push(arrivals.ramp * c / arrivals.clients, kClientSend, static_cast<uint32_t>(c));
    }
  }
  pullArrival();  // bursts come through here too, with any arrival process
  startAutoscale();
  // Session requests per replica, for the controller's choice and for what the victims held.
  const bool removes = std::any_of(scenario_.events.begin(), scenario_.events.end(), [](auto& e) {
    return e.kind == ScenarioEvent::Kind::kRemoveReplicas;
  });
  if (removes || autoscaling_) queue_.push(0, kScaleDownSample);

  const TimeNs stop = end_ + scenario_.drain;
  while (!queue_.empty()) {
    const Event e = queue_.pop();
    if (e.time > stop) break;
    now_ = e.time;
    ++events_;
    // The next event, if it is a replica's step, is most likely the least of the root's
    // children now: its model's lines start loading here, what they point to after this event
    // (a model is cold by its next step in a large fleet, and each level is a miss).
    const Event* next = queue_.peekAfterPop();
    const uint32_t ahead = next != nullptr && next->kind == kEngineStep ? next->target : kNoReplica;
    if (ahead != kNoReplica) {
      models_[ahead]->prefetchForAdvance();
      __builtin_prefetch(&replicas_[ahead]);
    }
    dispatch(e);
    if (ahead != kNoReplica) models_[ahead]->prefetchStep();
    if (now_ >= end_ && window_closed_ && !have_arrival_ && live_requests_ == 0) break;
    if ((events_ & (kProgressEvery - 1)) == 0 && options_.progress) {
      options_.progress(Progress{now_, end_, events_, requests_total_});
    }
  }
  if (!window_closed_) endWindow();
  // Whatever is still in flight did not finish in time.
  for (uint32_t slot = 0; slot < requests_.size(); ++slot) {
    if (requests_[slot].live) finish(slot, Outcome::kUnfinished);
  }
  if (options_.progress) options_.progress(Progress{now_, end_, events_, requests_total_});
  return collect();
}

void Simulator::dispatch(const Event& e) {
  switch (static_cast<EventKind>(e.kind)) {
    case kArrival: {
      const Arrival a = next_arrival_;
      pullArrival();
      onArrival(newRequest(a, -1));
      break;
    }
    case kClientSend:
      if (now_ < end_) onArrival(newRequest(workload_.shape(now_), static_cast<int>(e.target)));
      break;
    case kEngineStep: {
      SimReplica& r = replicas_[e.target];
      if (e.arg != r.generation) break;  // replaced by an earlier step
      r.scheduled = -1;
      onEngineStep(r);
      break;
    }
    case kEngineDeliver:
      deliver(e.arg);
      break;
    case kGatewayComplete:
      gatewayComplete(e.arg);
      break;
    case kDeadline:
      onDeadline(e.arg);
      break;
    case kScrape: {
      SimGateway& g = gateways_[e.target];
      if (!g.alive) break;
      scrapeTick(g);
      // The tick comes at the shortest period, so that every replica's period falls on one.
      queue_.push(now_ + fleet::shortestScrapePeriod(scenario_.gateways.scrape_policy,
                                                     scenario_.gateways.scrape_interval),
                  kScrape, e.target);
      break;
    }
    case kCapacity: {
      SimGateway& g = gateways_[e.target];
      if (!g.alive) break;
      refreshCapacity(g);
      queue_.push(now_ + scenario_.gateways.capacity_refresh, kCapacity, e.target);
      break;
    }
    case kHealthTick: {
      SimGateway& g = gateways_[e.target];
      if (!g.alive) break;
      healthTick(g);
      queue_.push(now_ + kHealthPeriod, kHealthTick, e.target);
      break;
    }
    case kProbe: {
      SimGateway& g = gateways_[e.target];
      if (!g.alive) break;
      probeAll(g);
      queue_.push(now_ + scenario_.gateways.health.probe_interval, kProbe, e.target);
      break;
    }
    case kSync: {
      SimGateway& g = gateways_[e.target];
      if (!g.alive) break;
      sync(g);
      queue_.push(now_ + scenario_.gateways.sync_interval, kSync, e.target);
      break;
    }
    case kSyncApply: {
      SimGateway& g = gateways_[e.target];
      if (g.alive) applyView(g, views_[e.target]);
      break;
    }
    case kSecond:
      onSecond();
      queue_.push(now_ + kNsPerSec, kSecond);
      break;
    case kQueueSample:
      onQueueSample();
      queue_.push(now_ + kQueuePeriod, kQueueSample);
      break;
    case kScenario:
      onScenarioEvent(scenario_.events[e.target]);
      break;
    case kRedisBack:
      shared_.setDown(false);
      break;
    case kWindowStart:
      window_open_ = true;
      for (SimReplica& r : replicas_) startWindow(r);
      break;
    case kWindowEnd:
      endWindow();
      break;
    case kQueueRecheck:
      if (gateways_[e.target].alive) recheckQueue(gateways_[e.target]);
      break;
    case kReplicasReady:
      applyFleet(now_);
      break;
    case kScaleDownSample:
      sampleSessionRequests();
      // As often as the scale-down controller reviews the fleet.
      queue_.push(now_ + fleet::kubernetes::ScaleDownSettings{}.interval, kScaleDownSample);
      break;
    case kAutoscale:
      onAutoscale();
      queue_.push(now_ + scenario_.autoscale.interval, kAutoscale);
      break;
    case kQueueWake:
      gateways_[e.target].wake_pending = false;
      if (gateways_[e.target].alive) serveQueue(gateways_[e.target]);
      break;
  }
}

void Simulator::onScenarioEvent(const ScenarioEvent& e) {
  switch (e.kind) {
    case ScenarioEvent::Kind::kAddReplicas: {
      const bool first = added_at_ < 0;
      const size_t before = replicas_.size();
      addReplicas(e.gpu, e.count);
      for (size_t i = before; i < replicas_.size(); ++i) replicas_[i].added = first;
      if (first && replicas_.size() > before) {
        // The cohort is followed from when it joins the gateways' fleet (after its start-up).
        added_at_ = replicas_[before].ready_at;
        result_.added.at_s = static_cast<double>(added_at_) / kNsPerSec;
        result_.added.count = e.count;
        result_.added.fleet = static_cast<int>(std::count_if(
            replicas_.begin(), replicas_.end(), [](const SimReplica& r) { return !r.removed; }));
      }
      applyFleet(now_);
      break;
    }
    case ScenarioEvent::Kind::kRemoveReplicas:
      removeReplicas(e.gpu, e.count);
      applyFleet(now_);
      break;
    case ScenarioEvent::Kind::kFailReplica:
      if (static_cast<size_t>(e.replica) < replicas_.size()) {
        failReplica(replicas_[static_cast<size_t>(e.replica)]);
      }
      break;
    case ScenarioEvent::Kind::kRecoverReplica:
      if (static_cast<size_t>(e.replica) < replicas_.size()) {
        replicas_[static_cast<size_t>(e.replica)].alive = true;
      }
      break;
    case ScenarioEvent::Kind::kSlowReplica:
      if (static_cast<size_t>(e.replica) < replicas_.size()) {
        replicas_[static_cast<size_t>(e.replica)].model->setSlowdown(e.factor);
      }
      break;
    case ScenarioEvent::Kind::kKillGateway:
      if (static_cast<size_t>(e.gateway) < gateways_.size()) {
        killGateway(gateways_[static_cast<size_t>(e.gateway)]);
      }
      break;
    case ScenarioEvent::Kind::kRedisOutage:
      if (!shared_.down()) shared_down_at_ = now_;
      shared_.setDown(true);
      queue_.push(now_ + e.duration, kRedisBack);
      break;
  }
}

void Simulator::failReplica(SimReplica& r) {
  if (!r.alive) return;
  r.alive = false;
  // The engine process is gone: whatever it held is lost, and it comes back empty.
  catchUp(r);
  r.busy_offset += r.model->load().busy_seconds_total;  // keep what it did before failing
  r.tokens_offset += r.model->load().generated_tokens_total;
  r.model = newModel(r.perf);
  models_[r.index] = r.model.get();
  ++r.generation;
  r.scheduled = -1;
  r.inflight = 0;
  for (uint32_t slot = 0; slot < requests_.size(); ++slot) {
    SimRequest& q = requests_[slot];
    if (!q.live || !q.at_engine || q.replica != r.index) continue;
    q.at_engine = false;
    attemptFailed(slot, q.first_token < 0);
  }
}

void Simulator::killGateway(SimGateway& g) {
  if (!g.alive) return;
  g.alive = false;
  g.died_at = now_;
  live_gateways_.erase(std::remove(live_gateways_.begin(), live_gateways_.end(), g.index),
                       live_gateways_.end());
  shared_.forget(g.index);
  // Its clients' connections are cut: the engines abort what it had forwarded.
  for (uint32_t slot = 0; slot < requests_.size(); ++slot) {
    SimRequest& q = requests_[slot];
    if (!q.live || q.gateway != g.index) continue;
    cancelAtEngine(slot);
    finish(slot, Outcome::kUpstreamFailed);
  }
}

RunResult runSimulation(const Scenario& scenario, const RunOptions& options) {
  Simulator simulator(scenario, options);
  return simulator.run();
}

}  // namespace switchyard::sim
