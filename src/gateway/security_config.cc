#include "gateway/security_config.h"

#include <boost/asio/ip/address.hpp>
#include <cstdlib>

#include "gateway/config.h"
#include "gateway/config_values.h"

namespace switchyard::gateway {
namespace {

template <typename OnKey>
void forEachKey(const YAML::Node& node, const std::string& where, OnKey&& on_key) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    if (!on_key(key, it->second, where + "." + key)) {
      throw ConfigError(where + "." + key + ": unknown key");
    }
  }
}

std::string nonEmpty(const YAML::Node& node, const std::string& where) {
  std::string value = scalar<std::string>(node, where);
  if (value.empty()) throw ConfigError(where + ": must not be empty");
  return value;
}

void parseTls(const YAML::Node& node, const std::string& where, auth::TlsFiles& files,
              bool client_ca) {
  forEachKey(node, where, [&](const std::string& key, const YAML::Node& v,
                              const std::string& full) {
    if (key == "cert_file") {
      files.cert_file = nonEmpty(v, full);
    } else if (key == "key_file") {
      files.key_file = nonEmpty(v, full);
    } else if (key == "client_ca_file" && client_ca) {
      files.client_ca_file = nonEmpty(v, full);
    } else {
      return false;
    }
    return true;
  });
  if (files.cert_file.empty() != files.key_file.empty()) {
    throw ConfigError(where + ": cert_file and key_file go together");
  }
  if (!files.client_ca_file.empty() && files.cert_file.empty()) {
    throw ConfigError(where + ".client_ca_file: needs cert_file and key_file");
  }
}

void parseClientLimits(const YAML::Node& node, admission::ClientLimitSettings& limits) {
  forEachKey(node, "client_limits", [&](const std::string& key, const YAML::Node& v,
                                        const std::string& full) {
    if (key == "max_connections") {
      limits.max_connections = static_cast<int64_t>(number(v, full, 0, 1e7));
    } else if (key == "max_connections_per_ip") {
      limits.max_connections_per_ip = static_cast<int64_t>(number(v, full, 0, 65535));
    } else if (key == "requests_per_second_per_ip") {
      limits.requests_per_second_per_ip = number(v, full, 0, 1e7);
    } else if (key == "burst_per_ip") {
      limits.burst_per_ip = number(v, full, 0, 1e7);
    } else if (key == "max_header_count") {
      limits.max_header_count = static_cast<size_t>(number(v, full, 1, 10000));
    } else if (key == "max_header_bytes") {
      limits.max_header_bytes = static_cast<size_t>(number(v, full, 1024, 1 << 24));
    } else {
      return false;
    }
    return true;
  });
}

bool loopbackListen(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  if (!fleet::splitHostPort(address, host, port)) return false;
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(host, ec);
  return !ec && ip.is_loopback();
}

}  // namespace

bool isSecurityKey(const std::string& key) {
  return key == "tls" || key == "admin_tls" || key == "auth" || key == "admin_auth" ||
         key == "upstream_tls" || key == "client_limits";
}

void parseSecurity(const YAML::Node& root, SecurityConfig& config) {
  if (const YAML::Node tls = root["tls"]) parseTls(tls, "tls", config.tls, false);
  if (const YAML::Node tls = root["admin_tls"]) {
    parseTls(tls, "admin_tls", config.admin_tls, true);
  }
  if (const YAML::Node auth = root["auth"]) {
    forEachKey(auth, "auth", [&](const std::string& key, const YAML::Node& v,
                                 const std::string& full) {
      if (key == "keys_file") {
        config.keys_file = nonEmpty(v, full);
      } else if (key == "forward_client_authorization") {
        config.forward_client_authorization = scalar<bool>(v, full);
      } else {
        return false;
      }
      return true;
    });
  }
  if (const YAML::Node admin = root["admin_auth"]) {
    forEachKey(admin, "admin_auth", [&](const std::string& key, const YAML::Node& v,
                                        const std::string& full) {
      if (key != "keys_file") return false;
      config.admin_keys_file = nonEmpty(v, full);
      return true;
    });
  }
  if (const YAML::Node upstream = root["upstream_tls"]) {
    forEachKey(upstream, "upstream_tls", [&](const std::string& key, const YAML::Node& v,
                                             const std::string& full) {
      if (key == "ca_file") {
        config.upstream_tls.ca_file = nonEmpty(v, full);
      } else if (key == "verify") {
        config.upstream_tls.verify = scalar<bool>(v, full);
      } else {
        return false;
      }
      return true;
    });
  }
  if (const YAML::Node limits = root["client_limits"]) {
    parseClientLimits(limits, config.client_limits);
  }
}

void applySecurityEnvironment(SecurityConfig& config) {
  if (const char* v = std::getenv("SWITCHYARD_KEYS_FILE"); v != nullptr && *v != '\0') {
    config.keys_file = v;
  }
  if (const char* v = std::getenv("SWITCHYARD_ADMIN_KEYS_FILE"); v != nullptr && *v != '\0') {
    config.admin_keys_file = v;
  }
}

void validateSecurity(const GatewayConfig& config) {
  const SecurityConfig& s = config.security;
  if (!loopbackListen(config.admin_listen) && s.admin_keys_file.empty() &&
      s.admin_tls.client_ca_file.empty()) {
    throw ConfigError("admin_listen: " + config.admin_listen +
                      " is reachable beyond this host; set admin_auth.keys_file (bearer "
                      "tokens) or admin_tls.client_ca_file (client certificates), or bind it "
                      "to loopback");
  }
}

void parseReplicaScheme(fleet::ReplicaSpec& replica, const std::string& where) {
  const size_t scheme_end = replica.address.find("://");
  if (scheme_end == std::string::npos) return;
  const std::string scheme = replica.address.substr(0, scheme_end);
  if (scheme == "https") {
    replica.tls = true;
  } else if (scheme != "http") {
    throw ConfigError(where + ": scheme " + scheme + ":// is not http:// or https://");
  }
  replica.address.erase(0, scheme_end + 3);
  if (!replica.address.empty() && replica.address.back() == '/') replica.address.pop_back();
}

void parseUpstreamKey(const YAML::Node& node, const std::string& where,
                      std::string& authorization) {
  const YAML::Node key = node["api_key"];
  const YAML::Node env = node["api_key_env"];
  if (key && env) throw ConfigError(where + ": api_key and api_key_env exclude each other");
  if (key) authorization = "Bearer " + nonEmpty(key, where + ".api_key");
  if (env) {
    const std::string name = nonEmpty(env, where + ".api_key_env");
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') {
      throw ConfigError(where + ".api_key_env: " + name + " is not set");
    }
    authorization = std::string("Bearer ") + value;
  }
  for (char c : authorization) {
    if (c == '\r' || c == '\n' || c == '\0') {
      throw ConfigError(where + ": the API key holds a line break or NUL");
    }
  }
}

}  // namespace switchyard::gateway
