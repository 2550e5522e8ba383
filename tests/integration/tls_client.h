// TlsClient: a blocking HTTPS/1.1 client for the TLS integration tests (OpenSSL over a loopback
// socket, every read and write bounded by a timeout). It reports what the handshake did
// (protocol version, ALPN, the verification error) so tests can assert on refusals as well as
// on answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"

namespace switchyard::testing {

struct TlsOptions {
  std::string ca_file;                    // verify the server against it; "" : no verification
  std::string verify_host = "127.0.0.1";  // the name or address its certificate must carry
  std::string sni;                        // server name indication; "" : none
  std::vector<std::string> alpn = {"http/1.1"};
  std::string cert_file, key_file;        // a client certificate
  int min_version = 0;                    // e.g. TLS1_VERSION; 0: OpenSSL's default
  int max_version = 0;                    // e.g. TLS1_1_VERSION
};

class TlsClient {
 public:
  TlsClient(uint16_t port, TlsOptions options, std::chrono::milliseconds timeout = 10s);
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  // Connects and handshakes; false with error() on failure.
  bool handshake();
  const std::string& error() const { return error_; }
  std::string alpn() const;
  std::string version() const;
  std::string peerCommonName() const;
  // One request on the (keep-alive) connection; the handshake runs first if needed.
  HttpResult request(std::string_view method, std::string_view target, std::string_view body = {},
                     const Headers& headers = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

}  // namespace switchyard::testing
