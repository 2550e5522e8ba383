#include "observe/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "observe/prometheus_writer.h"
#include "routing/decision.h"

namespace switchyard::observe {
namespace {

using Out = std::back_insert_iterator<std::string>;

// Sums one histogram over shards into cumulative buckets and writes it.
template <typename H>
void appendHistogram(std::string& out, std::string_view name, std::initializer_list<Label> labels,
                     const std::vector<const H*>& parts) {
  if (parts.empty()) return;
  uint64_t cumulative = 0;
  uint64_t sum_ns = 0;
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t b = 0; b <= H::size(); ++b) {
    for (const H* h : parts) cumulative += h->count(b);
    std::string le = b < H::size() ? fmt::format("{}", parts[0]->bounds()[b] / 1e9) : "+Inf";
    appendSample(out, bucket, labels, static_cast<double>(cumulative), "le", le);
  }
  for (const H* h : parts) sum_ns += h->sumNs();
  appendSample(out, std::string(name) + "_sum", labels, static_cast<double>(sum_ns) / 1e9);
  appendSample(out, std::string(name) + "_count", labels, static_cast<double>(cumulative));
}

}  // namespace

std::string_view cancelStageName(CancelStage stage) {
  switch (stage) {
    case CancelStage::kQueued:
      return "queued";
    case CancelStage::kWaitingFirstByte:
      return "waiting_first_byte";
    case CancelStage::kStreaming:
      return "streaming";
    default:
      return "none";
  }
}

std::string_view limitName(LimitKind kind) {
  switch (kind) {
    case LimitKind::kModelRate:
      return "model_rate";
    case LimitKind::kUserRate:
      return "user_rate";
    case LimitKind::kReplicaInflight:
      return "replica_inflight";
    case LimitKind::kGatewayInflight:
      return "gateway_inflight";
    case LimitKind::kTokenRate:
      return "token_rate";
    case LimitKind::kDeadline:
      return "deadline_unattainable";
    case LimitKind::kQueueFull:
      return "queue_full";
    case LimitKind::kQueueTimeout:
      return "queue_timeout";
    case LimitKind::kSloBreached:
      return "slo_breached";
    case LimitKind::kOther:
    case LimitKind::kCount:
      break;
  }
  return "other";
}

std::string_view upstreamErrorName(UpstreamErrorKind kind) {
  switch (kind) {
    case UpstreamErrorKind::kConnect:
      return "connect";
    case UpstreamErrorKind::kReset:
      return "reset";
    case UpstreamErrorKind::k5xx:
      return "5xx";
    case UpstreamErrorKind::kTimeout:
      return "timeout";
    case UpstreamErrorKind::kCount:
      break;
  }
  return "other";
}

std::string_view statusClassName(size_t status_class) {
  static constexpr std::string_view kNames[kStatusClasses] = {"2xx", "3xx", "4xx", "5xx",
                                                              "none"};
  return status_class < kStatusClasses ? kNames[status_class] : "none";
}

void WorkerMetrics::bind(const fleet::FleetSnapshot& snapshot) {
  if (snapshot.version == bound_version_) return;
  bound_version_ = snapshot.version;
  bound_.assign(snapshot.models.size(), Bound{});
  std::lock_guard lock(blocks_mutex_);
  for (size_t m = 0; m < snapshot.models.size(); ++m) {
    const fleet::ModelEntry& model = snapshot.models[m];
    Bound& b = bound_[m];
    b.model_slot = registry_.modelSlot(model.name);
    if (model_blocks_.size() <= b.model_slot) model_blocks_.resize(b.model_slot + 1);
    if (!model_blocks_[b.model_slot]) model_blocks_[b.model_slot] = std::make_unique<ModelBlock>();
    b.model = model_blocks_[b.model_slot].get();
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      const uint32_t slot = registry_.replicaSlot(model.name, replica.state->name());
      if (replica_blocks_.size() <= slot) replica_blocks_.resize(slot + 1);
      if (!replica_blocks_[slot]) replica_blocks_[slot] = std::make_unique<ReplicaBlock>();
      b.replicas.push_back(replica_blocks_[slot].get());
      b.replica_slots.push_back(slot);
    }
  }
}

uint32_t WorkerMetrics::strategySlot(std::string_view text) {
  const uint32_t count = strategy_count_.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i) {
    if (strategy_names_[i] == text) return i;
  }
  if (count + 1 >= kStrategySlots) return kStrategySlots - 1;  // "other"
  strategy_names_[count] = std::string(text);  // allocates once per new strategy, bounded
  strategy_count_.store(count + 1, std::memory_order_release);
  return count;
}

