#include "gateway/admin_access.h"

#include "auth/api_key.h"
#include "gateway/security_plane.h"

namespace switchyard::gateway {

AdminCaller GatewayAdminAccess::check(std::string_view path, std::string_view authorization,
                                      std::string_view client_cert_cn) {
  auth::KeyStore& tokens = security_.adminKeys();
  const bool mutual_tls = security_.adminTls().mutualTls();
  AdminCaller caller{false, "anonymous"};  // refused unless proven below
  if (!client_cert_cn.empty()) {
    caller = {true, "cert:" + std::string(client_cert_cn)};
  } else if (mutual_tls) {
    caller = {true, "cert:(no common name)"};  // the handshake verified the certificate
  }
  if (tokens.enabled()) {
    const std::string_view token = auth::bearerToken(authorization);
    const auto table = tokens.current();
    const auth::KeyEntry* key = token.empty() || !table ? nullptr : table->find(token);
    if (key != nullptr) caller = {true, "token:" + key->state->name};
  }
  if (!tokens.enabled() && !mutual_tls) caller = {true, "anonymous"};
  if (!caller.allowed && (path == "/healthz" || path == "/readyz")) {
    caller = {true, "anonymous"};  // probes carry no fleet data
  }
  security_.countAdminRequest(caller.allowed);
  return caller;
}

}  // namespace switchyard::gateway
