// How discovery reaches and authenticates to the API server: from a kubeconfig file (outside
// the cluster) or from the Pod's service account (inside it).
//
// Kubeconfig: the current context (or a named one) selects a cluster (server URL, CA as data or
// file, insecure-skip-tls-verify, tls-server-name) and a user (bearer token, tokenFile, or a
// client certificate and key as data or files). exec and auth-provider plugins are not run:
// they are a defined error naming the user. Relative file paths are relative to the kubeconfig's
// directory, as kubectl reads them.
//
// In the cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT (or an explicit server URL),
// the token at .../serviceaccount/token (re-read whenever it changes: projected tokens rotate),
// the CA at .../serviceaccount/ca.crt and the namespace at .../serviceaccount/namespace.
//
// Every error is a CredentialsError with a message naming the field or file. Control thread
// only (start-up, and the token re-read before a request).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace switchyard::fleet::kubernetes {

enum class CredentialsError : uint8_t {
  kNone = 0,
  kUnreadable,       // a file cannot be read
  kMalformed,        // not YAML, or a member has the wrong shape
  kMissing,          // no current context, or a named context/cluster/user does not exist
  kBadServer,        // the server URL is not https://HOST[:PORT]
  kBadBase64,        // a *-data member is not base64
  kUnsupportedAuth,  // exec / auth-provider plugins, or basic auth
};

std::string_view credentialsErrorName(CredentialsError error);

struct Credentials {
  std::string host;  // API server host name or IP (IPv6 without brackets)
  uint16_t port = 443;
  std::string tls_server_name;  // name the certificate must carry; "" = host
  std::string ca_pem;           // trusted CA(s); "" = the system's trust store
  bool insecure_skip_verify = false;
  std::string token;       // bearer token (static)
  std::string token_file;  // bearer token file, re-read when it changes (wins over `token`)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string namespace_;  // the context's / service account's namespace ("" if unknown)
};

struct CredentialsResult {
  CredentialsError error = CredentialsError::kNone;
  std::string message;
  bool ok() const { return error == CredentialsError::kNone; }
};

// Parses kubeconfig text. `base_dir` resolves relative file names; `context` empty means the
// current-context. Referenced files (CA, token, client certificate) are read now.
CredentialsResult parseKubeconfig(std::string_view text, const std::string& base_dir,
                                  const std::string& context, Credentials& out);
CredentialsResult loadKubeconfig(const std::string& path, const std::string& context,
                                 Credentials& out);

struct InClusterPaths {
  std::string server;  // https://HOST:PORT; "" = from KUBERNETES_SERVICE_HOST/_PORT
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};
CredentialsResult inClusterCredentials(const InClusterPaths& paths, Credentials& out);

// "https://host[:port][/]" -> host, port (443 by default). IPv6 in brackets.
CredentialsResult parseServerUrl(std::string_view url, std::string& host, uint16_t& port);

// Strict base64 (whitespace ignored); false on any other character or bad padding.
bool decodeBase64(std::string_view text, std::string& out);

}  // namespace switchyard::fleet::kubernetes
