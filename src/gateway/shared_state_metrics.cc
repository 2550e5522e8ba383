#include "gateway/shared_state_metrics.h"

#include <fmt/format.h>

#include <iterator>

namespace switchyard::gateway {
namespace {

using Out = std::back_insert_iterator<std::string>;

void family(std::string& out, std::string_view name, std::string_view type,
            std::string_view help) {
  fmt::format_to(Out(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

// Label values here are model and replica names from the config and fixed words; escape the
// three characters the text format requires.
std::string escaped(std::string_view v) {
  std::string s;
  for (char c : v) {
    if (c == '\\' || c == '"') s.push_back('\\');
    if (c == '\n') {
      s.append("\\n");
      continue;
    }
    s.push_back(c);
  }
  return s;
}

struct Totals {
  int64_t calls = 0, degraded = 0, reconnects = 0, latency_ns = 0, connected = 0;
  std::array<int64_t, state::SharedStateStats::kLatencyBounds.size() + 1> buckets{};
  void add(const state::SharedStateStats& s) {
    calls += s.calls.load(std::memory_order_relaxed);
    degraded += s.degraded.load(std::memory_order_relaxed);
    reconnects += s.reconnects.load(std::memory_order_relaxed);
    latency_ns += s.latency_ns_total.load(std::memory_order_relaxed);
    connected += s.connected.load(std::memory_order_relaxed) ? 1 : 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b] += s.latency_buckets[b].load(std::memory_order_relaxed);
    }
  }
};

}  // namespace

void appendSharedStateMetrics(std::string& out, std::string_view backend,
                              std::span<const state::SharedStateStats* const> request_clients,
                              const GatewayStateSync& sync, const fleet::FleetSnapshot& snapshot) {
  Totals roles[2];  // request path (all workers), control plane (sync)
  for (const state::SharedStateStats* s : request_clients) roles[0].add(*s);
  roles[1].add(sync.stats());
  static constexpr std::string_view kRole[2] = {"request", "sync"};

  family(out, "switchyard_shared_state_info", "gauge",
         "The shared-state backend in use (memory: one gateway; redis: shared).");
  fmt::format_to(Out(out), "switchyard_shared_state_info{{backend=\"{}\"}} 1\n", backend);
  family(out, "switchyard_shared_state_connected", "gauge",
         "Shared-state connections that are up (request path: one per worker).");
  for (int r = 0; r < 2; ++r) {
    fmt::format_to(Out(out), "switchyard_shared_state_connected{{role=\"{}\"}} {}\n", kRole[r],
                   roles[r].connected);
  }
  family(out, "switchyard_shared_state_calls_total", "counter", "Calls to the shared state.");
  for (int r = 0; r < 2; ++r) {
    fmt::format_to(Out(out), "switchyard_shared_state_calls_total{{role=\"{}\"}} {}\n", kRole[r],
                   roles[r].calls);
  }
  family(out, "switchyard_shared_state_degraded_total", "counter",
         "Calls that got no answer in time (timeout, disconnected, error): the gateway decided "
         "locally.");
  for (int r = 0; r < 2; ++r) {
    fmt::format_to(Out(out), "switchyard_shared_state_degraded_total{{role=\"{}\"}} {}\n",
                   kRole[r], roles[r].degraded);
  }
  family(out, "switchyard_shared_state_reconnects_total", "counter",
         "Connections to the shared state re-established after a loss.");
  for (int r = 0; r < 2; ++r) {
    fmt::format_to(Out(out), "switchyard_shared_state_reconnects_total{{role=\"{}\"}} {}\n",
                   kRole[r], roles[r].reconnects);
  }
  family(out, "switchyard_shared_state_call_duration_seconds", "histogram",
         "Latency of answered shared-state calls.");
  for (int r = 0; r < 2; ++r) {
    int64_t cumulative = 0;
    for (size_t b = 0; b < roles[r].buckets.size(); ++b) {
      cumulative += roles[r].buckets[b];
      if (b < state::SharedStateStats::kLatencyBounds.size()) {
        fmt::format_to(Out(out),
                       "switchyard_shared_state_call_duration_seconds_bucket{{role=\"{}\",le=\"{}\"}} {}\n",
                       kRole[r],
                       static_cast<double>(state::SharedStateStats::kLatencyBounds[b]) / 1e9,
                       cumulative);
      } else {
        fmt::format_to(Out(out),
                       "switchyard_shared_state_call_duration_seconds_bucket{{role=\"{}\",le=\"+Inf\"}} {}\n",
                       kRole[r], cumulative);
      }
    }
    fmt::format_to(Out(out), "switchyard_shared_state_call_duration_seconds_sum{{role=\"{}\"}} {}\n",
                   kRole[r], static_cast<double>(roles[r].latency_ns) / 1e9);
    fmt::format_to(Out(out),
                   "switchyard_shared_state_call_duration_seconds_count{{role=\"{}\"}} {}\n",
                   kRole[r], cumulative);
  }
  family(out, "switchyard_shared_state_syncs_total", "counter",
         "Control-plane sync rounds (publish own counts, read the other gateways').");
  fmt::format_to(Out(out), "switchyard_shared_state_syncs_total {}\n", sync.syncsTotal());
  family(out, "switchyard_shared_state_sync_failures_total", "counter",
         "Sync rounds the shared state did not answer in time.");
  fmt::format_to(Out(out), "switchyard_shared_state_sync_failures_total {}\n",
                 sync.syncFailuresTotal());
  family(out, "switchyard_shared_state_live_gateways", "gauge",
         "Gateways with a current heartbeat for the model (this one included).");
  for (const fleet::ModelEntry& model : snapshot.models) {
    const auto it = sync.liveGateways().find(model.name);
    fmt::format_to(Out(out), "switchyard_shared_state_live_gateways{{model=\"{}\"}} {}\n",
                   escaped(model.name), it == sync.liveGateways().end() ? 1 : it->second);
  }
  family(out, "switchyard_replica_global_inflight", "gauge",
         "Requests in flight on the replica across all live gateways (this one's plus the "
         "others' as last read).");
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      fmt::format_to(Out(out),
                     "switchyard_replica_global_inflight{{model=\"{}\",replica=\"{}\"}} {}\n",
                     escaped(model.name), escaped(entry.state->name()),
                     entry.state->globalRunning());
    }
  }
}

}  // namespace switchyard::gateway