MetricsRegistry::MetricsRegistry(size_t workers) {
  for (size_t i = 0; i < workers; ++i) workers_.push_back(std::make_unique<WorkerMetrics>(*this));
}

uint32_t MetricsRegistry::modelSlot(std::string_view model) {
  std::lock_guard lock(mutex_);
  if (auto it = model_index_.find(model); it != model_index_.end()) return it->second;
  const auto slot = static_cast<uint32_t>(models_.size());
  models_.emplace_back(model);
  model_index_.emplace(std::string(model), slot);
  return slot;
}

uint32_t MetricsRegistry::replicaSlot(std::string_view model, std::string_view replica) {
  std::lock_guard lock(mutex_);
  std::pair<std::string, std::string> key{std::string(model), std::string(replica)};
  if (auto it = replica_index_.find(key); it != replica_index_.end()) return it->second;
  const auto slot = static_cast<uint32_t>(replicas_.size());
  replicas_.push_back(key);
  replica_index_.emplace(std::move(key), slot);
  return slot;
}

std::string MetricsRegistry::modelName(uint32_t slot) const {
  std::lock_guard lock(mutex_);
  return slot < models_.size() ? models_[slot] : std::string();
}

std::pair<std::string, std::string> MetricsRegistry::replicaName(uint32_t slot) const {
  std::lock_guard lock(mutex_);
  return slot < replicas_.size() ? replicas_[slot] : std::pair<std::string, std::string>{};
}

double loadImbalance(const fleet::ModelEntry& model) {
  std::vector<double> load;
  bool any_capacity = false;
  for (const auto& r : model.replicas) {
    const double c = r.state->capacity().decode;
    any_capacity |= std::isfinite(c) && c > 0;
  }
  for (const auto& r : model.replicas) {
    const double running = static_cast<double>(r.state->globalRunning());
    const double c = r.state->capacity().decode;
    if (any_capacity) {
      if (std::isfinite(c) && c > 0) load.push_back(running / c);
    } else {
      load.push_back(running);
    }
  }
  if (load.empty()) return 1.0;
  double sum = 0;
  double max = 0;
  for (double l : load) {
    sum += l;
    max = std::max(max, l);
  }
  const double mean = sum / static_cast<double>(load.size());
  return mean > 0 ? max / mean : 1.0;
}

