#include "auth/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdio>

namespace switchyard::auth {
namespace {

namespace ssl = boost::asio::ssl;

// Mozilla "intermediate" for TLS 1.2: ECDHE key exchange, AEAD ciphers only.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// ALPN wire format: length-prefixed protocol names.
constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  unsigned char* selected = nullptr;
  unsigned char selected_len = 0;
  if (SSL_select_next_proto(&selected, &selected_len, kAlpnHttp11, sizeof kAlpnHttp11, in,
                            inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // no_application_protocol (RFC 7301)
  }
  *out = selected;
  *outlen = selected_len;
  return SSL_TLSEXT_ERR_OK;
}

std::string opensslReason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

void applyCommonPolicy(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_cipher_list(ctx, kTls12Ciphers);
}

}  // namespace

std::shared_ptr<ssl::context> makeServerContext(const TlsFiles& files) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  applyCommonPolicy(ctx);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    throw TlsError("tls: cannot load certificate " + files.cert_file + ": " + opensslReason());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw TlsError("tls: cannot load key " + files.key_file + ": " + opensslReason());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    throw TlsError("tls: " + files.key_file + " is not the key of " + files.cert_file);
  }
  if (!files.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca_file.c_str(), nullptr) != 1) {
      throw TlsError("tls: cannot load client CA " + files.client_ca_file + ": " +
                     opensslReason());
    }
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(ctx, names);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  SSL_CTX_set_alpn_select_cb(ctx, &selectAlpn, nullptr);
  return context;
}

std::shared_ptr<ssl::context> makeClientContext(const std::string& ca_file, bool verify) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  applyCommonPolicy(ctx);
  ERR_clear_error();
  if (verify) {
    const int loaded = ca_file.empty()
                           ? SSL_CTX_set_default_verify_paths(ctx)
                           : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
    if (loaded != 1) {
      throw TlsError("upstream_tls: cannot load CA " +
                     (ca_file.empty() ? std::string("(system store)") : ca_file) + ": " +
                     opensslReason());
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  SSL_CTX_set_alpn_protos(ctx, kAlpnHttp11, sizeof kAlpnHttp11);
  return context;
}

bool prepareClientTls(void* handle, const std::string& host, bool verify) {
  SSL* ssl = static_cast<SSL*>(handle);
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);  // ec: not a numeric address
  // SNI carries names only, never addresses (RFC 6066).
  if (ec && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) return false;
  if (!verify) return true;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (!ec) return X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  return X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1;
}

int64_t certificateNotAfter(const std::string& cert_file) {
  FILE* f = std::fopen(cert_file.c_str(), "r");
  if (f == nullptr) return -1;
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) {
    ERR_clear_error();
    return -1;
  }
  int64_t out = -1;
  struct tm tm {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1) out = timegm(&tm);
  X509_free(cert);
  return out;
}

std::string peerCommonName(void* handle) {
  SSL* ssl = static_cast<SSL*>(handle);
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return {};
  std::string out;
  char text[256];
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, text,
                                sizeof text) > 0) {
    out = text;
  }
  X509_free(cert);
  return out;
}

TlsContextStore::TlsContextStore(TlsFiles files, std::string listener)
    : files_(std::move(files)), listener_(std::move(listener)) {}

TlsContextStore::Stamps TlsContextStore::stampsNow() const {
  return {stampOf(files_.cert_file), stampOf(files_.key_file),
          files_.client_ca_file.empty() ? FileStamp{} : stampOf(files_.client_ca_file)};
}

void TlsContextStore::load() {
  if (!enabled()) return;
  stamps_ = stampsNow();
  publish(makeServerContext(files_));
}

bool TlsContextStore::refresh(bool force) {
  if (!enabled()) return false;
  const Stamps now = stampsNow();
  if (!force && now == stamps_) return false;
  stamps_ = now;
  try {
    publish(makeServerContext(files_));
  } catch (const TlsError& e) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("tls: {} listener: reload rejected, keeping the current certificate: {}",
                  listener_, e.what());
    return false;
  }
  return true;
}

void TlsContextStore::publish(std::shared_ptr<ssl::context> context) {
  {
    std::lock_guard lock(mutex_);
    context_ = std::move(context);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
  reloads_.fetch_add(1, std::memory_order_relaxed);
  const int64_t not_after = certificateNotAfter(files_.cert_file);
  not_after_.store(not_after, std::memory_order_relaxed);
  spdlog::info("tls: {} listener: certificate {} loaded (valid until unix {}){}", listener_,
               files_.cert_file, not_after, mutualTls() ? ", client certificates required" : "");
}

std::shared_ptr<ssl::context> TlsContextStore::current() const {
  std::lock_guard lock(mutex_);
  return context_;
}

}  // namespace switchyard::auth
