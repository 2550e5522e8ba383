#include "fleet/discovery/kubernetes/credentials.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>
#include <optional>

#include "core/text_file.h"

namespace switchyard::fleet::kubernetes {
namespace {

CredentialsResult fail(CredentialsError error, std::string message) {
  return {error, std::move(message)};
}

bool readFile(const std::string& path, std::string& out) {
  std::optional<std::string> text = readTextFile(path, nullptr);
  if (!text) return false;
  out = std::move(*text);
  return true;
}

std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// The optional string member `key` of a map node; false (with `result` set) on a wrong type.
bool member(const YAML::Node& node, const char* key, const std::string& where, std::string& out,
            CredentialsResult& result) {
  out.clear();
  const YAML::Node value = node[key];
  if (!value || value.IsNull()) return true;
  if (!value.IsScalar()) {
    result = fail(CredentialsError::kMalformed, where + "." + key + ": not a string");
    return false;
  }
  out = value.Scalar();
  return true;
}

// The entry of `list` (clusters, users, contexts) named `name`, and its inner map `inner`.
bool findNamed(const YAML::Node& root, const char* list, const char* inner,
               const std::string& name, YAML::Node& out, CredentialsResult& result) {
  const YAML::Node entries = root[list];
  if (entries && !entries.IsNull() && !entries.IsSequence()) {
    result = fail(CredentialsError::kMalformed, std::string(list) + ": not a list");
    return false;
  }
  for (size_t i = 0; entries && i < entries.size(); ++i) {
    const YAML::Node entry = entries[i];
    if (!entry.IsMap()) continue;
    const YAML::Node entry_name = entry["name"];
    if (!entry_name || !entry_name.IsScalar() || entry_name.Scalar() != name) continue;
    const YAML::Node body = entry[inner];
    if (!body || !body.IsMap()) {
      result = fail(CredentialsError::kMalformed,
                    std::string(list) + "[" + name + "]." + inner + ": not a mapping");
      return false;
    }
    out = body;
    return true;
  }
  result = fail(CredentialsError::kMissing, std::string(list) + ": no entry named '" + name + "'");
  return false;
}

// `<key>-data` (base64) or `<key>` (a file), into `out`.
bool dataOrFile(const YAML::Node& node, const std::string& key, const std::string& where,
                const std::string& base_dir, std::string& out, CredentialsResult& result) {
  std::string data, file;
  if (!member(node, (key + "-data").c_str(), where, data, result)) return false;
  if (!member(node, key.c_str(), where, file, result)) return false;
  if (!data.empty()) {
    if (!decodeBase64(data, out)) {
      result = fail(CredentialsError::kBadBase64, where + "." + key + "-data: not base64");
      return false;
    }
    return true;
  }
  if (!file.empty()) {
    const std::string path = resolve(base_dir, file);
    if (!readFile(path, out)) {
      result = fail(CredentialsError::kUnreadable, where + "." + key + ": cannot read " + path);
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view credentialsErrorName(CredentialsError error) {
  switch (error) {
    case CredentialsError::kNone:
      return "none";
    case CredentialsError::kUnreadable:
      return "unreadable";
    case CredentialsError::kMalformed:
      return "malformed";
    case CredentialsError::kMissing:
      return "missing";
    case CredentialsError::kBadServer:
      return "bad_server";
    case CredentialsError::kBadBase64:
      return "bad_base64";
    case CredentialsError::kUnsupportedAuth:
      return "unsupported_auth";
  }
  return "unknown";
}

bool decodeBase64(std::string_view text, std::string& out) {
  out.clear();
  uint32_t bits = 0;
  int count = 0;
  size_t padding = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    int value = -1;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    else if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    else if (c >= '0' && c <= '9') value = c - '0' + 52;
    else if (c == '+') value = 62;
    else if (c == '/') value = 63;
    else if (c == '=') {
      ++padding;
      continue;
    }
    if (value < 0 || padding > 0) return false;  // a character after padding, or a bad one
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xFF));
      out.push_back(static_cast<char>((bits >> 8) & 0xFF));
      out.push_back(static_cast<char>(bits & 0xFF));
      bits = 0;
      count = 0;
    }
  }
  if (count == 1 || padding > 2) return false;
  if (padding > 0 && (count + padding) % 4 != 0) return false;
  if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xFF));
  if (count == 3) {
    out.push_back(static_cast<char>((bits >> 10) & 0xFF));
    out.push_back(static_cast<char>((bits >> 2) & 0xFF));
  }
  return true;
}

CredentialsResult parseServerUrl(std::string_view url, std::string& host, uint16_t& port) {
  std::string_view rest = url;
  if (!rest.starts_with("https://")) {
    return fail(CredentialsError::kBadServer,
                "server: '" + std::string(url) + "' must start with https://");
  }
  rest.remove_prefix(8);
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") {
      return fail(CredentialsError::kBadServer,
                  "server: '" + std::string(url) + "': a path prefix is not supported");
    }
    rest = rest.substr(0, slash);
  }
  std::string_view host_part = rest;
  std::string_view port_part;
  if (rest.starts_with('[')) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return fail(CredentialsError::kBadServer, "server: '" + std::string(url) + "': bad IPv6");
    }
    host_part = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') {
        return fail(CredentialsError::kBadServer, "server: '" + std::string(url) + "': bad port");
      }
      port_part = rest.substr(close + 2);
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host_part = rest.substr(0, colon);
    port_part = rest.substr(colon + 1);
  }
  if (host_part.empty()) {
    return fail(CredentialsError::kBadServer, "server: '" + std::string(url) + "': no host");
  }
  port = 443;
  if (!port_part.empty() || rest.ends_with(':')) {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(port_part.data(), port_part.data() + port_part.size(), value);
    if (ec != std::errc() || end != port_part.data() + port_part.size() || value == 0 ||
        value > 65535) {
      return fail(CredentialsError::kBadServer, "server: '" + std::string(url) + "': bad port");
    }
    port = static_cast<uint16_t>(value);
  }
  host.assign(host_part);
  return {};
}

