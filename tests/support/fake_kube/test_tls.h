// Throw-away TLS material for tests: a CA, a server certificate for 127.0.0.1 / ::1 / localhost
// and a client certificate, generated at run time with the OpenSSL API (EC P-256, valid one day).
// Nothing is written to disk unless a caller does so.
#pragma once

#include <string>

namespace switchyard::testing {

struct TlsMaterial {
  std::string ca_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
  std::string client_cert_pem;  // CN = client_name, signed by the CA
  std::string client_key_pem;
};

// Throws std::runtime_error if OpenSSL fails.
TlsMaterial makeTlsMaterial(const std::string& client_name = "switchyard");

// A second, unrelated CA (for "wrong CA" tests).
std::string makeUnrelatedCaPem();

}  // namespace switchyard::testing
