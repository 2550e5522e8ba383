#include "fleet/discovery/kubernetes/credentials.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace switchyard::fleet::kubernetes {
namespace {

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/switchyard-kube-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Base64, DecodesStrictly) {
  std::string out;
  EXPECT_TRUE(decodeBase64("aGVsbG8=", out));
  EXPECT_EQ(out, "hello");
  EXPECT_TRUE(decodeBase64("aGVs\nbG8h", out));
  EXPECT_EQ(out, "hello!");
  EXPECT_TRUE(decodeBase64("aGk=", out));
  EXPECT_EQ(out, "hi");
  EXPECT_TRUE(decodeBase64("", out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(decodeBase64("aGVsbG8*", out));
  EXPECT_FALSE(decodeBase64("a", out));
  EXPECT_FALSE(decodeBase64("aGk=aGk=", out));  // data after padding
  EXPECT_FALSE(decodeBase64("a===", out));
}

TEST(ServerUrl, ParsesHostAndPort) {
  std::string host;
  uint16_t port = 0;
  EXPECT_TRUE(parseServerUrl("https://10.0.0.1:6443", host, port).ok());
  EXPECT_EQ(host, "10.0.0.1");
  EXPECT_EQ(port, 6443);
  EXPECT_TRUE(parseServerUrl("https://kubernetes.default.svc/", host, port).ok());
  EXPECT_EQ(host, "kubernetes.default.svc");
  EXPECT_EQ(port, 443);
  EXPECT_TRUE(parseServerUrl("https://[fd00::1]:443", host, port).ok());
  EXPECT_EQ(host, "fd00::1");
  for (const char* bad : {"http://x:1", "https://", "https://x:0", "https://x:99999",
                          "https://x:abc", "https://x/prefix", "https://[::1", "x:443"}) {
    const CredentialsResult r = parseServerUrl(bad, host, port);
    EXPECT_EQ(r.error, CredentialsError::kBadServer) << bad;
  }
}

TEST(Kubeconfig, TokenAndCaData) {
  const std::string text = R"(
apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EtUEVN
    tls-server-name: kubernetes
contexts:
- name: prod
  context: {cluster: c1, user: u1, namespace: llm}
users:
- name: u1
  user:
    token: secret-token
)";
  Credentials c;
  const CredentialsResult r = parseKubeconfig(text, "/tmp", "", c);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 6443);
  EXPECT_EQ(c.ca_pem, "CA-PEM");
  EXPECT_EQ(c.tls_server_name, "kubernetes");
  EXPECT_EQ(c.token, "secret-token");
  EXPECT_EQ(c.namespace_, "llm");
  EXPECT_FALSE(c.insecure_skip_verify);
}

TEST(Kubeconfig, FilesAreRelativeToTheKubeconfig) {
  TempDir dir;
  dir.write("ca.crt", "CA FROM FILE");
  dir.write("client.crt", "CERT");
  dir.write("client.key", "KEY");
  const std::string path = dir.write("config", R"(
current-context: a
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority: ca.crt,
            insecure-skip-tls-verify: true}}]
contexts: [{name: a, context: {cluster: k, user: u}}, {name: b, context: {cluster: k, user: v}}]
users:
- {name: u, user: {client-certificate: client.crt, client-key: client.key}}
- {name: v, user: {tokenFile: token}}
)");
  Credentials c;
  ASSERT_TRUE(loadKubeconfig(path, "", c).ok());
  EXPECT_EQ(c.ca_pem, "CA FROM FILE");
  EXPECT_EQ(c.client_cert_pem, "CERT");
  EXPECT_EQ(c.client_key_pem, "KEY");
  EXPECT_TRUE(c.insecure_skip_verify);
  ASSERT_TRUE(loadKubeconfig(path, "b", c).ok());
  EXPECT_EQ(c.token_file, dir.path() + "/token");
}

TEST(Kubeconfig, ErrorsAreDefined) {
  struct Case {
    std::string text;
    CredentialsError error;
    std::string mentions;
  };
  const std::string cluster = "clusters: [{name: k, cluster: {server: 'https://h:1'}}]\n";
  const Case cases[] = {
      {"[unclosed", CredentialsError::kMalformed, "YAML"},
      {"- a\n- b\n", CredentialsError::kMalformed, "mapping"},
      {cluster, CredentialsError::kMissing, "current-context"},
      {"current-context: x\n" + cluster, CredentialsError::kMissing, "contexts"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: nope}}]\n" + cluster,
       CredentialsError::kMissing, "nope"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n" + cluster,
       CredentialsError::kMissing, "users"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {server: 'http://h:1'}}]\n",
       CredentialsError::kBadServer, "https"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {certificate-authority-data: '***'}}]\n",
       CredentialsError::kMissing, "server"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {server: 'https://h', certificate-authority-data: '*'}}]\n",
       CredentialsError::kBadBase64, "certificate-authority-data"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n" + cluster +
           "users: [{name: u, user: {exec: {command: aws}}}]\n",
       CredentialsError::kUnsupportedAuth, "exec"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n" + cluster +
           "users: [{name: u, user: {client-certificate-data: QQ==}}]\n",
       CredentialsError::kMissing, "key"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {server: 'https://h', certificate-authority: /nonexistent}}]\n",
       CredentialsError::kUnreadable, "/nonexistent"},
      {"current-context: x\ncontexts: [{name: x, context: 5}]\n" + cluster,
       CredentialsError::kMalformed, "context"},
      {"current-context: [1]\n", CredentialsError::kMalformed, "current-context"},
      {"current-context: x\ncontexts: {x: 1}\n", CredentialsError::kMalformed, "contexts"},
  };
  for (const Case& c : cases) {
    Credentials out;
    const CredentialsResult r = parseKubeconfig(c.text, "/tmp", "", out);
    EXPECT_EQ(r.error, c.error) << c.text << " -> " << r.message;
    EXPECT_NE(r.message.find(c.mentions), std::string::npos) << r.message;
    EXPECT_FALSE(credentialsErrorName(r.error).empty());
  }
  Credentials out;
  EXPECT_EQ(loadKubeconfig("/nonexistent/kubeconfig", "", out).error,
            CredentialsError::kUnreadable);
}

TEST(InCluster, ReadsTheServiceAccount) {
  TempDir dir;
  InClusterPaths paths;
  paths.server = "https://10.96.0.1:443";
  paths.token_file = dir.write("token", "sa-token\n");
  paths.ca_file = dir.write("ca.crt", "CA");
  paths.namespace_file = dir.write("namespace", "llm\n");
  Credentials c;
  ASSERT_TRUE(inClusterCredentials(paths, c).ok());
  EXPECT_EQ(c.host, "10.96.0.1");
  EXPECT_EQ(c.token_file, paths.token_file);
  EXPECT_EQ(c.ca_pem, "CA");
  EXPECT_EQ(c.namespace_, "llm");

  paths.token_file = dir.path() + "/missing";
  EXPECT_EQ(inClusterCredentials(paths, c).error, CredentialsError::kUnreadable);

  InClusterPaths from_env;
  from_env.token_file = dir.write("t2", "x");
  from_env.ca_file = "";
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(inClusterCredentials(from_env, c).error, CredentialsError::kMissing);
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::10", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  ASSERT_TRUE(inClusterCredentials(from_env, c).ok());
  EXPECT_EQ(c.host, "fd00::10");
  EXPECT_EQ(c.port, 6443);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
}

}  // namespace
}  // namespace switchyard::fleet::kubernetes
