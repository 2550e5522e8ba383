#include "observe/observer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <future>

#include "observe/otlp_exporter.h"

namespace switchyard::observe {
namespace {

template <size_t N>
void copyTruncated(char (&dst)[N], std::string_view src) {
  const size_t n = std::min(src.size(), N - 1);
  if (n > 0) std::memcpy(dst, src.data(), n);  // an empty view may have no data pointer
  dst[n] = '\0';
}

bool isTrue(std::string_view v) { return v == "1" || v == "true" || v == "yes"; }

}  // namespace

WorkerObserver::WorkerObserver(Observability& hub, size_t index, const ObserveConfig& config)
    : hub_(hub),
      index_(index),
      metrics_(hub.metrics().worker(index)),
      ring_(std::max<size_t>(1, config.decision_log_size)),
      spans_(std::max<size_t>(1, config.tracing.queue_spans)),
      rng_(0x0B5E0000u + index * 104729u +
           static_cast<uint64_t>(SteadyClock::instance().now())),
      tracing_(!config.tracing.otlp_endpoint.empty()),
      sampling_ratio_(config.tracing.sampling_ratio),
      access_log_(config.logging.access_log) {}

bool WorkerObserver::equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

int64_t WorkerObserver::unixNs(TimeNs steady) const { return steady + hub_.unixOffset(); }

void WorkerObserver::begin(RequestRecord& r, TimeNs now, std::string_view request_id,
                           std::string_view traceparent, std::string_view explain) {
  std::string header = std::move(r.explain_header);  // keep its capacity
  header.clear();
  r = RequestRecord{};
  r.explain_header = std::move(header);
  r.active = true;
  r.started = now;
  r.request_id = request_id;
  r.explain = isTrue(explain);
  if (!tracing_) return;
  r.propagate = true;
  TraceParent parent;
  if (!traceparent.empty() && parseTraceParent(traceparent, parent)) {
    r.trace_id = parent.trace_id;
    r.client_parent = parent.parent_span_id;
    r.sampled = parent.sampled;  // parent-based: the caller decided
  } else {
    const uint64_t hi = rng_.next();
    const uint64_t lo = rng_.next() | 1;  // never all-zero
    for (int i = 0; i < 8; ++i) {
      r.trace_id.bytes[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
      r.trace_id.bytes[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
    r.sampled = sampling_ratio_ >= 1.0 || rng_.uniform01() < sampling_ratio_;
  }
  r.request_span = rng_.next() | 1;
  r.inference_span = rng_.next() | 1;
  formatTraceParent(r.traceparent, r.trace_id, r.inference_span, r.sampled);
}

void WorkerObserver::onModel(RequestRecord& r, const fleet::FleetSnapshot& snapshot,
                             const fleet::ModelEntry& model, std::string_view strategy) {
  metrics_.bind(snapshot);  // re-resolves label handles only when the snapshot changed
  r.model = &model;
  r.model_index = static_cast<size_t>(&model - snapshot.models.data());
  r.strategy = strategy;
  r.strategy_slot = metrics_.strategySlot(strategy);
  r.load = load_.block(metrics_.modelSlot(r.model_index));
}

void WorkerObserver::onDecision(RequestRecord& r, const routing::Decision& decision,
                                TimeNs routing_started, TimeNs routing_finished) {
  if (r.model == nullptr) return;
  const TimeNs routing_ns = routing_finished - routing_started;
  ModelBlock& model = metrics_.model(r.model_index);
  model.routing.observe(routing_ns);
  if (r.decisions > 0) model.failovers.add();
  for (const routing::CandidateRow& row : decision.rows) {
    const auto reason = static_cast<size_t>(row.excluded);
    if (reason != 0 && reason < kExclusionReasons && row.replica_index < r.model->replicas.size()) {
      metrics_.replica(r.model_index, row.replica_index).exclusions[reason].add();
    }
  }
  r.replica_index = decision.chosen;
  r.upstream_started = routing_finished;
  if (decision.chosen >= 0) metrics_.replica(r.model_index, decision.chosen).selections.add();

  // The decision record: one fixed-size slot copy.
  DecisionRecord& record = ring_.next();
  r.decision_sequence = record.sequence;
  fillDecisionRecord(record, decision, metrics_.replicaSlots(r.model_index),
                     metrics_.modelSlot(r.model_index), r.request_id, unixNs(routing_finished),
                     routing_ns, r.decisions);
  record.worker = static_cast<uint16_t>(index_);
  copyTruncated(record.key_name, r.key_name);
  metrics_.countDecisionsRecorded();

  if (r.explain) {
    r.explain_header.clear();
    appendDecisionHeader(r.explain_header, decision, *r.model);
  }
  if (r.sampled) {
    SpanRecord span;
    span.trace_id = r.trace_id;
    span.span_id = rng_.next() | 1;
    span.parent_span_id = r.request_span;
    span.kind = SpanKind::kSelect;
    span.start_unix_ns = unixNs(routing_started);
    span.end_unix_ns = unixNs(routing_finished);
    span.model_slot = metrics_.modelSlot(r.model_index);
    span.replica_slot = decision.chosen >= 0
                            ? metrics_.replicaSlot(r.model_index, decision.chosen)
                            : UINT32_MAX;
    span.candidates = decision.candidates;
    span.ready = decision.ready;
    span.routing_ns = routing_ns;
    span.error = decision.chosen < 0;
    copyTruncated(span.strategy, decision.strategy);
    copyTruncated(span.request_id, r.request_id);
    pushSpan(span);
  }
  ++r.decisions;
}

void WorkerObserver::appendUpstreamHeaders(const RequestRecord& r, std::string& head) const {
  if (!r.propagate) return;
  head.append("traceparent: ").append(r.traceparent, 55).append("\r\n");
}

void WorkerObserver::appendResponseHeaders(const RequestRecord& r, std::string& head) const {
  if (!r.explain || r.explain_header.empty()) return;
  head.append("x-switchyard-decision: ").append(r.explain_header).append("\r\n");
}

void WorkerObserver::onResponse(RequestRecord& r, unsigned upstream_status) {
  r.upstream_status = upstream_status;
  r.status = upstream_status;
  r.responded = true;
  if (upstream_status >= 500) onUpstreamError(r, UpstreamErrorKind::k5xx);
}

void WorkerObserver::onUpstreamError(RequestRecord& r, UpstreamErrorKind kind) {
  r.upstream_failed = true;
  if (r.model == nullptr || r.replica_index < 0) return;
  metrics_.replica(r.model_index, static_cast<size_t>(r.replica_index))
      .upstream_errors[static_cast<size_t>(kind)]
      .add();
}

void WorkerObserver::countExclusion(RequestRecord& r, size_t replica_index,
                                    routing::Exclusion reason) {
  const auto code = static_cast<size_t>(reason);
  if (r.model == nullptr || code == 0 || code >= kExclusionReasons ||
      replica_index >= r.model->replicas.size()) {
    return;
  }
  metrics_.replica(r.model_index, replica_index).exclusions[code].add();
}

void WorkerObserver::onComplete(RequestRecord& r, TimeNs first_byte_at, int64_t input_tokens,
                                int64_t output_tokens, TimeNs now) {
  r.first_byte_at = first_byte_at;
  r.completed_at = now;
  r.input_tokens = input_tokens;
  r.output_tokens = output_tokens;
}

void WorkerObserver::countDemand(RequestRecord& r) {
  if (r.model != nullptr) metrics_.model(r.model_index).demand.add();
}

void WorkerObserver::onQueueWait(RequestRecord& r, TimeNs waited) {
  if (r.model != nullptr) metrics_.model(r.model_index).queue_wait.observe(waited);
}

void WorkerObserver::onAdmission(RequestRecord& r, const AdmissionNote& note) {
  DecisionRecord* record = ring_.find(r.decision_sequence);
  if (record == nullptr) return;
  const auto ms = [](TimeNs ns) {
    return ns < 0 ? -1 : static_cast<int32_t>(std::min<TimeNs>(ns / kNsPerMs, INT32_MAX));
  };
  record->queued_ms = ms(note.queued);
  record->deadline_ms = ms(note.deadline);
  record->predicted_ms = ms(note.predicted);
  record->refused =
      note.refused == LimitKind::kCount ? 0xFF : static_cast<uint8_t>(note.refused);
  record->inflight = static_cast<uint8_t>(note.inflight);
}

void WorkerObserver::onClientCancelled(RequestRecord& r, CancelStage stage) {
  if (r.cancelled != CancelStage::kNone) return;
  r.cancelled = stage;
  if (r.model != nullptr) {
    metrics_.model(r.model_index).client_cancelled[static_cast<size_t>(stage)].add();
  }
  if (DecisionRecord* record = ring_.find(r.decision_sequence)) {
    record->client_cancelled = static_cast<uint8_t>(stage);
  }
}

void WorkerObserver::pushSpan(const SpanRecord& span) {
  if (!spans_.push(span)) metrics_.countSpansDropped();
}

void WorkerObserver::end(RequestRecord& r, TimeNs now) {
  if (!r.active) return;
  r.active = false;
  const size_t status_class = statusClass(r.status);
  ReplicaBlock* replica = nullptr;
  if (r.model != nullptr && r.replica_index >= 0) {
    replica = &metrics_.replica(r.model_index, static_cast<size_t>(r.replica_index));
  }
  if (r.model == nullptr) {
    metrics_.countUnknownModel(r.status);
  } else if (replica != nullptr && r.responded) {
    replica->requests[r.strategy_slot][status_class].add();
  } else {
    metrics_.model(r.model_index).unrouted[r.strategy_slot][status_class].add();
  }
  const bool completed = replica != nullptr && r.completed_at >= 0;
  if (completed && r.upstream_status == 200) {
    if (r.input_tokens > 0) replica->input_tokens.add(static_cast<uint64_t>(r.input_tokens));
    if (r.output_tokens > 0) replica->output_tokens.add(static_cast<uint64_t>(r.output_tokens));
    const TimeNs e2e = r.completed_at - r.upstream_started;
    replica->e2e.observe(e2e);
    if (r.first_byte_at >= r.upstream_started) {
      const TimeNs ttft = r.first_byte_at - r.upstream_started;
      replica->ttft.observe(ttft);
      if (r.output_tokens > 1) replica->tpot.observe((e2e - ttft) / (r.output_tokens - 1));
    }
  }
  if (r.load != nullptr) {  // request monitoring: one relaxed increment
    if (r.status == 429) {
      r.load->rejected.fetch_add(1, std::memory_order_relaxed);
    } else if (completed && r.upstream_status == 200) {
      r.load->completed(r.input_tokens, r.output_tokens);
    } else if (r.status >= 500 || r.status == 0) {
      r.load->failed.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (r.sampled) {
    const uint32_t model_slot = r.model ? metrics_.modelSlot(r.model_index) : UINT32_MAX;
    const uint32_t replica_slot =
        replica ? metrics_.replicaSlot(r.model_index, static_cast<size_t>(r.replica_index))
                : UINT32_MAX;
    if (replica != nullptr) {
      SpanRecord span;
      span.trace_id = r.trace_id;
      span.span_id = r.inference_span;
      span.parent_span_id = r.request_span;
      span.kind = SpanKind::kInference;
      span.start_unix_ns = unixNs(r.upstream_started);
      span.end_unix_ns = unixNs(r.completed_at >= 0 ? r.completed_at : now);
      span.model_slot = model_slot;
      span.replica_slot = replica_slot;
      span.status = static_cast<uint16_t>(r.upstream_status);
      span.error = r.upstream_failed || r.upstream_status >= 500 || r.completed_at < 0;
      if (r.first_byte_at >= r.upstream_started) {
        span.first_chunk_ns = r.first_byte_at - r.upstream_started;
        if (r.completed_at >= 0) span.streaming_ns = r.completed_at - r.first_byte_at;
      }
      span.input_tokens = r.input_tokens;
      span.output_tokens = r.output_tokens;
      copyTruncated(span.strategy, r.strategy);
      copyTruncated(span.request_id, r.request_id);
      pushSpan(span);
    }
    SpanRecord span;
    span.trace_id = r.trace_id;
    span.span_id = r.request_span;
    span.parent_span_id = r.client_parent;
    span.kind = SpanKind::kRequest;
    span.start_unix_ns = unixNs(r.started);
    span.end_unix_ns = unixNs(now);
    span.model_slot = model_slot;
    span.replica_slot = replica_slot;
    span.status = static_cast<uint16_t>(r.status);
    span.error = r.status >= 500 || (r.status == 0 && r.cancelled == CancelStage::kNone);
    span.client_cancelled = static_cast<uint8_t>(r.cancelled);
    copyTruncated(span.key_name, r.key_name);
    span.input_tokens = r.input_tokens;
    span.output_tokens = r.output_tokens;
    copyTruncated(span.strategy, r.strategy);
    copyTruncated(span.request_id, r.request_id);
    pushSpan(span);
  }
  // A client that left is not the gateway's failure: logged with the stage, not as an error.
  const bool failed = r.status >= 500 || (r.status == 0 && r.cancelled == CancelStage::kNone);
  if (access_log_ || failed) {
    const std::string_view replica_name =
        replica ? std::string_view(r.model->replicas[r.replica_index].state->name()) : "-";
    const double latency_ms = static_cast<double>(now - r.started) / 1e6;
    const double ttft_ms = r.first_byte_at >= r.upstream_started && replica
                               ? static_cast<double>(r.first_byte_at - r.upstream_started) / 1e6
                               : -1;
    const auto level = failed ? spdlog::level::err : spdlog::level::info;
    spdlog::log(level,
                "request id={} key={} model={} replica={} strategy={} status={} latency_ms={:.3f} "
                "ttft_ms={:.3f} input_tokens={} output_tokens={} attempts={}{}{}",
                r.request_id, r.key_name.empty() ? "-" : r.key_name,
                r.model ? std::string_view(r.model->name) : "-", replica_name,
                r.strategy.empty() ? "-" : r.strategy, r.status, latency_ms, ttft_ms,
                r.input_tokens, r.output_tokens, r.decisions,
                r.cancelled == CancelStage::kNone ? "" : " cancelled=",
                r.cancelled == CancelStage::kNone ? "" : cancelStageName(r.cancelled));
  }
}

RequestScope::~RequestScope() { observer_.end(record_, SteadyClock::instance().now()); }

Observability::Observability(const ObserveConfig& config, size_t workers)
    : config_(config), metrics_(workers) {
  const int64_t steady = SteadyClock::instance().now();
  const int64_t unix = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  unix_offset_ = unix - steady;
  for (size_t i = 0; i < workers; ++i) {
    workers_.push_back(std::make_unique<WorkerObserver>(*this, i, config_));
  }
}

Observability::~Observability() = default;

void Observability::startExporter(boost::asio::io_context& io) {
  if (config_.tracing.otlp_endpoint.empty()) return;
  std::vector<SpanQueue*> queues;
  for (auto& w : workers_) queues.push_back(&w->spans());
  exporter_ = std::make_unique<OtlpExporter>(io, config_.tracing, std::move(queues), metrics_);
  exporter_->start();
}

void Observability::stopExporter() {
  if (exporter_) exporter_->stop();
}

LoadTotals Observability::loadTotals(uint32_t model_slot) const {
  LoadTotals totals;
  for (const auto& w : workers_) w->loadRecorder().addTo(model_slot, totals);
  return totals;
}

ExporterStats Observability::exporterStats() const {
  return exporter_ ? exporter_->stats() : ExporterStats{};
}

std::string Observability::recentDecisionsJson(size_t limit, TimeNs wait,
                                               const fleet::FleetSnapshot* labels_from) {
  std::vector<std::future<std::vector<DecisionRecord>>> pending;
  for (auto& w : workers_) {
    if (!w->executor()) continue;
    auto promise = std::make_shared<std::promise<std::vector<DecisionRecord>>>();
    pending.push_back(promise->get_future());
    WorkerObserver* observer = w.get();
    w->executor()([promise, observer, limit] {
      promise->set_value(observer->decisions().copyNewest(limit));
    });
  }
  std::vector<DecisionRecord> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
  for (auto& f : pending) {
    if (f.wait_until(deadline) != std::future_status::ready) continue;
    try {
      std::vector<DecisionRecord> part = f.get();
      all.insert(all.end(), part.begin(), part.end());
    } catch (const std::future_error&) {
      // The worker stopped before running the job: leave it out.
    }
  }
  return renderDecisionsJson(std::move(all), metrics_, limit, labels_from);
}

}  // namespace switchyard::observe
