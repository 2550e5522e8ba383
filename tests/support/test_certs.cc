#include "support/test_certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <stdexcept>

namespace switchyard::testing {
namespace {

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test certificates: ") + what);
}

EVP_PKEY* newKey() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  check(key != nullptr, "key generation");
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key`, issued by `issuer` (null: self-signed) signed with `issuer_key`,
// valid from now + not_before_s to now + not_after_s.
X509* makeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
               long not_before_s, long not_after_s, bool ca, bool server) {
  static std::atomic<long> serial{1000};
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert), not_after_s);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
  X509* issuer_cert = issuer ? issuer : cert;
  if (ca) {
    addExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert, issuer_cert, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert, issuer_cert, NID_ext_key_usage, server ? "serverAuth" : "clientAuth");
    if (server) {
      addExtension(cert, issuer_cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    }
  }
  check(X509_sign(cert, issuer_key, EVP_sha256()) > 0, "signing");
  return cert;
}

void writeFile(const std::string& path, const std::function<bool(FILE*)>& write) {
  const std::string temp = path + ".tmp";
  FILE* f = std::fopen(temp.c_str(), "w");
  check(f != nullptr, "open");
  const bool ok = write(f);
  std::fclose(f);
  check(ok, "write");
  check(std::rename(temp.c_str(), path.c_str()) == 0, "rename");
}

void writeCert(const std::string& path, X509* cert) {
  writeFile(path, [cert](FILE* f) { return PEM_write_X509(f, cert) == 1; });
}

void writeKey(const std::string& path, EVP_PKEY* key) {
  writeFile(path, [key](FILE* f) {
    return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  });
}

}  // namespace

struct TestCertificates::Impl {
  EVP_PKEY* ca_key = nullptr;
  X509* ca = nullptr;
  ~Impl() {
    X509_free(ca);
    EVP_PKEY_free(ca_key);
  }
};

TestCertificates::TestCertificates() : impl_(new Impl) {
  char pattern[] = "/tmp/switchyard-certs-XXXXXX";
  check(::mkdtemp(pattern) != nullptr, "mkdtemp");
  dir_ = pattern;
  constexpr long kDay = 86400;
  impl_->ca_key = newKey();
  impl_->ca = makeCert(impl_->ca_key, "Switchyard Test CA", nullptr, impl_->ca_key, -kDay,
                       30 * kDay, true, false);
  writeCert(path("ca.pem"), impl_->ca);
  issueServer("server", path("server.pem"), path("server.key"));

  EVP_PKEY* expired_key = newKey();
  X509* expired = makeCert(expired_key, "expired", impl_->ca, impl_->ca_key, -10 * kDay, -kDay,
                           false, true);
  writeCert(path("expired.pem"), expired);
  writeKey(path("expired.key"), expired_key);
  X509_free(expired);
  EVP_PKEY_free(expired_key);

  EVP_PKEY* client_key = newKey();
  X509* client = makeCert(client_key, "alice", impl_->ca, impl_->ca_key, -kDay, 30 * kDay, false,
                          false);
  writeCert(path("client.pem"), client);
  writeKey(path("client.key"), client_key);
  X509_free(client);
  EVP_PKEY_free(client_key);

  EVP_PKEY* other_key = newKey();
  X509* other = makeCert(other_key, "Other CA", nullptr, other_key, -kDay, 30 * kDay, true, false);
  writeCert(path("other-ca.pem"), other);
  X509_free(other);
  EVP_PKEY_free(other_key);
}

TestCertificates::~TestCertificates() {
  delete impl_;
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void TestCertificates::issueServer(const std::string& common_name, const std::string& cert_path,
                                   const std::string& key_path) const {
  EVP_PKEY* key = newKey();
  X509* cert = makeCert(key, common_name, impl_->ca, impl_->ca_key, -86400, 30 * 86400, false,
                        true);
  // The key first: a reload that sees the new certificate with the old key is rejected (and
  // retried when the key changes), never served.
  writeKey(key_path, key);
  writeCert(cert_path, cert);
  X509_free(cert);
  EVP_PKEY_free(key);
}

}  // namespace switchyard::testing
