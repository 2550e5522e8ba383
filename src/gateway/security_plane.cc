#include "gateway/security_plane.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ssl/context.hpp>

#include "observe/prometheus_writer.h"

namespace switchyard::gateway {

using observe::appendHeader;
using observe::appendSample;

SecurityPlane::SecurityPlane(const SecurityConfig& config, bool needs_upstream_tls)
    : config_(config),
      keys_(config.keys_file, "keys file"),
      admin_keys_(config.admin_keys_file, "admin keys file"),
      client_tls_(config.tls, "client"),
      admin_tls_(config.admin_tls, "admin"),
      client_limits_(config.client_limits) {
  auth::initCrypto();
  keys_.load();
  admin_keys_.load();
  client_tls_.load();
  admin_tls_.load();
  if (needs_upstream_tls) {
    upstream_tls_ =
        auth::makeClientContext(config.upstream_tls.ca_file, config.upstream_tls.verify);
    if (!config.upstream_tls.verify) {
      spdlog::warn(
          "upstream_tls: verify is false: https:// replicas' certificates are NOT checked; "
          "anyone on the path can impersonate them (self-signed test fleets only)");
    } else {
      spdlog::info("upstream_tls: https:// replicas verified against {}",
                   config.upstream_tls.ca_file.empty() ? std::string("the system's trust store")
                                                       : config.upstream_tls.ca_file);
    }
  }
  if (!keys_.enabled()) {
    spdlog::warn("auth: no keys file (auth.keys_file): every client may use every model");
  }
}

SecurityPlane::~SecurityPlane() = default;

void SecurityPlane::refresh(bool force) {
  keys_.refresh(force);
  admin_keys_.refresh(force);
  client_tls_.refresh(force);
  admin_tls_.refresh(force);
}

void SecurityPlane::appendMetrics(std::string& out) const {
  appendHeader(out, "switchyard_auth_failures_total", "counter",
               "Requests refused with 401 invalid_api_key: no bearer key (missing) or one that "
               "matches no key (invalid).");
  appendSample(out, "switchyard_auth_failures_total", {{"reason", "missing"}},
               static_cast<double>(auth_failures_[0].load(std::memory_order_relaxed)));
  appendSample(out, "switchyard_auth_failures_total", {{"reason", "invalid"}},
               static_cast<double>(auth_failures_[1].load(std::memory_order_relaxed)));

  const auto states = keys_.states().all();
  appendHeader(out, "switchyard_key_requests_total", "counter",
               "Requests by API key name and outcome: allowed, model_denied (404), "
               "request_limited and token_limited (429).");
  for (const auth::KeyState* key : states) {
    const auth::KeyCounters& c = key->counters;
    const std::pair<std::string_view, const std::atomic<uint64_t>*> outcomes[] = {
        {"allowed", &c.allowed},
        {"model_denied", &c.model_denied},
        {"request_limited", &c.request_limited},
        {"token_limited", &c.token_limited}};
    for (const auto& [outcome, value] : outcomes) {
      appendSample(out, "switchyard_key_requests_total", {{"key", key->name}, {"outcome", outcome}},
                   static_cast<double>(value->load(std::memory_order_relaxed)));
    }
  }
  appendHeader(out, "switchyard_key_tokens_total", "counter",
               "Tokens by API key name, counted from each response's usage (estimated when the "
               "response carries none).");
  for (const auth::KeyState* key : states) {
    appendSample(out, "switchyard_key_tokens_total", {{"key", key->name}, {"kind", "prompt"}},
                 static_cast<double>(key->counters.prompt_tokens.load(std::memory_order_relaxed)));
    appendSample(
        out, "switchyard_key_tokens_total", {{"key", key->name}, {"kind", "completion"}},
        static_cast<double>(key->counters.completion_tokens.load(std::memory_order_relaxed)));
  }
  appendHeader(out, "switchyard_keys_file_reloads_total", "counter",
               "Keys files loaded (result ok) or rejected on reload (result error).");
  for (const auto& [file, store] :
       {std::pair<std::string_view, const auth::KeyStore*>{"keys", &keys_},
        {"admin", &admin_keys_}}) {
    if (!store->enabled()) continue;
    appendSample(out, "switchyard_keys_file_reloads_total", {{"file", file}, {"result", "ok"}},
                 static_cast<double>(store->reloadsTotal()));
    appendSample(out, "switchyard_keys_file_reloads_total", {{"file", file}, {"result", "error"}},
                 static_cast<double>(store->reloadFailuresTotal()));
  }

  appendHeader(out, "switchyard_tls_reloads_total", "counter",
               "Certificates loaded per listener (result ok) or rejected on reload (error).");
  for (const auth::TlsContextStore* tls : {&client_tls_, &admin_tls_}) {
    if (!tls->enabled()) continue;
    appendSample(out, "switchyard_tls_reloads_total",
                 {{"listener", tls->listener()}, {"result", "ok"}},
                 static_cast<double>(tls->reloadsTotal()));
    appendSample(out, "switchyard_tls_reloads_total",
                 {{"listener", tls->listener()}, {"result", "error"}},
                 static_cast<double>(tls->reloadFailuresTotal()));
  }
  appendHeader(out, "switchyard_tls_handshake_failures_total", "counter",
               "TLS handshakes that failed per listener (plain HTTP to a TLS port, no common "
               "protocol or cipher, a client certificate refused, a timeout).");
  for (const auth::TlsContextStore* tls : {&client_tls_, &admin_tls_}) {
    if (!tls->enabled()) continue;
    appendSample(out, "switchyard_tls_handshake_failures_total", {{"listener", tls->listener()}},
                 static_cast<double>(tls->handshakeFailuresTotal()));
  }
  appendHeader(out, "switchyard_tls_certificate_not_after_seconds", "gauge",
               "When the listener's certificate expires (unix seconds).");
  for (const auth::TlsContextStore* tls : {&client_tls_, &admin_tls_}) {
    if (!tls->enabled()) continue;
    appendSample(out, "switchyard_tls_certificate_not_after_seconds",
                 {{"listener", tls->listener()}}, static_cast<double>(tls->notAfter()));
  }

  appendHeader(out, "switchyard_client_limits_total", "counter",
               "Connections and requests stopped by a client limit (ip_table_full: an address "
               "let through untracked).");
  for (size_t i = 0; i < static_cast<size_t>(admission::ClientLimit::kCount); ++i) {
    const auto limit = static_cast<admission::ClientLimit>(i);
    appendSample(out, "switchyard_client_limits_total",
                 {{"limit", admission::clientLimitName(limit)}},
                 static_cast<double>(client_limits_.counted(limit)));
  }
  appendHeader(out, "switchyard_client_connections", "gauge", "Open client connections.");
  appendSample(out, "switchyard_client_connections", {},
               static_cast<double>(client_limits_.openConnections()));

  appendHeader(out, "switchyard_admin_requests_total", "counter",
               "Admin requests by whether they were let through (a valid token or client "
               "certificate, or an open endpoint) or refused (401).");
  appendSample(out, "switchyard_admin_requests_total", {{"result", "allowed"}},
               static_cast<double>(admin_allowed_.load(std::memory_order_relaxed)));
  appendSample(out, "switchyard_admin_requests_total", {{"result", "denied"}},
               static_cast<double>(admin_denied_.load(std::memory_order_relaxed)));
}

}  // namespace switchyard::gateway
