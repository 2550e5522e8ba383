// Observability settings, parsed from the gateway config (`tracing:`, `logging:`, `decisions:`).
#pragma once

#include <cstddef>
#include <string>

#include "core/clock.h"

namespace switchyard::observe {

struct TracingConfig {
  std::string otlp_endpoint;    // http://HOST:PORT[/prefix]; empty disables tracing
  double sampling_ratio = 1.0;  // for requests without a sampled parent; 0..1
  size_t queue_spans = 4096;    // per-worker span queue; a full queue drops (counted)
  size_t max_batch = 512;       // spans per OTLP POST
  TimeNs export_interval = 200 * kNsPerMs;
  TimeNs export_timeout = 2 * kNsPerSec;
};

struct LoggingConfig {
  std::string level = "info";  // spdlog level: trace, debug, info, warn, error, critical, off
  bool access_log = false;     // one info line per request; failures (5xx) are logged always
};

struct ObserveConfig {
  TracingConfig tracing;
  LoggingConfig logging;
  size_t decision_log_size = 256;  // decisions kept per worker and returned by /debug/decisions
};

}  // namespace switchyard::observe
