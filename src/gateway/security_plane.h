// SecurityPlane: the gateway's security state, owned by the control thread and read by the
// workers and the admin listener (docs/security.md).
//
//  - the API keys (auth/key_store.h) and the admin tokens (the same format, another file);
//  - the TLS contexts of the client and admin listeners (auth/tls_context.h) and the one used
//    towards https:// replicas;
//  - the client limits shared by the workers (admission/client_limits.h);
//  - counters for /metrics: authentication failures, keys' outcomes and tokens, TLS reloads and
//    handshake failures, client-limit refusals, admin requests.
//
// Built at start (throws when a file it was told to use is missing or invalid: the gateway does
// not start half-secured); refresh() reloads changed files (SIGHUP forces it). Workers hold a
// reference for the process's lifetime; everything they touch is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "admission/client_limits.h"
#include "auth/key_store.h"
#include "auth/tls_context.h"
#include "gateway/security_config.h"

namespace boost::asio::ssl {
class context;
}

namespace switchyard::gateway {

// Why a request was refused before any key matched (the `reason` label).
enum class AuthFailure : uint8_t { kMissing = 0, kInvalid, kCount };

class SecurityPlane {
 public:
  // `needs_upstream_tls`: some replica is https:// (builds the client context now, so a bad CA
  // file stops the start rather than every request).
  SecurityPlane(const SecurityConfig& config, bool needs_upstream_tls);
  ~SecurityPlane();

  const SecurityConfig& config() const { return config_; }

  auth::KeyStore& keys() { return keys_; }
  const auth::KeyStore& keys() const { return keys_; }
  auth::KeyStore& adminKeys() { return admin_keys_; }
  const auth::TlsContextStore& clientTls() const { return client_tls_; }
  const auth::TlsContextStore& adminTls() const { return admin_tls_; }
  // The context for https:// replicas; null when none is configured.
  const std::shared_ptr<boost::asio::ssl::context>& upstreamTls() const { return upstream_tls_; }
  admission::ClientLimits& clientLimits() { return client_limits_; }

  // Control thread: reloads the keys files and certificates that changed (all when `force`).
  void refresh(bool force);

  // Any thread.
  void countAuthFailure(AuthFailure reason) {
    auth_failures_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }
  void countAdminRequest(bool allowed) {
    (allowed ? admin_allowed_ : admin_denied_).fetch_add(1, std::memory_order_relaxed);
  }

  // Control thread: the security families in Prometheus text.
  void appendMetrics(std::string& out) const;

 private:
  SecurityConfig config_;
  auth::KeyStore keys_;
  auth::KeyStore admin_keys_;
  auth::TlsContextStore client_tls_;
  auth::TlsContextStore admin_tls_;
  std::shared_ptr<boost::asio::ssl::context> upstream_tls_;
  admission::ClientLimits client_limits_;
  std::array<std::atomic<uint64_t>, static_cast<size_t>(AuthFailure::kCount)> auth_failures_{};
  std::atomic<uint64_t> admin_allowed_{0};
  std::atomic<uint64_t> admin_denied_{0};
};

}  // namespace switchyard::gateway
