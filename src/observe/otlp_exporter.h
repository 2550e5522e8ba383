// OtlpExporter: drains the workers' span queues on the control thread and POSTs them as OTLP/HTTP
// JSON to {otlp_endpoint}/v1/traces, one batch at a time.
//
// While a POST is in flight nothing is drained, so the per-worker queues absorb bursts and drop
// (counted by the workers) when full. A failed POST (collector down, timeout, non-2xx) drops its
// batch and counts the spans; requests never wait on the exporter. Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "observe/observe_config.h"
#include "observe/trace.h"

namespace switchyard::observe {

class MetricsRegistry;
struct ExporterStats;

class OtlpExporter {
 public:
  OtlpExporter(boost::asio::io_context& io, const TracingConfig& config,
               std::vector<SpanQueue*> queues, const MetricsRegistry& names);
  ~OtlpExporter();
  void start();
  void stop();
  ExporterStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The OTLP/JSON body for a batch (exposed for tests).
std::string renderOtlpJson(const std::vector<SpanRecord>& spans, const MetricsRegistry& names);

}  // namespace switchyard::observe
