// Observability: the one object the gateway wires in. It owns the metrics registry (one shard per
// worker), each worker's decision ring and span queue, and the OTLP exporter; the hot path talks
// to its WorkerObserver only.
//
// Per request, the worker calls (all on its own thread, none allocates in steady state, none
// locks):
//   begin()            request id, client traceparent, explain flag (RequestScope does this)
//   onModel()          the model and strategy are known: resolves metric blocks
//   onDecision()       after each routing decision: latency, selection, exclusions, decision
//                      record, select span, explain header
//   upstream*/onResponse()/onUpstreamError()/onComplete()   while proxying
//   end()              counters, histograms, spans, access log (RequestScope's destructor)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/rng.h"
#include "fleet/fleet_snapshot.h"
#include "observe/decision_log.h"
#include "observe/load_recorder.h"
#include "observe/metrics.h"
#include "observe/observe_config.h"
#include "observe/trace.h"
#include "routing/decision.h"

namespace boost::asio {
class io_context;
}

namespace switchyard::observe {

class OtlpExporter;

// One request's observations. Lives in the connection and is reset by begin().
struct RequestRecord {
  bool active = false;
  TimeNs started = 0;
  int64_t unix_started = 0;
  std::string_view request_id;
  std::string_view key_name;  // the API key's name (auth): never the key; "" none
  bool explain = false;
  // Trace.
  bool sampled = false;
  bool propagate = false;  // tracing on: send our own traceparent upstream
  TraceId trace_id;
  uint64_t client_parent = 0;
  uint64_t request_span = 0;
  uint64_t inference_span = 0;
  char traceparent[56] = {};
  // Routing.
  const fleet::ModelEntry* model = nullptr;
  size_t model_index = 0;
  uint32_t strategy_slot = 0;
  std::string_view strategy;
  int replica_index = -1;  // the last replica tried
  bool responded = false;  // a replica's response head was relayed
  int decisions = 0;
  // Timing and outcome.
  TimeNs upstream_started = 0;
  TimeNs first_byte_at = -1;
  TimeNs completed_at = -1;
  unsigned status = 0;       // the status the client got (0: none)
  CancelStage cancelled = CancelStage::kNone;  // the client left before the answer was complete
  uint64_t decision_sequence = UINT64_MAX;     // the last decision record written
  unsigned upstream_status = 0;
  bool upstream_failed = false;
  int64_t input_tokens = -1;
  int64_t output_tokens = -1;
  LoadBlock* load = nullptr;  // request monitoring: the model's shape counters (onModel)
  std::string explain_header;  // reused per connection
};

class Observability;

// How admission treated a request (docs/admission.md), for its decision record.
struct AdmissionNote {
  TimeNs queued = -1;     // time spent in the gateway's queue; -1: never queued
  TimeNs deadline = -1;   // deadline left at arrival; -1: none
  TimeNs predicted = -1;  // predicted execution on the chosen replica; -1: unknown
  LimitKind refused = LimitKind::kCount;  // kCount: not refused
  InflightAdmission inflight = InflightAdmission::kNone;
};

class WorkerObserver {
 public:
  WorkerObserver(Observability& hub, size_t index, const ObserveConfig& config);

  void begin(RequestRecord& r, TimeNs now, std::string_view request_id,
             std::string_view traceparent, std::string_view explain);
  void onModel(RequestRecord& r, const fleet::FleetSnapshot& snapshot,
               const fleet::ModelEntry& model, std::string_view strategy);
  void onDecision(RequestRecord& r, const routing::Decision& decision, TimeNs routing_started,
                  TimeNs routing_finished);
  // True for client headers the gateway replaces upstream (traceparent when tracing is on).
  bool replacesUpstreamHeader(std::string_view name) const {
    return tracing_ && name.size() == 11 && (name[0] == 't' || name[0] == 'T') &&
           equalsIgnoreCase(name, "traceparent");
  }
  void appendUpstreamHeaders(const RequestRecord& r, std::string& head) const;
  void appendResponseHeaders(const RequestRecord& r, std::string& head) const;
  void onResponse(RequestRecord& r, unsigned upstream_status);
  void onUpstreamError(RequestRecord& r, UpstreamErrorKind kind);
  void onComplete(RequestRecord& r, TimeNs first_byte_at, int64_t input_tokens,
                  int64_t output_tokens, TimeNs now);
  // The request asked for its model (after onModel): counted as demand, whatever follows.
  void countDemand(RequestRecord& r);
  // It left the gateway's queue after `waited` (admitted, refused or its client left).
  void onQueueWait(RequestRecord& r, TimeNs waited);
  // What admission decided, on the request's last decision record.
  void onAdmission(RequestRecord& r, const AdmissionNote& note);
  // The client went away at `stage`: counted, and marked on the request's decision record,
  // span and access-log line.
  void onClientCancelled(RequestRecord& r, CancelStage stage);
  void end(RequestRecord& r, TimeNs now);

