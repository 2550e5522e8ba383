// TLS contexts (OpenSSL through Asio) for the gateway's listeners and its upstream connections.
//
// Server policy (client and admin listeners): TLS 1.2 and 1.3 only; for 1.2 the ECDHE AEAD
// suites of Mozilla's "intermediate" profile (forward secrecy, no CBC, no RSA key exchange);
// 1.3's defaults; no compression, no renegotiation; ALPN selects http/1.1 (a client offering
// only other protocols, e.g. h2 alone, gets a no_application_protocol alert); with a client CA
// every client must present a certificate it signed (mTLS).
//
// TlsContextStore holds a listener's current context and reloads it when the certificate, key
// or CA file changes (or on SIGHUP): a new context is built and published; handshakes from then
// on use it while established connections keep theirs. A file that fails to load is logged and
// the current context stays. Workers read through TlsContextCache (one relaxed load per
// connection; a shared_ptr copy when the version changed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/file_stamp.h"

namespace boost::asio::ssl {
class context;
}

namespace switchyard::auth {

struct TlsFiles {
  std::string cert_file;       // PEM certificate chain, leaf first
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CAs whose client certificates are accepted (mTLS); "" none
  bool enabled() const { return !cert_file.empty(); }
};

struct TlsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws TlsError naming the file and OpenSSL's reason.
std::shared_ptr<boost::asio::ssl::context> makeServerContext(const TlsFiles& files);

// For connections to replicas: verifies the server's chain against `ca_file` (empty: the
// system's trust store) and, per connection, its name (see prepareClientTls). `verify` false
// accepts any certificate: for self-signed test fleets only (logged at start).
std::shared_ptr<boost::asio::ssl::context> makeClientContext(const std::string& ca_file,
                                                             bool verify);

// Sets SNI and the name the peer's certificate must carry on a client-side SSL* before its
// handshake (a numeric address is checked against IP SANs). False if OpenSSL refuses.
bool prepareClientTls(void* ssl_handle, const std::string& host, bool verify);

// The leaf certificate's notAfter (unix seconds) of a PEM file; -1 if unreadable.
int64_t certificateNotAfter(const std::string& cert_file);

// The subject common name of the peer's certificate (mTLS); "" when there is none.
std::string peerCommonName(void* ssl_handle);

class TlsContextStore {
 public:
  TlsContextStore(TlsFiles files, std::string listener);

  bool enabled() const { return files_.enabled(); }
  const std::string& listener() const { return listener_; }
  bool mutualTls() const { return !files_.client_ca_file.empty(); }

  // Control thread, at start. Throws TlsError.
  void load();
  // Control thread: reloads when `force` or any of the files changed. True when a new context
  // was published; a failure keeps the current one (logged, counted).
  bool refresh(bool force);

  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::shared_ptr<boost::asio::ssl::context> current() const;

  // Counters for /metrics. Handshake failures are counted by the listeners (any thread).
  uint64_t reloadsTotal() const { return reloads_.load(std::memory_order_relaxed); }
  uint64_t reloadFailuresTotal() const { return failures_.load(std::memory_order_relaxed); }
  void countHandshakeFailure() const { handshake_failures_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t handshakeFailuresTotal() const {
    return handshake_failures_.load(std::memory_order_relaxed);
  }
  int64_t notAfter() const { return not_after_.load(std::memory_order_relaxed); }

 private:
  struct Stamps {
    FileStamp cert, key, ca;
    bool operator==(const Stamps&) const = default;
  };
  Stamps stampsNow() const;
  void publish(std::shared_ptr<boost::asio::ssl::context> context);

  TlsFiles files_;
  std::string listener_;
  Stamps stamps_;
  mutable std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> failures_{0};
  mutable std::atomic<uint64_t> handshake_failures_{0};
  std::atomic<int64_t> not_after_{-1};
};

class TlsContextCache {
 public:
  explicit TlsContextCache(const TlsContextStore* store) : store_(store) {}
  // Null when the listener has no TLS.
  const std::shared_ptr<boost::asio::ssl::context>& get() {
    if (store_ != nullptr && store_->enabled()) {
      const uint64_t v = store_->version();
      if (v != version_) {
        context_ = store_->current();
        version_ = v;
      }
    }
    return context_;
  }

 private:
  const TlsContextStore* store_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  uint64_t version_ = 0;
};

}  // namespace switchyard::auth
