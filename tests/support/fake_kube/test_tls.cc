#include "support/fake_kube/test_tls.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

namespace switchyard::testing {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test TLS material: ") + what);
}

Key makeKey() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EC key generation failed");
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

// A certificate for `subject_key` named `cn`, signed by `issuer` with `issuer_key` (self-signed
// when issuer is null).
Cert makeCert(EVP_PKEY* subject_key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
              bool ca, const char* san, const char* usage) {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7F;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert.get();
  if (ca) {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    addExtension(cert.get(), signer, NID_ext_key_usage, usage);
    if (san != nullptr) addExtension(cert.get(), signer, NID_subject_alt_name, san);
  }
  addExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  check(X509_sign(cert.get(), issuer_key ? issuer_key : subject_key, EVP_sha256()) > 0, "sign");
  return cert;
}

std::string pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace

TlsMaterial makeTlsMaterial(const std::string& client_name) {
  Key ca_key = makeKey();
  Cert ca = makeCert(ca_key.get(), "switchyard-test-ca", nullptr, nullptr, true, nullptr, nullptr);
  Key server_key = makeKey();
  Cert server = makeCert(server_key.get(), "fake-kube-apiserver", ca.get(), ca_key.get(), false,
                         "IP:127.0.0.1,IP:::1,DNS:localhost", "serverAuth");
  Key client_key = makeKey();
  Cert client =
      makeCert(client_key.get(), client_name, ca.get(), ca_key.get(), false, nullptr, "clientAuth");
  return {pem(ca.get()), pem(server.get()), pem(server_key.get()), pem(client.get()),
          pem(client_key.get())};
}

std::string makeUnrelatedCaPem() {
  Key key = makeKey();
  Cert ca = makeCert(key.get(), "unrelated-ca", nullptr, nullptr, true, nullptr, nullptr);
  return pem(ca.get());
}

}  // namespace switchyard::testing