  // The gateway answered 429 because of `kind` (health/limits code calls this).
  void countRejected(LimitKind kind) { metrics_.countRejected(kind); }
  // A routing exclusion outside a routed decision (e.g. a filter applied elsewhere).
  void countExclusion(RequestRecord& r, size_t replica_index, routing::Exclusion reason);

  WorkerMetrics& metrics() { return metrics_; }
  const LoadRecorder& loadRecorder() const { return load_; }
  LoadRecorder& loadRecorder() { return load_; }
  // Owner thread only.
  const DecisionRing& decisions() const { return ring_; }
  SpanQueue& spans() { return spans_; }
  // Set by the worker: runs a job on the worker's thread (for reading the ring).
  void setExecutor(std::function<void(std::function<void()>)> post) { post_ = std::move(post); }
  const std::function<void(std::function<void()>)>& executor() const { return post_; }

 private:
  static bool equalsIgnoreCase(std::string_view a, std::string_view b);
  void pushSpan(const SpanRecord& span);
  int64_t unixNs(TimeNs steady) const;

  Observability& hub_;
  const size_t index_;
  WorkerMetrics& metrics_;
  LoadRecorder load_;
  DecisionRing ring_;
  SpanQueue spans_;
  Rng rng_;
  const bool tracing_;
  const double sampling_ratio_;
  const bool access_log_;
  std::function<void(std::function<void()>)> post_;
};

// Runs begin() now and end() when the request's coroutine frame leaves the scope.
class RequestScope {
 public:
  RequestScope(WorkerObserver& observer, RequestRecord& record, TimeNs now,
               std::string_view request_id, std::string_view traceparent,
               std::string_view explain)
      : observer_(observer), record_(record) {
    observer_.begin(record_, now, request_id, traceparent, explain);
  }
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;

 private:
  WorkerObserver& observer_;
  RequestRecord& record_;
};

struct ExporterStats {
  uint64_t exported = 0;
  uint64_t dropped = 0;
  uint64_t failures = 0;
};

class Observability {
 public:
  Observability(const ObserveConfig& config, size_t workers);
  ~Observability();

  WorkerObserver& worker(size_t i) { return *workers_[i]; }
  MetricsRegistry& metrics() { return metrics_; }
  const ObserveConfig& config() const { return config_; }
  // steady -> unix offset, fixed at construction.
  int64_t unixOffset() const { return unix_offset_; }

  // Control thread: starts the OTLP exporter on `io` when an endpoint is configured.
  void startExporter(boost::asio::io_context& io);
  void stopExporter();
  ExporterStats exporterStats() const;
  // Any thread: request-shape counters of model `model_slot` summed over the workers.
  LoadTotals loadTotals(uint32_t model_slot) const;

  // Control thread: the newest `limit` decisions of all workers, as /debug/decisions JSON. Each
  // worker copies its own ring on its own thread; a worker that does not answer within
  // `wait` is left out.
  std::string recentDecisionsJson(size_t limit, TimeNs wait = 200 * kNsPerMs,
                                  const fleet::FleetSnapshot* labels_from = nullptr);

 private:
  ObserveConfig config_;
  MetricsRegistry metrics_;
  int64_t unix_offset_ = 0;
  std::vector<std::unique_ptr<WorkerObserver>> workers_;
  std::unique_ptr<OtlpExporter> exporter_;
};

}  // namespace switchyard::observe
