#include "gateway/readiness.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/openai_error.h"

namespace switchyard::gateway {

Readiness::Verdict Readiness::evaluate(const ReadinessInputs& in) {
  Verdict verdict;
  if (in.shutting_down) {
    verdict.waiting_for.push_back("shutting down");
    return verdict;
  }
  if (latched_) {
    verdict.ready = true;
    verdict.degraded = latched_degraded_;
    return verdict;
  }
  const TimeNs waited = in.now - started_;
  if (in.shared_state_distributed && !in.shared_state_synced) {
    if (waited < settings_.shared_state_timeout) {
      verdict.waiting_for.push_back("shared state: not synced yet");
    } else {
      verdict.degraded.push_back(fmt::format(
          "shared state: not reachable within {} ms; limits and counts are decided locally",
          settings_.shared_state_timeout / kNsPerMs));
    }
  }
  if (in.discovery_configured && !in.discovery_synced) {
    if (waited < settings_.discovery_timeout) {
      verdict.waiting_for.push_back("discovery: the API server has not been listed yet");
    } else {
      verdict.degraded.push_back(fmt::format(
          "discovery: the API server was not listed within {} ms; serving the static fleet",
          settings_.discovery_timeout / kNsPerMs));
    }
  }
  size_t replicas = 0;
  size_t unscraped = 0;
  if (in.snapshot != nullptr) {
    for (const fleet::ModelEntry& model : in.snapshot->models) {
      for (const fleet::ReplicaEntry& entry : model.replicas) {
        ++replicas;
        if (!entry.state->everScraped()) ++unscraped;
      }
    }
  }
  if (unscraped > 0) {
    if (waited < settings_.telemetry_timeout) {
      verdict.waiting_for.push_back(
          fmt::format("telemetry: {} of {} replicas not scraped yet", unscraped, replicas));
    } else {
      verdict.degraded.push_back(fmt::format(
          "telemetry: {} of {} replicas not scraped within {} ms", unscraped, replicas,
          settings_.telemetry_timeout / kNsPerMs));
    }
  }
  verdict.ready = verdict.waiting_for.empty();
  if (verdict.ready) {
    latched_ = true;
    latched_degraded_ = verdict.degraded;
    if (verdict.degraded.empty()) {
      spdlog::info("gateway: ready after {} ms", waited / kNsPerMs);
    } else {
      for (const std::string& why : verdict.degraded) {
        spdlog::warn("gateway: ready after {} ms, degraded: {}", waited / kNsPerMs, why);
      }
    }
  }
  return verdict;
}

std::string Readiness::toJson(const Verdict& verdict, bool shutting_down) {
  std::string out = R"({"status":")";
  out += verdict.ready ? "ready" : (shutting_down ? "draining" : "not_ready");
  out += '"';
  const auto list = [&out](const char* name, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out += fmt::format(R"(,"{}":[)", name);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += ',';
      out += '"';
      api::appendJsonEscaped(out, items[i]);
      out += '"';
    }
    out += ']';
  };
  list("waiting_for", verdict.waiting_for);
  list("degraded", verdict.degraded);
  out += '}';
  return out;
}

}  // namespace switchyard::gateway