namespace {

CredentialsResult parseKubeconfigNode(std::string_view text, const std::string& base_dir,
                                      const std::string& context_name, Credentials& out) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return fail(CredentialsError::kMalformed, std::string("kubeconfig: invalid YAML: ") + e.what());
  }
  if (!root.IsMap()) return fail(CredentialsError::kMalformed, "kubeconfig: not a mapping");
  CredentialsResult result;
  std::string context = context_name;
  if (context.empty() && !member(root, "current-context", "kubeconfig", context, result)) {
    return result;
  }
  if (context.empty()) {
    return fail(CredentialsError::kMissing, "kubeconfig: no current-context and none given");
  }
  YAML::Node ctx, cluster, user;
  if (!findNamed(root, "contexts", "context", context, ctx, result)) return result;
  std::string cluster_name, user_name;
  const std::string cwhere = "contexts[" + context + "].context";
  if (!member(ctx, "cluster", cwhere, cluster_name, result) ||
      !member(ctx, "user", cwhere, user_name, result) ||
      !member(ctx, "namespace", cwhere, out.namespace_, result)) {
    return result;
  }
  if (!findNamed(root, "clusters", "cluster", cluster_name, cluster, result)) return result;
  const std::string kwhere = "clusters[" + cluster_name + "].cluster";
  std::string server;
  if (!member(cluster, "server", kwhere, server, result)) return result;
  if (server.empty()) return fail(CredentialsError::kMissing, kwhere + ".server: required");
  if (CredentialsResult r = parseServerUrl(server, out.host, out.port); !r.ok()) {
    r.message = kwhere + "." + r.message;
    return r;
  }
  if (!dataOrFile(cluster, "certificate-authority", kwhere, base_dir, out.ca_pem, result) ||
      !member(cluster, "tls-server-name", kwhere, out.tls_server_name, result)) {
    return result;
  }
  std::string insecure;
  if (!member(cluster, "insecure-skip-tls-verify", kwhere, insecure, result)) return result;
  out.insecure_skip_verify = insecure == "true";
  if (!user_name.empty()) {
    if (!findNamed(root, "users", "user", user_name, user, result)) return result;
    const std::string uwhere = "users[" + user_name + "].user";
    for (const char* plugin : {"exec", "auth-provider", "username", "password"}) {
      if (user[plugin]) {
        return fail(CredentialsError::kUnsupportedAuth,
                    uwhere + "." + plugin +
                        ": not supported (use a token, tokenFile or a client certificate)");
      }
    }
    std::string token_file;
    if (!member(user, "token", uwhere, out.token, result) ||
        !member(user, "tokenFile", uwhere, token_file, result) ||
        !dataOrFile(user, "client-certificate", uwhere, base_dir, out.client_cert_pem, result) ||
        !dataOrFile(user, "client-key", uwhere, base_dir, out.client_key_pem, result)) {
      return result;
    }
    out.token_file = resolve(base_dir, token_file);
    if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
      return fail(CredentialsError::kMissing,
                  uwhere + ": a client certificate needs its key and the key its certificate");
    }
  }
  return {};
}

}  // namespace

CredentialsResult parseKubeconfig(std::string_view text, const std::string& base_dir,
                                  const std::string& context, Credentials& out) {
  out = Credentials{};
  try {
    return parseKubeconfigNode(text, base_dir, context, out);
  } catch (const YAML::Exception& e) {
    // A member of the wrong shape (a scalar indexed as a mapping, say).
    return fail(CredentialsError::kMalformed, std::string("kubeconfig: ") + e.what());
  }
}

CredentialsResult loadKubeconfig(const std::string& path, const std::string& context,
                                 Credentials& out) {
  std::string text;
  if (!readFile(path, text)) {
    return fail(CredentialsError::kUnreadable, "kubeconfig: cannot read " + path);
  }
  const size_t slash = path.rfind('/');
  const std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return parseKubeconfig(text, base_dir.empty() ? "/" : base_dir, context, out);
}

CredentialsResult inClusterCredentials(const InClusterPaths& paths, Credentials& out) {
  out = Credentials{};
  std::string server = paths.server;
  if (server.empty()) {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host == nullptr || *host == '\0') {
      return fail(CredentialsError::kMissing,
                  "in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a Pod?); "
                  "set discovery.kubernetes.kubeconfig or api_server");
    }
    const std::string h = host;
    server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" +
             (port != nullptr && *port != '\0' ? port : "443");
  }
  if (CredentialsResult r = parseServerUrl(server, out.host, out.port); !r.ok()) return r;
  out.token_file = paths.token_file;
  std::string token;
  if (!readFile(paths.token_file, token)) {
    return fail(CredentialsError::kUnreadable, "in-cluster: cannot read " + paths.token_file);
  }
  if (!paths.ca_file.empty() && !readFile(paths.ca_file, out.ca_pem)) {
    return fail(CredentialsError::kUnreadable, "in-cluster: cannot read " + paths.ca_file);
  }
  if (!paths.namespace_file.empty() && readFile(paths.namespace_file, out.namespace_)) {
    while (!out.namespace_.empty() &&
           (out.namespace_.back() == '\n' || out.namespace_.back() == ' ')) {
      out.namespace_.pop_back();
    }
  }
  return {};
}

}  // namespace switchyard::fleet::kubernetes
