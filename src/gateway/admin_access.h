// AdminAccess: who may use the admin listener, and under which name their writes are logged
// (docs/security.md).
//
// The admin listener binds to loopback by default. Bound anywhere else, the configuration must
// name a way to prove who calls (config validation refuses to start otherwise): bearer tokens
// (`admin_auth.keys_file`, the keys file format: `switchyard keys add --file ADMIN_FILE`) and/or
// client certificates (`admin_tls.client_ca_file`: the TLS handshake already refused anyone
// without one). With either configured, every path but the probes (/healthz, /readyz, which
// carry no fleet data) requires it, on loopback too. The caller is then named by its token's
// name ("token:ops") or its certificate's common name ("cert:alice"); without either,
// "anonymous" from its address.
//
// Called on the control thread for each admin request (not the request path).
#pragma once

#include <string>
#include <string_view>

namespace switchyard::gateway {

class SecurityPlane;

struct AdminCaller {
  bool allowed = false;
  std::string who;  // for the log line of a write: token:NAME, cert:CN or anonymous
};

class AdminAccess {
 public:
  virtual ~AdminAccess() = default;
  // `client_cert_cn`: the verified client certificate's common name ("" none).
  virtual AdminCaller check(std::string_view path, std::string_view authorization,
                            std::string_view client_cert_cn) = 0;
};

// The gateway's policy over its SecurityPlane (which must outlive it).
class GatewayAdminAccess final : public AdminAccess {
 public:
  explicit GatewayAdminAccess(SecurityPlane& security) : security_(security) {}
  AdminCaller check(std::string_view path, std::string_view authorization,
                    std::string_view client_cert_cn) override;

 private:
  SecurityPlane& security_;
};

}  // namespace switchyard::gateway
