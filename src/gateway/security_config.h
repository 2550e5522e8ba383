// The gateway's security configuration (docs/security.md, docs/configuration.md):
//
//   tls:          { cert_file, key_file }                   # the client listener speaks HTTPS
//   admin_tls:    { cert_file, key_file, client_ca_file }   # the admin listener; a client CA
//                                                           # makes it require client certs
//   auth:         { keys_file, forward_client_authorization }   # API keys ($SWITCHYARD_KEYS_FILE)
//   admin_auth:   { keys_file }          # bearer tokens for the admin listener
//                                        # ($SWITCHYARD_ADMIN_KEYS_FILE)
//   upstream_tls: { ca_file, verify }    # replicas given as https://
//   client_limits: { max_connections, max_connections_per_ip, requests_per_second_per_ip,
//                    burst_per_ip, max_header_count, max_header_bytes }
//
// Per replica (or per model, for its replicas): `api_key` or `api_key_env` (the name of an
// environment variable holding it), sent upstream as `Authorization: Bearer`.
//
// Parsed at load time; parse errors throw ConfigError naming the key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "admission/client_limits.h"
#include "auth/tls_context.h"
#include "fleet/fleet_registry.h"

namespace switchyard::gateway {

struct UpstreamTlsConfig {
  std::string ca_file;  // "" : the system's trust store
  bool verify = true;   // false: accept any certificate (self-signed test fleets; logged)
};

struct SecurityConfig {
  auth::TlsFiles tls;        // client listener
  auth::TlsFiles admin_tls;  // admin listener
  std::string keys_file;     // API keys; "" : no authentication
  bool forward_client_authorization = false;  // relay the client's Authorization upstream
  std::string admin_keys_file;  // admin bearer tokens; "" : none
  UpstreamTlsConfig upstream_tls;
  admission::ClientLimitSettings client_limits;
};

struct GatewayConfig;

// The security sections present in `root` (the others keep their defaults).
void parseSecurity(const YAML::Node& root, SecurityConfig& config);
// The top-level keys parseSecurity reads.
bool isSecurityKey(const std::string& key);
// SWITCHYARD_KEYS_FILE, SWITCHYARD_ADMIN_KEYS_FILE.
void applySecurityEnvironment(SecurityConfig& config);
// Rules across sections, checked after the environment and command line are applied: an admin
// listener bound beyond loopback must require a bearer token or a client certificate.
void validateSecurity(const GatewayConfig& config);

// A replica's address may carry a scheme: "https://host:port" (TLS upstream) or
// "http://host:port". Strips it into `replica.tls`; throws ConfigError for another scheme.
void parseReplicaScheme(fleet::ReplicaSpec& replica, const std::string& where);
// `api_key` / `api_key_env` of a replica or model node into `authorization` ("Bearer KEY");
// unchanged when the node has neither.
void parseUpstreamKey(const YAML::Node& node, const std::string& where,
                      std::string& authorization);

}  // namespace switchyard::gateway
