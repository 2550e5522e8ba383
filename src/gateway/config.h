// GatewayConfig: the gateway's YAML configuration, validated at load time.
//
// loadConfig() throws ConfigError with a message naming the offending key; it runs at start-up
// and on reload (control thread), never on the request path. Environment variables override the
// file: SWITCHYARD_LISTEN, SWITCHYARD_ADMIN_LISTEN, SWITCHYARD_DEFAULT_STRATEGY,
// SWITCHYARD_WORKERS, and the load-balance knobs under their AIBrix names
// (AIBRIX_LOAD_BALANCE_QUEUED_WEIGHT, AIBRIX_LOAD_BALANCE_KV_PRESSURE_ALPHA,
// AIBRIX_LOAD_BALANCE_KV_CRITICAL_FREE, AIBRIX_ROUTING_AUTO_BLEND_LOAD_BALANCE_WEIGHT) or with the
// SWITCHYARD_ prefix instead of AIBRIX_ (which wins when both are set), likewise
// least-request-top-k's AIBRIX_ROUTING_LEAST_REQUEST_TOP_K, _TOP_K_EPSILON and _TOP_K_RAMP_WINDOW
// (a Go duration such as 30s), plus SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K_TOLERANCE_FRACTION and
// SWITCHYARD_ROUTING_SLOW_START_AGGRESSION; tracing with SWITCHYARD_OTLP_ENDPOINT and
// SWITCHYARD_TRACE_SAMPLING_RATIO; shared state with SWITCHYARD_SHARED_STATE_BACKEND,
// SWITCHYARD_REDIS_ADDRESS, REDIS_HOST, REDIS_PORT and REDIS_PASSWORD; API keys with
// SWITCHYARD_KEYS_FILE and admin tokens with SWITCHYARD_ADMIN_KEYS_FILE. See
// docs/configuration.md.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/config_error.h"
#include "fleet/discovery/kubernetes/settings.h"
#include "fleet/fleet_registry.h"
#include "fleet/kv_index/prefix_cache_config.h"
#include "fleet/scrape_schedule.h"
#include "health/replica_health.h"
#include "gateway/readiness.h"
#include "gateway/load_monitor_config.h"
#include "gateway/security_config.h"
#include "gateway/shared_state_config.h"
#include "observe/observe_config.h"

namespace switchyard::gateway {

// Hot-path worker threads at most (the request queue keeps one bit per worker).
inline constexpr int kMaxWorkers = 64;
inline constexpr int kMaxBusyPollUs = 10'000;  // longer windows are a spinning thread

using ConfigError = switchyard::ConfigError;

struct TimeoutsConfig {
  TimeNs client_header = 30 * kNsPerSec;      // reading a request's headers
  TimeNs client_body = 30 * kNsPerSec;        // reading its body, once the headers are in
  TimeNs client_idle = 75 * kNsPerSec;        // keep-alive between client requests
  TimeNs client_write = 60 * kNsPerSec;       // one write to a slow client
  TimeNs upstream_connect = 3 * kNsPerSec;
  TimeNs upstream_first_byte = 600 * kNsPerSec;  // long: non-streamed generations arrive whole
  TimeNs upstream_idle = 120 * kNsPerSec;        // between two pieces of a response
  TimeNs upstream_pool_idle = 4 * kNsPerSec;  // below engines' 5 s keep-alive, so pooled
                                              // connections are closed before the engine does
  TimeNs shutdown_grace = 30 * kNsPerSec;
  // After an early error answer (413, 431, 400) with request bytes still arriving: how long the
  // gateway keeps reading and discarding them, its write side closed, so the client reads the
  // answer instead of a reset (nginx's lingering close).
  TimeNs lingering_close = 5 * kNsPerSec;
};

struct RetryConfig {
  int max_attempts = 3;          // replicas tried per request, the first included
  double budget_ratio = 0.2;     // retries allowed per request, over time
  double budget_min_per_second = 5;
};

struct CapacityConfig {
  TimeNs refresh = 1 * kNsPerSec;
  TimeNs window = 60 * kNsPerSec;
  TimeNs time_constant = 10 * kNsPerSec;
};

struct GatewayConfig {
  fleet::kv_index::PrefixCacheParams prefix_cache;  // `routing.prefix_cache:` (docs/routing.md)
  std::string listen = "127.0.0.1:8888";
  std::string admin_listen = "127.0.0.1:8889";
  int workers = 0;  // 0: one per CPU this process may use (core/cpu_budget.h)
  int busy_poll_us = 0;  // a worker polls this long before it sleeps (http/event_loop.h); 0: off
  std::string default_strategy = "least-request";
  fleet::LoadBalanceParams load_balance;  // global defaults; models may override
  fleet::TopKParams top_k;                // likewise
  fleet::SlowStartParams slow_start;      // likewise
  uint32_t candidate_sample = 0;          // likewise; 0 scores every replica
  double auto_blend_load_balance_weight = 1.0;
  CapacityConfig capacity;
  health::HealthSettings health;
  RetryConfig retry;
  TimeNs scrape_interval = 100 * kNsPerMs;
  fleet::ScrapePolicy scrape_policy;  // `telemetry:` budget and adaptive periods
  TimeNs reload_poll_interval = 1 * kNsPerSec;
  size_t max_body_bytes = 8u << 20;
  // Idle keep-alive connections a worker keeps to one replica (`limits.upstream_idle_per_replica`).
  // Above it a returned connection is closed, and the next request that finds the pool empty
  // connects again: at a few hundred requests in flight per replica a low cap closes and reopens
  // connections all the time. The pool's idle timeout closes what a peak left behind.
  size_t upstream_idle_per_replica = 1024;
  TimeoutsConfig timeouts;
  std::vector<fleet::ModelSpec> models;
  observe::ObserveConfig observe;  // `tracing:`, `logging:`, `decisions:` (docs/observability.md)
  SharedStateConfig shared_state;  // several gateways: `shared_state:` (memory or redis)
  SessionAffinityConfig session_affinity;
  AsyncJobsConfig async_jobs;
  ReadinessSettings readiness;  // `readiness:` (/readyz, docs/operations.md)
  // `discovery: { kubernetes: ... }`: replicas from Pods, beside `models:` (docs/kubernetes.md).
  fleet::kubernetes::KubernetesSettings kubernetes;
  fleet::AdmissionParams admission;  // `admission:` defaults for every model (docs/admission.md)
  LoadMonitorConfig load_monitor;  // request monitoring for the optimizer (`load_monitor:`)
  SecurityConfig security;  // TLS, API keys, the admin plane, client limits (docs/security.md)

  // Engine signals older than this are unknown (three scrape intervals).
  TimeNs signalMaxAge() const { return 3 * scrape_interval; }
};

GatewayConfig loadConfigFile(const std::string& path);
GatewayConfig parseConfig(const std::string& yaml_text);  // for tests
void applyEnvironment(GatewayConfig& config);

}  // namespace switchyard::gateway
