// TestCertificates: a throw-away PKI for TLS tests, generated in-process with OpenSSL (ECDSA
// P-256) into a temporary directory that is removed afterwards:
//
//   ca.pem                         a self-signed CA
//   server.pem / server.key        signed by the CA for 127.0.0.1 and localhost, valid now
//   expired.pem / expired.key      signed by the CA, expired yesterday
//   client.pem / client.key        a client certificate (CN=alice) signed by the CA
//   other-ca.pem                   a CA that signed nothing here
//
// issueServer() writes a fresh server certificate (another serial and common name) over given
// paths, for reload tests.
#pragma once

#include <string>

namespace switchyard::testing {

class TestCertificates {
 public:
  TestCertificates();  // throws std::runtime_error
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // A new certificate for 127.0.0.1/localhost with subject CN `common_name`, signed by the CA,
  // written to cert_path and key_path (atomically: a temporary file renamed over each).
  void issueServer(const std::string& common_name, const std::string& cert_path,
                   const std::string& key_path) const;

 private:
  struct Impl;
  std::string dir_;
  Impl* impl_;
};

}  // namespace switchyard::testing