std::string MetricsRegistry::render(const fleet::FleetSnapshot& snapshot, TimeNs now,
                                    const ControlPlaneStats& stats) {
  std::string out;
  out.reserve(64 * 1024);
  std::vector<std::pair<std::string, std::string>> replica_names;
  std::vector<std::string> model_names;
  {
    std::lock_guard lock(mutex_);
    replica_names = replicas_;
    model_names = models_;
  }
  // Every shard's blocks and strategy names, under each shard's block mutex for the duration:
  // workers take it only when their snapshot changes.
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& w : workers_) locks.emplace_back(w->blocks_mutex_);
  auto replicaParts = [&](uint32_t slot) {
    std::vector<const ReplicaBlock*> parts;
    for (auto& w : workers_) {
      if (slot < w->replica_blocks_.size() && w->replica_blocks_[slot]) {
        parts.push_back(w->replica_blocks_[slot].get());
      }
    }
    return parts;
  };
  auto modelParts = [&](uint32_t slot) {
    std::vector<const ModelBlock*> parts;
    for (auto& w : workers_) {
      if (slot < w->model_blocks_.size() && w->model_blocks_[slot]) {
        parts.push_back(w->model_blocks_[slot].get());
      }
    }
    return parts;
  };
  // Strategy labels differ per worker (each interns its own); merge them by name.
  std::map<std::string, std::vector<std::pair<size_t, uint32_t>>> strategies;  // name -> (w, slot)
  for (size_t w = 0; w < workers_.size(); ++w) {
    const uint32_t count = workers_[w]->strategy_count_.load(std::memory_order_acquire);
    for (uint32_t s = 0; s < count; ++s) {
      strategies[workers_[w]->strategy_names_[s]].push_back({w, s});
    }
    strategies["other"].push_back({w, static_cast<uint32_t>(kStrategySlots - 1)});
  }

  // --- Requests.
  appendHeader(out, "switchyard_requests_total", "counter",
               "Client API requests by model, replica (empty when none answered), routing "
               "strategy and status class (none: no response was sent).");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    std::vector<const ReplicaBlock*> parts = replicaParts(slot);
    for (const auto& [strategy, where] : strategies) {
      for (size_t c = 0; c < kStatusClasses; ++c) {
        uint64_t sum = 0;
        for (const auto& [w, s] : where) {
          const auto& blocks = workers_[w]->replica_blocks_;
          if (slot < blocks.size() && blocks[slot]) sum += blocks[slot]->requests[s][c].get();
        }
        if (sum == 0) continue;
        appendSample(out, "switchyard_requests_total",
                     {{"model", replica_names[slot].first},
                      {"replica", replica_names[slot].second},
                      {"strategy", strategy},
                      {"code", statusClassName(c)}},
                     static_cast<double>(sum));
      }
    }
  }
  for (uint32_t slot = 0; slot < model_names.size(); ++slot) {
    for (const auto& [strategy, where] : strategies) {
      for (size_t c = 0; c < kStatusClasses; ++c) {
        uint64_t sum = 0;
        for (const auto& [w, s] : where) {
          const auto& blocks = workers_[w]->model_blocks_;
          if (slot < blocks.size() && blocks[slot]) sum += blocks[slot]->unrouted[s][c].get();
        }
        if (sum == 0) continue;
        appendSample(out, "switchyard_requests_total",
                     {{"model", model_names[slot]},
                      {"replica", ""},
                      {"strategy", strategy},
                      {"code", statusClassName(c)}},
                     static_cast<double>(sum));
      }
    }
  }
  for (size_t c = 0; c < kStatusClasses; ++c) {
    uint64_t sum = 0;
    for (auto& w : workers_) sum += w->unknown_model_[c].get();
    if (sum == 0) continue;
    appendSample(out, "switchyard_requests_total",
                 {{"model", ""}, {"replica", ""}, {"strategy", ""}, {"code", statusClassName(c)}},
                 static_cast<double>(sum));
  }

  // --- Routing.
  appendHeader(out, "switchyard_routing_decision_seconds", "histogram",
               "Time to make one routing decision (filters, scoring, pick), by model.");
  for (uint32_t slot = 0; slot < model_names.size(); ++slot) {
    std::vector<const RoutingHistogram*> parts;
    for (const ModelBlock* b : modelParts(slot)) parts.push_back(&b->routing);
    appendHistogram(out, "switchyard_routing_decision_seconds", {{"model", model_names[slot]}},
                    parts);
  }
  appendHeader(out, "switchyard_demand_requests_total", "counter",
               "Requests that asked for the model, whether admitted, queued or refused: the "
               "demand an autoscaler should see, which the queue would otherwise hide.");
  for (uint32_t slot = 0; slot < model_names.size(); ++slot) {
    uint64_t sum = 0;
    for (const ModelBlock* b : modelParts(slot)) sum += b->demand.get();
    appendSample(out, "switchyard_demand_requests_total", {{"model", model_names[slot]}},
                 static_cast<double>(sum));
  }
  appendHeader(out, "switchyard_queue_wait_seconds", "histogram",
               "Time requests spent in the gateway's queue (admitted, refused or left), by model.");
  for (uint32_t slot = 0; slot < model_names.size(); ++slot) {
    std::vector<const LatencyHistogram*> parts;
    for (const ModelBlock* b : modelParts(slot)) parts.push_back(&b->queue_wait);
    appendHistogram(out, "switchyard_queue_wait_seconds", {{"model", model_names[slot]}}, parts);
  }
  appendHeader(out, "switchyard_replica_selections_total", "counter",
               "Routing decisions that chose the replica.");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    uint64_t sum = 0;
    for (const ReplicaBlock* b : replicaParts(slot)) sum += b->selections.get();
    appendSample(out, "switchyard_replica_selections_total",
                 {{"model", replica_names[slot].first}, {"replica", replica_names[slot].second}},
                 static_cast<double>(sum));
  }
  appendHeader(out, "switchyard_routing_exclusions_total", "counter",
               "Replicas a routing decision excluded before scoring, by reason.");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    const auto parts = replicaParts(slot);
    for (size_t reason = 1; reason < kExclusionReasons; ++reason) {
      uint64_t sum = 0;
      for (const ReplicaBlock* b : parts) sum += b->exclusions[reason].get();
      if (sum == 0) continue;
      appendSample(out, "switchyard_routing_exclusions_total",
                   {{"model", replica_names[slot].first},
                    {"replica", replica_names[slot].second},
                    {"reason", routing::exclusionName(static_cast<routing::Exclusion>(reason))}},
                   static_cast<double>(sum));
    }
  }
  appendHeader(out, "switchyard_failovers_total", "counter",
               "Requests routed again to another replica after one failed before responding.");
  for (uint32_t slot = 0; slot < model_names.size(); ++slot) {
    uint64_t sum = 0;
    for (const ModelBlock* b : modelParts(slot)) sum += b->failovers.get();
    appendSample(out, "switchyard_failovers_total", {{"model", model_names[slot]}},
                 static_cast<double>(sum));
  }
  appendHeader(out, "switchyard_client_cancelled_total", "counter",
               "Requests whose client went away before the answer was complete, by stage; "
               "the upstream request was closed so the engine aborted it.");
  for (uint32_t slot = 0; slot < model_names.size(); ++slot) {
    for (size_t k = 1; k < static_cast<size_t>(CancelStage::kCount); ++k) {
      uint64_t sum = 0;
      for (const ModelBlock* b : modelParts(slot)) sum += b->client_cancelled[k].get();
      appendSample(out, "switchyard_client_cancelled_total",
                   {{"model", model_names[slot]},
                    {"stage", cancelStageName(static_cast<CancelStage>(k))}},
                   static_cast<double>(sum));
    }
  }
  appendHeader(out, "switchyard_rejected_requests_total", "counter",
               "Requests answered 429 by the gateway, by the limit that applied.");
  for (size_t k = 0; k < static_cast<size_t>(LimitKind::kCount); ++k) {
    uint64_t sum = 0;
    for (auto& w : workers_) sum += w->rejected_[k].get();
    appendSample(out, "switchyard_rejected_requests_total",
                 {{"limit", limitName(static_cast<LimitKind>(k))}}, static_cast<double>(sum));
  }

  // --- Upstream.
  appendHeader(out, "switchyard_upstream_errors_total", "counter",
               "Failed upstream attempts by kind: connect, reset (before or during the "
               "response), 5xx, timeout.");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    const auto parts = replicaParts(slot);
    for (size_t k = 0; k < static_cast<size_t>(UpstreamErrorKind::kCount); ++k) {
      uint64_t sum = 0;
      for (const ReplicaBlock* b : parts) sum += b->upstream_errors[k].get();
      appendSample(out, "switchyard_upstream_errors_total",
                   {{"model", replica_names[slot].first},
                    {"replica", replica_names[slot].second},
                    {"kind", upstreamErrorName(static_cast<UpstreamErrorKind>(k))}},
                   static_cast<double>(sum));
    }
  }
  struct TokenCounter {
    const char* name;
    const char* help;
    Counter ReplicaBlock::*field;
  };
  for (const TokenCounter& t :
       {TokenCounter{"switchyard_input_tokens_total",
                     "Prompt tokens of completed requests (engine-reported, else estimated).",
                     &ReplicaBlock::input_tokens},
        TokenCounter{"switchyard_output_tokens_total", "Output tokens of completed requests.",
                     &ReplicaBlock::output_tokens}}) {
    appendHeader(out, t.name, "counter", t.help);
    for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
      uint64_t sum = 0;
      for (const ReplicaBlock* b : replicaParts(slot)) sum += (b->*t.field).get();
      appendSample(out, t.name,
                   {{"model", replica_names[slot].first}, {"replica", replica_names[slot].second}},
                   static_cast<double>(sum));
    }
  }
  appendHeader(out, "switchyard_time_to_first_token_seconds", "histogram",
               "Time from routing to the first response byte from the engine, by replica.");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    std::vector<const LatencyHistogram*> parts;
    for (const ReplicaBlock* b : replicaParts(slot)) parts.push_back(&b->ttft);
    appendHistogram(out, "switchyard_time_to_first_token_seconds",
                    {{"model", replica_names[slot].first}, {"replica", replica_names[slot].second}},
                    parts);
  }
  appendHeader(out, "switchyard_time_per_output_token_seconds", "histogram",
               "Mean inter-token time of a request: (e2e - ttft) / (output tokens - 1).");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    std::vector<const TokenGapHistogram*> parts;
    for (const ReplicaBlock* b : replicaParts(slot)) parts.push_back(&b->tpot);
    appendHistogram(out, "switchyard_time_per_output_token_seconds",
                    {{"model", replica_names[slot].first}, {"replica", replica_names[slot].second}},
                    parts);
  }
  appendHeader(out, "switchyard_e2e_request_seconds", "histogram",
               "Time from routing to the last response byte, by replica.");
  for (uint32_t slot = 0; slot < replica_names.size(); ++slot) {
    std::vector<const LatencyHistogram*> parts;
    for (const ReplicaBlock* b : replicaParts(slot)) parts.push_back(&b->e2e);
    appendHistogram(out, "switchyard_e2e_request_seconds",
                    {{"model", replica_names[slot].first}, {"replica", replica_names[slot].second}},
                    parts);
  }
  locks.clear();

  // --- Gauges, computed now from the current snapshot.
  struct Gauge {
    const char* name;
    const char* help;
  };
  static constexpr Gauge kGauges[] = {
      {"switchyard_replica_info", "Replica labels; always 1."},
      {"switchyard_replica_inflight", "Requests this gateway has in flight on the replica."},
      {"switchyard_replica_engine_running",
       "Engine-reported running requests (absent while unknown or stale)."},
      {"switchyard_replica_engine_waiting",
       "Engine-reported queued requests (absent while unknown or stale)."},
      {"switchyard_replica_kv_cache_usage_ratio",
       "Engine-reported KV cache usage 0..1 (absent while unknown or stale)."},
      {"switchyard_replica_capacity_decode",
       "Learned decode capacity: output tokens/s (work units/s for tokenless work)."},
      {"switchyard_replica_capacity_prefill", "Learned prefill capacity: prompt tokens/s."},
      {"switchyard_replica_signal_age_seconds",
       "Age of the last successful telemetry read (absent if never read)."},
      {"switchyard_replica_signal_fresh",
       "1 when the engine signals are recent enough to route on, else 0."},
      {"switchyard_replica_health_state",
       "Routing health: 0 healthy, 1 excluded, 2 half-open (docs/operations.md)."},
      {"switchyard_replica_consecutive_failures",
       "Failed requests in a row (upstream errors, 5xx, truncated streams)."},
  };
  std::vector<std::string> series[std::size(kGauges)];
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      std::initializer_list<Label> labels = {
          {"model", model.name}, {"replica", replica.state->name()}, {"gpu", replica.gpu}};
      TimeNs age = -1;
      bool fresh = false;
      const fleet::EngineSignals s =
          replica.state->signals(now, snapshot.signal_max_age, &age, &fresh);
      const fleet::LearnedCapacity capacity = replica.state->capacity();
      const auto engine_it = replica.labels.find("engine");
      const std::string_view engine =
          engine_it == replica.labels.end() ? std::string_view("unknown") : engine_it->second;
      const double values[] = {1,
                               static_cast<double>(replica.state->counters().running.load()),
                               s.running,
                               s.waiting,
                               s.kv_usage,
                               capacity.decode,
                               capacity.prefill,
                               age < 0 ? NAN : static_cast<double>(age) / 1e9,
                               fresh ? 1.0 : 0.0,
                               static_cast<double>(replica.state->health()),
                               static_cast<double>(
                                   replica.state->counters().consecutive_failures.load())};
      for (size_t g = 0; g < std::size(kGauges); ++g) {
        if (std::isnan(values[g])) continue;  // unknown is absent, never 0
        if (g == 0) {
          appendSample(series[g].emplace_back(), kGauges[g].name,
                       {{"model", model.name}, {"replica", replica.state->name()},
                        {"gpu", replica.gpu}},
                       1, "engine", engine);
        } else {
          appendSample(series[g].emplace_back(), kGauges[g].name, labels, values[g]);
        }
      }
    }
  }
  for (size_t g = 0; g < std::size(kGauges); ++g) {
    appendHeader(out, kGauges[g].name, "gauge", kGauges[g].help);
    for (const std::string& line : series[g]) out.append(line);
  }
  appendHeader(out, "switchyard_model_load_imbalance", "gauge",
               "max / mean over the model's replicas of in-flight / learned capacity; 1 is "
               "balanced.");
  for (const fleet::ModelEntry& model : snapshot.models) {
    appendSample(out, "switchyard_model_load_imbalance", {{"model", model.name}},
                 loadImbalance(model));
  }
  // Health transitions, counted by the health manager on the replica records.
  static constexpr Gauge kHealthCounters[] = {
      {"switchyard_replica_health_exclusions_total",
       "Times the replica was taken out of rotation (any reason; see the log for which)."},
      {"switchyard_replica_health_recoveries_total",
       "Times the replica returned to healthy after an exclusion."},
  };
  for (size_t k = 0; k < std::size(kHealthCounters); ++k) {
    appendHeader(out, kHealthCounters[k].name, "counter", kHealthCounters[k].help);
    for (const fleet::ModelEntry& model : snapshot.models) {
      for (const fleet::ReplicaEntry& replica : model.replicas) {
        const fleet::ReplicaCounters& c = replica.state->counters();
        appendSample(out, kHealthCounters[k].name,
                     {{"model", model.name}, {"replica", replica.state->name()},
                      {"gpu", replica.gpu}},
                     static_cast<double>(k == 0 ? c.health_exclusions_total.load()
                                                : c.health_recoveries_total.load()));
      }
    }
  }
  appendHeader(out, "switchyard_model_routable_replicas", "gauge",
               "Replicas not excluded by health (the rate limit scales with it).");
  for (const fleet::ModelEntry& model : snapshot.models) {
    if (!model.runtime) continue;  // snapshots built outside the registry have none
    appendSample(out, "switchyard_model_routable_replicas", {{"model", model.name}},
                 model.runtime->routable_replicas.load(std::memory_order_relaxed));
  }
  appendHeader(out, "switchyard_queue_depth", "gauge",
               "Requests waiting in this gateway's queue for the model.");
  for (const fleet::ModelEntry& model : snapshot.models) {
    if (!model.runtime) continue;
    appendSample(out, "switchyard_queue_depth", {{"model", model.name}},
                 model.runtime->queued.load(std::memory_order_relaxed));
  }
  appendHeader(out, "switchyard_model_rate_limit_rps", "gauge",
               "The model-wide request rate limit now in force (0: unlimited).");
  for (const fleet::ModelEntry& model : snapshot.models) {
    if (!model.runtime) continue;
    appendSample(out, "switchyard_model_rate_limit_rps", {{"model", model.name}},
                 model.runtime->rate.rate());
  }

  // --- The gateway itself.
  appendHeader(out, "switchyard_telemetry_scrapes_total", "counter",
               "Engine /metrics scrapes attempted.");
  appendSample(out, "switchyard_telemetry_scrapes_total", {},
               static_cast<double>(stats.scrapes_total));
  appendHeader(out, "switchyard_telemetry_scrape_failures_total", "counter",
               "Engine /metrics scrapes that failed or timed out.");
  appendSample(out, "switchyard_telemetry_scrape_failures_total", {},
               static_cast<double>(stats.scrape_failures_total));
  uint64_t dropped = stats.spans_dropped_total;
  uint64_t recorded = 0;
  uint64_t busy_poll_ns = 0;
  for (auto& w : workers_) {
    dropped += w->spans_dropped_.get();
    recorded += w->decisions_recorded_.get();
    busy_poll_ns += w->busy_poll_ns_.get();
  }
  appendHeader(out, "switchyard_trace_spans_exported_total", "counter",
               "Spans accepted by the OTLP collector.");
  appendSample(out, "switchyard_trace_spans_exported_total", {},
               static_cast<double>(stats.spans_exported_total));
  appendHeader(out, "switchyard_trace_spans_dropped_total", "counter",
               "Sampled spans dropped: queue full or the collector unreachable or refusing.");
  appendSample(out, "switchyard_trace_spans_dropped_total", {}, static_cast<double>(dropped));
  appendHeader(out, "switchyard_trace_export_failures_total", "counter",
               "OTLP export POSTs that failed.");
  appendSample(out, "switchyard_trace_export_failures_total", {},
               static_cast<double>(stats.export_failures_total));
  appendHeader(out, "switchyard_decisions_recorded_total", "counter",
               "Routing decisions written to the decision log.");
  appendSample(out, "switchyard_decisions_recorded_total", {}, static_cast<double>(recorded));
  appendHeader(out, "switchyard_fleet_snapshot_version", "gauge",
               "Version of the fleet snapshot in use.");
  appendSample(out, "switchyard_fleet_snapshot_version", {},
               static_cast<double>(stats.snapshot_version));
  appendHeader(out, "switchyard_workers", "gauge",
               "Hot-path worker threads (workers: 0 starts one per CPU the process may use).");
  appendSample(out, "switchyard_workers", {}, static_cast<double>(stats.workers));
  appendHeader(out, "switchyard_worker_busy_poll_seconds_total", "counter",
               "CPU time workers spent polling for work that did not come (busy_poll_us).");
  appendSample(out, "switchyard_worker_busy_poll_seconds_total", {},
               static_cast<double>(busy_poll_ns) / 1e9);
  return out;
}

}  // namespace switchyard::observe
