#include "gateway/fleet_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "api/openai_error.h"
#include "health/replica_health.h"
#include "profile/slo_profiles.h"
#include "routing/router.h"

namespace switchyard::gateway {
namespace {

void appendString(std::string& out, std::string_view value) {
  out.push_back('"');
  api::appendJsonEscaped(out, value);
  out.push_back('"');
}

// Unknown signals are JSON null, never 0: an absent reading is not an idle replica.
void appendSignal(std::string& out, std::string_view key, double value) {
  fmt::format_to(std::back_inserter(out), "\"{}\":", key);
  if (std::isnan(value)) {
    out.append("null");
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

// "decode":…,"prefill":…,"slowdown":… of a learned capacity or of the model's means.
void appendLearned(std::string& out, double decode, double prefill, double slowdown) {
  appendSignal(out, "decode", decode);
  out.push_back(',');
  appendSignal(out, "prefill", prefill);
  out.push_back(',');
  appendSignal(out, "slowdown", slowdown);
}

}  // namespace

std::string renderFleetJson(const fleet::FleetSnapshot& snapshot, TimeNs now,
                            std::string_view extra) {
  // The score each replica would get now under its model's default strategy: a dry-run routing
  // decision (pure; it only reads the live counters).
  routing::RoutingScratch scratch;
  Rng rng(static_cast<uint64_t>(now) | 1);
  std::string out;
  fmt::format_to(std::back_inserter(out),
                 R"({{"version":{},"default_strategy":)", snapshot.version);
  appendString(out, snapshot.default_strategy);
  fmt::format_to(std::back_inserter(out), R"(,"signal_max_age_ms":{},)",
                 snapshot.signal_max_age / kNsPerMs);
  if (!extra.empty()) out.append(extra).push_back(',');
  out.append(R"("models":[)");
  for (size_t m = 0; m < snapshot.models.size(); ++m) {
    const fleet::ModelEntry& model = snapshot.models[m];
    if (m) out.push_back(',');
    out.append(R"({"name":)");
    appendString(out, model.name);
    out.append(R"(,"routing_strategy":)");
    appendString(out, model.routing_strategy);
    const std::string_view strategy_text =
        model.routing_strategy.empty() ? std::string_view(snapshot.default_strategy)
                                       : std::string_view(model.routing_strategy);
    routing::StrategySpec spec;
    std::vector<double> scores(model.replicas.size(), std::numeric_limits<double>::quiet_NaN());
    std::vector<double> synthetic(model.replicas.size(), 0.0);
    if (routing::parseStrategySpec(strategy_text, spec, nullptr) == routing::SpecError::kNone) {
      routing::RouteRequest request{&spec, now, {}, {}};
      request.dry_run = true;
      const routing::Decision decision = routing::route(snapshot, model, request, rng, scratch);
      for (const routing::CandidateRow& row : decision.rows) {
        if (row.excluded == routing::Exclusion::kNone && row.replica_index < scores.size()) {
          scores[row.replica_index] = row.score;
          synthetic[row.replica_index] = row.synthetic_load;
        }
      }
    }
    out.append(R"(,"score_strategy":)");
    appendString(out, strategy_text);
    // What a replica without an estimate is scored at, and the centre of the curves' shrinkage.
    const fleet::LearnedMeans means =
        model.runtime ? model.runtime->learnedMeans() : fleet::LearnedMeans{};
    out.append(R"(,"learned_means":{)");
    appendLearned(out, means.decode, means.prefill, means.slowdown);
    out.push_back('}');
    if (model.slo != nullptr) {
      // SLO routing's GPU types kept for the shapes only they serve in time (routing.md).
      out.append(R"(,"slo_reserved_gpus":[)");
      bool first_reserved = true;
      for (size_t i = 0; i < model.slo->gpus.size(); ++i) {
        if (!model.slo->isReserved(model.slo->profiles[i])) continue;
        if (!first_reserved) out.push_back(',');
        first_reserved = false;
        appendString(out, model.slo->gpus[i]);
      }
      out.push_back(']');
    }
    out.append(R"(,"replicas":[)");
    for (size_t r = 0; r < model.replicas.size(); ++r) {
      const fleet::ReplicaEntry& replica = model.replicas[r];
      const fleet::ReplicaCounters& c = replica.state->counters();
      if (r) out.push_back(',');
      out.append(R"({"name":)");
      appendString(out, replica.state->name());
      out.append(R"(,"labels":{)");
      bool first = true;
      for (const auto& [key, value] : replica.labels) {
        if (!first) out.push_back(',');
        first = false;
        appendString(out, key);
        out.push_back(':');
        appendString(out, value);
      }
      fmt::format_to(std::back_inserter(out), R"(}},"health":"{}","health_reason":"{}",)",
                     health::healthStateName(replica.state->health()),
                     health::healthReasonName(replica.state->healthReason()));
      // Lifecycle: active, draining or not_ready, with every reason that applies.
      const uint8_t lifecycle = replica.state->lifecycle();
      fmt::format_to(std::back_inserter(out), R"("lifecycle":"{}","lifecycle_reasons":)",
                     fleet::lifecycleName(lifecycle));
      fleet::appendLifecycleReasons(out, lifecycle);
      out.push_back(',');
      if (!replica.pod.empty()) {
        out.append(R"("pod":{"name":)");
        appendString(out, replica.pod.name);
        out.append(R"(,"namespace":)");
        appendString(out, replica.pod.namespace_);
        out.append(R"(,"deployment":)");
        appendString(out, replica.pod.deployment);
        out.append("},");
      }
      fmt::format_to(std::back_inserter(out),
                     R"("running":{},"global_running":{},"prefill_pending_tokens":{},)"
                     R"("requests_total":{},"output_tokens_total":{},)"
                     R"("input_tokens_total":{},"upstream_errors_total":{},)"
                     R"("consecutive_failures":{},"signals":{{)",
                     c.running.load(), replica.state->globalRunning(),
                     c.prefill_pending_tokens.load(), c.requests_total.load(),
                     c.output_tokens_total.load(),
                     c.input_tokens_total.load(), c.upstream_errors_total.load(),
                     c.consecutive_failures.load());
      TimeNs age = -1;
      bool fresh = false;
      const fleet::EngineSignals signals =
          replica.state->signals(now, snapshot.signal_max_age, &age, &fresh);
      appendSignal(out, "running", signals.running);
      out.push_back(',');
      appendSignal(out, "waiting", signals.waiting);
      out.push_back(',');
      appendSignal(out, "kv_usage", signals.kv_usage);
      out.push_back(',');
      appendSignal(out, "kv_capacity_tokens", replica.state->kvCapacityTokens());
      fmt::format_to(std::back_inserter(out), R"(,"fresh":{},"age_ms":)", fresh);
      if (age < 0) {
        out.append("null");
      } else {
        fmt::format_to(std::back_inserter(out), "{}", age / kNsPerMs);
      }
      const fleet::LearnedCapacity capacity = replica.state->capacity();
      out.append(R"(},"capacity":{)");
      appendLearned(out, capacity.decode, capacity.prefill, capacity.slowdown);
      fmt::format_to(std::back_inserter(out), R"(,"unit":"{}"}},)",
                     capacity.tokenless ? "units/s" : "tokens/s");
      // Lower wins; null when excluded or +Inf ("pass over").
      appendSignal(out, "score", std::isfinite(scores[r]) ? scores[r] : std::nan(""));
      // Slow start: how far into its ramp the replica is, and the load it is carrying for it.
      const TimeNs since = replica.state->readySince();
      const TimeNs ramp = model.slow_start.ramp;
      const bool warming = since != fleet::ReplicaState::kEstablished && ramp > 0 &&
                           now - since < ramp;
      fmt::format_to(std::back_inserter(out), R"(,"slow_start":{{"warming":{},"ramp_left_ms":{},)"
                     R"("synthetic_load":{}}})",
                     warming, warming ? (ramp - std::max<TimeNs>(0, now - since)) / kNsPerMs : 0,
                     synthetic[r]);
      out.push_back('}');
    }
    out.append("]}");
  }
  out.append("]}");
  return out;
}

}  // namespace switchyard::gateway
