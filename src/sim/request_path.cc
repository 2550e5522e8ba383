// A request's path through a simulated gateway, as Worker::Impl::proxy and forward() take it in
// the live gateway (src/gateway/worker.cc): model-wide rate limit, routing (with the request's
// shape and its session's pin), check-and-admit on the chosen replica (locally, or atomically in
// the shared state when limits are shared), forwarding, failover to another replica within the
// retry budget when an attempt fails before any byte reached the client, the admission queue
// when every replica is at its limit (RequestQueue and waitTurn(): first come first served,
// bounded by count and age, deadline-aware re-checks, with the gateway's own decision functions
// in admission/deadline_admission.h), and the completion's accounting into the replica's counters
// (what capacity learning and health read).
#include <algorithm>
#include <cmath>

#include "admission/deadline_admission.h"
#include "admission/inflight_admission.h"
#include "fleet/completion_accounting.h"
#include "sim/simulator_impl.h"

namespace switchyard::sim {
namespace {

constexpr int kMaxAdmissionRaces = 8;  // as the worker: re-picks after losing an admission race
constexpr int64_t kRoutingTimerEvery = 16;  // decisions per timed one (--no-routing-timer: none)

// Sets a snapshot position aside for the rest of the request (failed or lost a race); false
// when the list is full.
bool addTried(SimRequest& q, int position) {
  if (position < 0) return true;
  const auto end = q.tried.begin() + q.tried_count;
  if (std::find(q.tried.begin(), end, position) != end) return true;
  if (q.tried_count >= q.tried.size()) return false;
  q.tried[q.tried_count++] = position;
  return true;
}

// The same for a replica that failed the request: kept before the race losers.
bool addFailed(SimRequest& q, int position) {
  if (position < 0) return true;
  const auto end = q.tried.begin() + q.tried_count;
  if (std::find(q.tried.begin(), end, position) != end) return true;
  if (q.tried_count >= q.tried.size()) return false;
  std::copy_backward(q.tried.begin() + q.failed_count, end, end + 1);
  q.tried[q.failed_count++] = position;
  ++q.tried_count;
  return true;
}

}  // namespace

std::optional<uint32_t> Simulator::liveSlot(uint64_t id) const {
  const auto slot = static_cast<uint32_t>(id & 0xffffffffu);
  if (slot >= requests_.size()) return std::nullopt;
  const SimRequest& q = requests_[slot];
  if (!q.live || (q.generation & kGenerationMask) != (id >> kGenerationShift)) return std::nullopt;
  return slot;
}

uint32_t Simulator::newRequest(const Arrival& a, int client) {
  uint32_t slot;
  if (!free_requests_.empty()) {
    slot = free_requests_.back();
    free_requests_.pop_back();
  } else {
    slot = static_cast<uint32_t>(requests_.size());
    requests_.emplace_back();
  }
  SimRequest& q = requests_[slot];
  const uint32_t generation = q.generation + 1;
  q = SimRequest{};
  q.generation = generation;
  q.live = true;
  q.arrival = now_;
  q.prompt_tokens = a.prompt_tokens;
  q.output_tokens = a.output_tokens;
  q.deadline = a.deadline > 0 ? now_ + a.deadline : 0;
  q.session = a.session;
  q.client = client;
  q.identity = client >= 0 ? client : a.client;
  q.request_class = a.request_class;
  q.measured = now_ >= scenario_.warmup && now_ < end_;
  ++requests_total_;
  ++live_requests_;
  ++second_counts_.back().arrivals;
  return slot;
}

void Simulator::onArrival(uint32_t slot) {
  SimRequest& q = requests_[slot];
  if (live_gateways_.empty()) {
    finish(slot, Outcome::kUpstreamFailed);  // nothing answers at the front door
    return;
  }
  // The front load balancer spreads clients over the live gateways.
  q.gateway = static_cast<uint16_t>(
      live_gateways_[gateway_rng_.below(static_cast<uint32_t>(live_gateways_.size()))]);
  if (q.deadline > 0) queue_.push(q.deadline, kDeadline, 0, engineId(slot));
  SimGateway& g = gateways_[q.gateway];
  if (autoscaling_) noteDemand(q);
  // The client says when it gives up (x-request-timeout); else the model's default deadline.
  q.admit_deadline = admission::deadlineAt(q.arrival, q.deadline > 0 ? q.deadline - q.arrival : -1,
                                           g.model->admission);
  g.retry_budget->onRequest(now_);
  // Requests queued before this one go first: it joins them without trying.
  if (g.model->admission.queue != fleet::QueueMode::kOff && g.queued > 0) {
    enqueue(slot);
    return;
  }
  route(slot);
}

bool Simulator::sharedLimits() const {
  const fleet::ModelLimits& limits = scenario_.gateways.limits;
  return distributed() &&
         (limits.max_inflight_per_replica > 0 || limits.requests_per_second_per_replica > 0);
}

bool Simulator::leasesSlots() const {
  const fleet::ModelLimits& limits = scenario_.gateways.limits;
  // As gateway::leasesInflightSlots, with one worker per simulated gateway.
  return distributed() && limits.max_inflight_per_replica > 0 &&
         limits.requests_per_second_per_replica <= 0 &&
         admission::InflightSlots::lead(limits.max_inflight_per_replica, 1, 1,
                                        scenario_.gateways.inflight_slots_ahead) > 0;
}

int64_t Simulator::slotLead(const SimGateway& g) const {
  return admission::InflightSlots::lead(
      g.model->limits.max_inflight_per_replica,
      g.model->runtime->live_gateways.load(std::memory_order_relaxed), 1,
      scenario_.gateways.inflight_slots_ahead);
}

Simulator::SharedAdmission Simulator::admitShared(SimGateway& g, SimRequest& q, uint32_t replica,
                                                  fleet::ReplicaState& state) {
  const fleet::ModelEntry& model = *g.model;
  const int64_t limit = model.limits.max_inflight_per_replica;
  const double per_replica_rate = model.limits.requests_per_second_per_replica;
  q.shared_admitted = false;
  q.slot_leased = false;
  auto own_share = [&] {  // shared state did not answer: this gateway's share alone
    ++result_.shared_state_degraded;
    if (!admission::withinShare(state, limit,
                                model.runtime->live_gateways.load(std::memory_order_relaxed),
                                model.runtime->gateway_rank.load(std::memory_order_relaxed))) {
      admission::releaseLocally(state);
      return SharedAdmission::kAtLimit;
    }
    if (per_replica_rate > 0 && model.runtime->rate.tryAcquire(now_) > 0) {
      admission::releaseLocally(state);
      return SharedAdmission::kRateLimited;
    }
    return SharedAdmission::kAdmitted;
  };
  if (leasesSlots()) {
    // AdmissionStage::onLeasedReplica: a free leased slot, else one call that leases this
    // request's slot and `lead` more ahead.
    const std::string& name = replicas_[replica].name;
    if (g.slots.take(model.name, name)) {
      q.slot_leased = true;
      return SharedAdmission::kAdmitted;
    }
    ++result_.shared_admission_calls;
    const int64_t granted = shared_.growSlots(g.index, replica, limit, 1 + slotLead(g), now_);
    if (granted < 0) return own_share();
    if (granted == 0) {
      admission::releaseLocally(state);
      return SharedAdmission::kAtLimit;
    }
    g.slots.granted(model.name, name, granted, shared_.leased(g.index, replica));
    q.slot_leased = true;
    return SharedAdmission::kAdmitted;
  }
  const double model_rate =
      per_replica_rate *
      std::max(1, model.runtime->routable_replicas.load(std::memory_order_relaxed));
  TimeNs retry_after = 0;
  ++result_.shared_admission_calls;
  switch (shared_.admit(g.index, replica, limit, model_rate, std::max(1.0, model_rate), now_,
                        &retry_after)) {
    case SharedVerdict::kAdmitted:
      q.shared_admitted = true;
      return SharedAdmission::kAdmitted;
    case SharedVerdict::kInflightLimit:
      admission::releaseLocally(state);
      return SharedAdmission::kAtLimit;
    case SharedVerdict::kRateLimited:
      admission::releaseLocally(state);
      return SharedAdmission::kRateLimited;
    case SharedVerdict::kDegraded:
      break;
  }
  return own_share();
}

void Simulator::releaseShared(SimGateway& g, SimRequest& q) {
  if (q.shared_admitted) shared_.release(g.index, q.replica);
  if (q.slot_leased) {
    // The slot goes back to the lease; past twice the lead, slots go back to shared state.
    const int64_t back = g.slots.put(g.model->name, replicas_[q.replica].name, slotLead(g));
    if (back > 0 && !shared_.down()) shared_.changeSlots(g.index, q.replica, -back);
  }
  q.shared_admitted = false;
  q.slot_leased = false;
}

void Simulator::route(uint32_t slot) {
  SimRequest& q = requests_[slot];
  SimGateway& g = gateways_[q.gateway];
  const fleet::ModelEntry& model = *g.model;
  const int64_t limit = model.limits.max_inflight_per_replica;
  const double per_replica_rate = model.limits.requests_per_second_per_replica;
  const bool shared_limits = sharedLimits();

  // Model-wide rate limit, checked once per request (the first attempt).
  if (q.attempts == 0 && q.tried_count == 0 && per_replica_rate > 0 && !shared_limits) {
    if (model.runtime->rate.tryAcquire(now_) > 0) {
      finish(slot, Outcome::kRateLimited);
      return;
    }
  }
  routing::RouteRequest request{&spec_, now_, {}, {}};
  request.shape.prompt_tokens = q.prompt_tokens;
  request.shape.max_tokens = q.output_tokens;
  if (scenario_.gateways.session_affinity && q.session != 0) {
    const int pinned = shared_.pinned(q.session);
    if (pinned >= 0 && static_cast<size_t>(pinned) < g.position.size()) {
      request.preferred = g.position[static_cast<size_t>(pinned)];
    }
  }
  const int max_attempts = std::min(scenario_.gateways.retry_max_attempts, 10);
  int admission_races = 0;
  while (q.attempts < max_attempts) {
    request.tried = std::span<const int>(q.tried.data(), q.tried_count);
    // One decision in kRoutingTimerEvery is timed: two clock reads per decision were 2-3 % of a
    // run, and a sample of thousands gives the same mean and p99.
    const bool timed = options_.wall_clock && result_.decisions % kRoutingTimerEvery == 0;
    const TimeNs started = timed ? options_.wall_clock() : 0;
    const routing::Decision decision =
        routing::route(*g.snapshot, model, request, g.rng, g.scratch);
    if (timed) result_.routing_ns.add(static_cast<double>(options_.wall_clock() - started));
    ++result_.decisions;
    if (decision.chosen < 0) {
      if (decision.saturated > 0 || admission_races > 0) {
        saturated(slot);
        return;
      }
      finish(slot, model.replicas.empty() ? Outcome::kNoReplica : Outcome::kUpstreamFailed);
      return;
    }
    const uint32_t replica = g.replica_at[static_cast<size_t>(decision.chosen)];
    fleet::ReplicaState& state = *g.states[replica];
    if (scenario_.gateways.session_affinity && q.session != 0 && !decision.affinity) {
      shared_.pin(q.session, static_cast<int>(replica));
    }
    // Deadline: a request that cannot finish in time even if it starts now is refused before it
    // costs any GPU time.
    if (admission::deadlineAware(model.admission, q.admit_deadline) &&
        admission::cannotFinishIfStartedNow(
            now_,
            admission::executionIfStartedNow(state, model, q.prompt_tokens, q.output_tokens).total,
            q.admit_deadline)) {
      finish(slot, Outcome::kDeadlineUnattainable);
      return;
    }

    // Check-and-admit (admission/inflight_admission.h, as the gateway's admission stage): the
    // local count with the other gateways' as last read, then, with shared limits, in the
    // shared state, through leased slots or request by request.
    bool lost_race = !admission::admitLocally(state, limit);
    if (!lost_race && shared_limits) {
      const SharedAdmission admitted = admitShared(g, q, replica, state);
      if (admitted == SharedAdmission::kRateLimited) {
        finish(slot, Outcome::kRateLimited);
        return;
      }
      lost_race = admitted == SharedAdmission::kAtLimit;
    }
    if (lost_race) {
      if (++admission_races > kMaxAdmissionRaces || !addTried(q, decision.chosen)) {
        saturated(slot);
        return;
      }
      request.preferred = -1;
      continue;
    }
    leaveQueue(q);  // admitted: a queued request gives up its place now
    fleet::ReplicaCounters& counters = state.counters();
    ++q.attempts;
    q.may_retry = q.attempts < max_attempts &&
                  static_cast<size_t>(q.tried_count) + 1 < model.replicas.size() &&
                  q.tried_count + 1 < static_cast<uint8_t>(q.tried.size()) &&
                  g.retry_budget->canSpend(now_);
    q.replica = replica;
    counters.requests_total.fetch_add(1, std::memory_order_relaxed);
    if (decision.affinity) {  // a pinned session's request: scale-down prefers other victims
      counters.affinity_requests_total.fetch_add(1, std::memory_order_relaxed);
    }
    noteRouted(replicas_[replica]);
    q.sent = now_;
    q.first_token = -1;
    q.streams_at_start = state.globalRunning();  // this request included
    // Streamed, as the load generator's: its prefill is pending until the first token.
    counters.prefill_pending_tokens.fetch_add(q.prompt_tokens, std::memory_order_relaxed);
    q.prefill_pending = true;
    SimReplica& r = replicas_[replica];
    if (!r.alive) {
      attemptFailed(slot, true);  // connection refused: nothing was sent; failover may follow
      return;
    }
    if (scenario_.gateways.network_latency > 0) {
      queue_.push(now_ + scenario_.gateways.network_latency, kEngineDeliver, replica,
                  engineId(slot));
    } else {
      deliver(engineId(slot));
    }
    return;
  }
  finish(slot, Outcome::kUpstreamFailed);
}

void Simulator::noteRouted(const SimReplica& r) {
  if (added_at_ < 0 || now_ < added_at_) return;  // none added, or still starting
  static constexpr std::array<TimeNs, 3> kWindows = {2 * kNsPerSec, 5 * kNsPerSec, 10 * kNsPerSec};
  for (size_t w = 0; w < kWindows.size(); ++w) {
    if (now_ - added_at_ >= kWindows[w]) continue;
    ++routed_all_[w];
    routed_added_[w] += r.added;
  }
}

void Simulator::deliver(uint64_t id) {
  const std::optional<uint32_t> live = liveSlot(id);
  if (!live) return;
  const uint32_t slot = *live;
  SimRequest& q = requests_[slot];
  SimReplica& r = replicas_[q.replica];
  if (!r.alive) {
    attemptFailed(slot, true);
    return;
  }
  engine::ModelRequest request;
  request.id = engineId(slot);
  request.prompt_tokens = q.prompt_tokens;
  request.max_tokens = q.output_tokens;
  catchUp(r);
  r.model->submit(request, now_);
  q.at_engine = true;
  ++r.inflight;
  scheduleReplica(r);
}

void Simulator::onEngineStep(SimReplica& r) {
  token_events_.clear();
  advancing_ = r.index;
  r.model->advance(now_, token_events_);
  for (const engine::TokenEvent& e : token_events_) {
    const std::optional<uint32_t> slot = liveSlot(e.id);
    if (!slot) continue;
    if (e.previous_token < 0) {
      requests_[*slot].first_token = e.time;
      prefillDone(requests_[*slot]);
    }
    if (e.finished) onEngineFinished(*slot, e.time);
  }
  scheduleReplica(r);
}

void Simulator::catchUp(SimReplica& r) {
  // The model reports nothing before its next event time, but it prices steps on its own
  // timeline: bring it to now before reading its load or giving it a request. Whatever is due
  // now is handled as its own event would (a same-instant event may not have run yet).
  if (r.model->nextEventTime() < 0) return;
  std::vector<engine::TokenEvent> events;
  advancing_ = r.index;
  r.model->advance(now_, events);
  for (const engine::TokenEvent& e : events) {
    const std::optional<uint32_t> slot = liveSlot(e.id);
    if (!slot) continue;
    if (e.previous_token < 0) {
      requests_[*slot].first_token = e.time;
      prefillDone(requests_[*slot]);
    }
    if (e.finished) onEngineFinished(*slot, e.time);
  }
  if (!events.empty()) scheduleReplica(r);
}

void Simulator::onEngineFinished(uint32_t slot, TimeNs at) {
  SimRequest& q = requests_[slot];
  q.at_engine = false;
  leftEngine(replicas_[q.replica], at);
  if (scenario_.gateways.network_latency > 0) {
    queue_.push(at + scenario_.gateways.network_latency, kGatewayComplete, 0, engineId(slot));
  } else {
    gatewayComplete(engineId(slot));
  }
}

void Simulator::gatewayComplete(uint64_t id) {
  const std::optional<uint32_t> live = liveSlot(id);
  if (!live) return;
  const uint32_t slot = *live;
  SimRequest& q = requests_[slot];
  SimGateway& g = gateways_[q.gateway];
  fleet::ReplicaState& state = *g.states[q.replica];
  const TimeNs latency = scenario_.gateways.network_latency;
  fleet::CompletedResponse response;
  response.status = 200;
  response.prompt_tokens = q.prompt_tokens;
  response.output_tokens = q.output_tokens;
  response.event_stream = true;  // the workload streams, as the load generator does
  response.started = q.sent;
  response.first_byte_at = q.first_token + latency;
  response.finished = now_;
  response.streams_at_start = q.streams_at_start;
  response.streams_at_end = state.globalRunning();
  fleet::accountCompletion(state.counters(), response);
  admission::releaseLocally(state);
  state.recordSuccess();
  releaseShared(g, q);
  finish(slot, Outcome::kOk);
  wakeQueue(g);
}

void Simulator::prefillDone(SimRequest& q) {
  if (!q.prefill_pending) return;
  q.prefill_pending = false;
  gateways_[q.gateway].states[q.replica]->counters().prefill_pending_tokens.fetch_sub(
      q.prompt_tokens, std::memory_order_relaxed);
}

void Simulator::attemptFailed(uint32_t slot, bool before_first_byte) {
  SimRequest& q = requests_[slot];
  prefillDone(q);
  SimGateway& g = gateways_[q.gateway];
  fleet::ReplicaState& state = *g.states[q.replica];
  state.counters().upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
  state.recordFailure();
  admission::releaseLocally(state);
  releaseShared(g, q);
  wakeQueue(g);
  // Nothing reached the client yet: another replica, if the retry budget allows. The failed
  // replica goes before any race losers, which a queue turn forgets.
  if (g.alive && before_first_byte && q.may_retry && addFailed(q, g.position[q.replica]) &&
      g.retry_budget->trySpend(now_)) {
    route(slot);
    return;
  }
  finish(slot, Outcome::kUpstreamFailed);
}

void Simulator::onDeadline(uint64_t id) {
  const std::optional<uint32_t> live = liveSlot(id);
  if (!live) return;
  const uint32_t slot = *live;
  SimRequest& q = requests_[slot];
  // The client gave up: the gateway drops the upstream (the engine aborts the request); this is
  // not the replica's failure.
  SimGateway& g = gateways_[q.gateway];
  if (q.sent >= 0 && g.alive) {
    fleet::ReplicaState& state = *g.states[q.replica];
    admission::releaseLocally(state);
    releaseShared(g, q);
  }
  cancelAtEngine(slot);
  const bool held_slot = q.sent >= 0;
  finish(slot, Outcome::kDeadline);  // a request still queued leaves it: it cost nothing
  if (held_slot && g.alive) wakeQueue(g);
}

void Simulator::cancelAtEngine(uint32_t slot) {
  SimRequest& q = requests_[slot];
  if (!q.at_engine) return;
  SimReplica& r = replicas_[q.replica];
  catchUp(r);
  r.model->cancel(engineId(slot), now_);
  leftEngine(r, now_);
  q.at_engine = false;
  scheduleReplica(r);
}

void Simulator::finish(uint32_t slot, Outcome outcome) {
  SimRequest& q = requests_[slot];
  if (!q.live) return;
  leaveQueue(q);
  prefillDone(q);
  recordOutcome(q, outcome, now_);
  if (request_csv_) writeRequestCsv(q, outcome, now_);
  q.live = false;
  --live_requests_;
  free_requests_.push_back(slot);
  if (q.client >= 0 && now_ < end_) {
    queue_.push(now_, kClientSend, static_cast<uint32_t>(q.client));
  }
}

// --- The admission queue

void Simulator::saturated(uint32_t slot) {
  SimRequest& q = requests_[slot];
  if (q.queued) return;  // its turn came but no replica has room yet: it keeps its place
  if (gateways_[q.gateway].model->admission.queue == fleet::QueueMode::kOff) {
    finish(slot, Outcome::kInflightLimit);
    return;
  }
  enqueue(slot);
}

void Simulator::enqueue(uint32_t slot) {
  SimRequest& q = requests_[slot];
  SimGateway& g = gateways_[q.gateway];
  const fleet::AdmissionParams& params = g.model->admission;
  if (g.queued >= static_cast<int64_t>(params.max_queued)) {
    finish(slot, Outcome::kQueueFull);
    return;
  }
  // As RequestQueue::enter: no client may fill the queue (the same 429 queue_full).
  if (q.identity >= 0) {
    uint32_t& mine = g.queued_by_client[q.identity];
    if (mine >= params.max_queued_per_client) {
      if (q.measured) ++result_.queue_full_client;
      finish(slot, Outcome::kQueueFull);
      return;
    }
    ++mine;
  }
  q.queued = true;
  q.enqueued_at = now_;
  q.sent = -1;  // a request that failed over into the queue holds no slot while it waits
  g.waiting.push_back(engineId(slot));
  ++g.queued;
  result_.gateway_queue_max = std::max(result_.gateway_queue_max, g.queued);
  if (!g.recheck_pending) {
    g.recheck_pending = true;
    queue_.push(now_ + params.recheck, kQueueRecheck, static_cast<uint32_t>(g.index));
  }
}

void Simulator::leaveQueue(SimRequest& q) {
  if (!q.queued) return;
  q.queued = false;
  SimGateway& g = gateways_[q.gateway];
  --g.queued;
  if (q.identity >= 0) {
    const auto it = g.queued_by_client.find(q.identity);
    if (it != g.queued_by_client.end() && --it->second == 0) g.queued_by_client.erase(it);
  }
}

void Simulator::wakeQueue(SimGateway& g) {
  if (g.queued == 0 || g.wake_pending) return;
  g.wake_pending = true;
  queue_.push(now_, kQueueWake, static_cast<uint32_t>(g.index));
}

bool Simulator::recheckWaiter(uint32_t slot, size_t ahead) {
  SimRequest& q = requests_[slot];
  const admission::QueuedCheck check =
      admission::recheckQueued(*gateways_[q.gateway].model, now_, q.enqueued_at, q.admit_deadline,
                               q.prompt_tokens, q.output_tokens, [ahead] { return ahead; });
  if (check.verdict == admission::QueuedVerdict::kWaits) return true;
  finish(slot, check.verdict == admission::QueuedVerdict::kTooOld ? Outcome::kQueueTimeout
                                                                  : Outcome::kDeadlineUnattainable);
  return false;
}

void Simulator::serveQueue(SimGateway& g) {
  while (!g.waiting.empty()) {
    const uint64_t id = g.waiting.front();
    const std::optional<uint32_t> slot = liveSlot(id);
    if (!slot || !requests_[*slot].queued) {
      g.waiting.pop_front();
      continue;
    }
    if (!recheckWaiter(*slot, 0)) continue;  // refused: the next one is the head
    // Its turn: replicas lost to admission races may have room now; those that failed stay out.
    SimRequest& q = requests_[*slot];
    q.tried_count = q.failed_count;
    route(*slot);
    if (liveSlot(id) && requests_[*slot].queued) return;  // still no room
  }
}

void Simulator::recheckQueue(SimGateway& g) {
  g.recheck_pending = false;
  size_t ahead = 0;
  std::deque<uint64_t> kept;
  for (const uint64_t id : g.waiting) {
    const std::optional<uint32_t> slot = liveSlot(id);
    if (!slot || !requests_[*slot].queued) continue;
    if (recheckWaiter(*slot, ahead)) {
      kept.push_back(id);
      ++ahead;
    }
  }
  g.waiting.swap(kept);
  if (g.queued > 0) {
    g.recheck_pending = true;
    queue_.push(now_ + g.model->admission.recheck, kQueueRecheck, static_cast<uint32_t>(g.index));
  }
  serveQueue(g);  // the head tries on every re-check (slots freed on other gateways)
}

}  // namespace switchyard::sim
