#include "gateway/shared_state_metrics.h"

#include <fmt/format.h>

#include <array>

#include "observe/prometheus_writer.h"

namespace switchyard::gateway {
namespace {

using observe::appendHeader;
using observe::appendSample;

struct Totals {
  double calls = 0, degraded = 0, reconnects = 0, latency_ns = 0, connected = 0;
  std::array<double, state::SharedStateStats::kLatencyBounds.size() + 1> buckets{};
  void add(const state::SharedStateStats& s) {
    calls += static_cast<double>(s.calls.load(std::memory_order_relaxed));
    degraded += static_cast<double>(s.degraded.load(std::memory_order_relaxed));
    reconnects += static_cast<double>(s.reconnects.load(std::memory_order_relaxed));
    latency_ns += static_cast<double>(s.latency_ns_total.load(std::memory_order_relaxed));
    connected += s.connected.load(std::memory_order_relaxed) ? 1 : 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      buckets[b] += static_cast<double>(s.latency_buckets[b].load(std::memory_order_relaxed));
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
  // One sample per role of a per-role counter or gauge.
  auto perRole = [&](std::string_view name, std::string_view type, std::string_view help,
                     double Totals::*field) {
    appendHeader(out, name, type, help);
    for (int r = 0; r < 2; ++r) appendSample(out, name, {{"role", kRole[r]}}, roles[r].*field);
  };

  appendHeader(out, "switchyard_shared_state_info", "gauge",
               "The shared-state backend in use (memory: one gateway; redis: shared).");
  appendSample(out, "switchyard_shared_state_info", {{"backend", backend}}, 1);
  perRole("switchyard_shared_state_connected", "gauge",
          "Shared-state connections that are up (request path: one per worker).",
          &Totals::connected);
  perRole("switchyard_shared_state_calls_total", "counter", "Calls to the shared state.",
          &Totals::calls);
  perRole("switchyard_shared_state_degraded_total", "counter",
          "Calls that got no answer in time (timeout, disconnected, error): the gateway decided "
          "locally.",
          &Totals::degraded);
  perRole("switchyard_shared_state_reconnects_total", "counter",
          "Connections to the shared state re-established after a loss.", &Totals::reconnects);

  static constexpr std::string_view kLatency = "switchyard_shared_state_call_duration_seconds";
  appendHeader(out, kLatency, "histogram", "Latency of answered shared-state calls.");
  const std::string bucket = std::string(kLatency) + "_bucket";
  for (int r = 0; r < 2; ++r) {
    double cumulative = 0;
    for (size_t b = 0; b < roles[r].buckets.size(); ++b) {
      cumulative += roles[r].buckets[b];
      const std::string le =
          b < state::SharedStateStats::kLatencyBounds.size()
              ? fmt::format("{}", static_cast<double>(state::SharedStateStats::kLatencyBounds[b]) / 1e9)
              : std::string("+Inf");
      appendSample(out, bucket, {{"role", kRole[r]}}, cumulative, "le", le);
    }
    appendSample(out, std::string(kLatency) + "_sum", {{"role", kRole[r]}},
                 roles[r].latency_ns / 1e9);
    appendSample(out, std::string(kLatency) + "_count", {{"role", kRole[r]}}, cumulative);
  }

  appendHeader(out, "switchyard_shared_state_syncs_total", "counter",
               "Control-plane sync rounds (publish own counts, read the other gateways').");
  appendSample(out, "switchyard_shared_state_syncs_total", {},
               static_cast<double>(sync.syncsTotal()));
  appendHeader(out, "switchyard_shared_state_sync_failures_total", "counter",
               "Sync rounds the shared state did not answer in time.");
  appendSample(out, "switchyard_shared_state_sync_failures_total", {},
               static_cast<double>(sync.syncFailuresTotal()));
  appendHeader(out, "switchyard_shared_state_reports_published_total", "counter",
               "Replica counts the sync wrote (only those that changed, and all once a minute).");
  appendSample(out, "switchyard_shared_state_reports_published_total", {},
               static_cast<double>(sync.reportsPublishedTotal()));
  appendHeader(out, "switchyard_shared_state_views_read_total", "counter",
               "Replica views the sync read (only those changed anywhere since its last read).");
  appendSample(out, "switchyard_shared_state_views_read_total", {},
               static_cast<double>(sync.viewsReadTotal()));
  appendHeader(out, "switchyard_shared_state_live_gateways", "gauge",
               "Gateways with a current heartbeat for the model (this one included).");
  for (const fleet::ModelEntry& model : snapshot.models) {
    const auto it = sync.liveGateways().find(model.name);
    appendSample(out, "switchyard_shared_state_live_gateways", {{"model", model.name}},
                 it == sync.liveGateways().end() ? 1 : it->second);
  }
  appendHeader(out, "switchyard_replica_global_inflight", "gauge",
               "Requests in flight on the replica across all live gateways (this one's plus the "
               "others' as last read).");
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      appendSample(out, "switchyard_replica_global_inflight",
                   {{"model", model.name}, {"replica", entry.state->name()}},
                   static_cast<double>(entry.state->globalRunning()));
    }
  }
}

}  // namespace switchyard::gateway
