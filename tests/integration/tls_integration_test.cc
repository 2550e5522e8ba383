// TLS end to end: the client listener's handshakes (a good one with ALPN http/1.1, an expired
// certificate, the wrong host, plain HTTP to the TLS port, protocols below TLS 1.2), the
// certificate reloaded on SIGHUP and on a file change without dropping an open connection, the
// admin listener with client certificates, and https:// replicas verified against a CA (with the
// logged opt-out).
#include <openssl/ssl.h>
#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>

#include "gateway_harness.h"
#include "support/test_certs.h"
#include "tls_client.h"

namespace switchyard::testing {
namespace {

const std::string kChat =
    R"({"model":"llama2-7b","messages":[{"role":"user","content":"hi"}],"max_tokens":4})";

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override { engine_ = startEngine("A100"); }
  std::string config(const std::string& top) {
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
           "reload_poll_interval_ms: 100\n" +
           top + "models:\n  - name: llama2-7b\n    replicas:\n" +
           replicaLine(engine_->port(), "A100");
  }
  void startGateway(const std::string& top) {
    file_ = std::make_unique<TempFile>(config(top), ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", file_->path()});
    ASSERT_NE(gateway_->port(1), 0);
  }
  std::string tlsSection() const {
    return "tls: { cert_file: " + certs_.path("server.pem") +
           ", key_file: " + certs_.path("server.key") + " }\n";
  }
  TlsOptions verified() const {
    TlsOptions o;
    o.ca_file = certs_.path("ca.pem");
    return o;
  }
  uint16_t port() const { return gateway_->port(0); }
  uint16_t admin() const { return gateway_->port(1); }
  std::string logs() {
    std::string all;
    for (const std::string& line : gateway_->child().stdoutLines()) all += line + "\n";
    return all;
  }

  TestCertificates certs_;
  std::unique_ptr<Process> engine_;
  std::unique_ptr<TempFile> file_;
  std::unique_ptr<Process> gateway_;
};

TEST_F(TlsTest, AGoodHandshakeSpeaksHttp11OverTls12OrLater) {
  startGateway(tlsSection());
  TlsClient client(port(), verified());
  ASSERT_TRUE(client.handshake()) << client.error();
  EXPECT_EQ(client.alpn(), "http/1.1");
  EXPECT_TRUE(client.version() == "TLSv1.3" || client.version() == "TLSv1.2") << client.version();
  const HttpResult r = client.request("POST", "/v1/chat/completions", kChat, kJson);
  EXPECT_EQ(r.status, 200) << r.error << r.body;
  EXPECT_NE(r.body.find("chat.completion"), std::string::npos);
  // Keep-alive: a streamed answer on the same connection.
  const HttpResult streamed = client.request(
      "POST", "/v1/chat/completions",
      R"({"model":"llama2-7b","messages":[{"role":"user","content":"hi"}],"max_tokens":8,)"
      R"("stream":true})",
      kJson);
  EXPECT_EQ(streamed.status, 200) << streamed.error;
  EXPECT_NE(streamed.body.find("data: [DONE]"), std::string::npos);
  // TLS 1.2 alone is accepted; a client offering both protocols gets http/1.1.
  TlsOptions tls12 = verified();
  tls12.max_version = TLS1_2_VERSION;
  tls12.alpn = {"h2", "http/1.1"};
  TlsClient old_client(port(), tls12);
  ASSERT_TRUE(old_client.handshake()) << old_client.error();
  EXPECT_EQ(old_client.version(), "TLSv1.2");
  EXPECT_EQ(old_client.alpn(), "http/1.1");
}

TEST_F(TlsTest, HandshakesTheGatewayMustRefuseOrTheClientMustDistrust) {
  // The client listener with an expired certificate: a verifying client refuses it.
  {
    startGateway("tls: { cert_file: " + certs_.path("expired.pem") +
                 ", key_file: " + certs_.path("expired.key") + " }\n");
    TlsClient client(port(), verified());
    EXPECT_FALSE(client.handshake());
    EXPECT_NE(client.error().find("expired"), std::string::npos) << client.error();
    gateway_.reset();
  }
  startGateway(tlsSection());
  {
    TlsOptions wrong_host = verified();
    wrong_host.verify_host = "api.example.com";
    TlsClient client(port(), wrong_host);
    EXPECT_FALSE(client.handshake());
    EXPECT_NE(client.error().find("mismatch"), std::string::npos) << client.error();
  }
  {
    TlsOptions other_ca = verified();
    other_ca.ca_file = certs_.path("other-ca.pem");
    TlsClient client(port(), other_ca);
    EXPECT_FALSE(client.handshake());
  }
  {
    TlsOptions tls11 = verified();
    tls11.min_version = TLS1_VERSION;
    tls11.max_version = TLS1_1_VERSION;
    TlsClient client(port(), tls11);
    EXPECT_FALSE(client.handshake()) << client.version();
  }
  {
    TlsOptions h2_only = verified();
    h2_only.alpn = {"h2"};
    TlsClient client(port(), h2_only);
    EXPECT_FALSE(client.handshake());
    EXPECT_NE(client.error().find("no application protocol"), std::string::npos)
        << client.error();
  }
  // Plain HTTP to the TLS port: a plain 400 that says so.
  const HttpResult plain = httpRequest(port(), "GET", "/v1/models");
  EXPECT_EQ(plain.status, 400) << plain.error;
  EXPECT_NE(plain.body.find("tls_required"), std::string::npos);
  const HttpResult metrics = httpRequest(admin(), "GET", "/metrics");
  EXPECT_GE(metricSample(metrics.body,
                         "switchyard_tls_handshake_failures_total{listener=\"client\"}"),
            4);
  // The gateway still serves.
  TlsClient good(port(), verified());
  EXPECT_EQ(good.request("GET", "/v1/models").status, 200) << good.error();
}

TEST_F(TlsTest, ACertificateReloadKeepsOpenConnections) {
  const std::string cert = certs_.path("live.pem");
  const std::string key = certs_.path("live.key");
  certs_.issueServer("first", cert, key);
  startGateway("tls: { cert_file: " + cert + ", key_file: " + key + " }\n");
  TlsClient open(port(), verified());
  ASSERT_EQ(open.request("GET", "/v1/models").status, 200) << open.error();
  EXPECT_EQ(open.peerCommonName(), "first");

  // Replaced on disk: picked up by the file watch.
  certs_.issueServer("second", cert, key);
  EXPECT_TRUE(waitUntil(
      [&] {
        TlsClient probe(port(), verified());
        return probe.handshake() && probe.peerCommonName() == "second";
      },
      10s));
  // Replaced again, then SIGHUP.
  certs_.issueServer("third", cert, key);
  gateway_->child().sendSignal(SIGHUP);
  EXPECT_TRUE(waitUntil(
      [&] {
        TlsClient probe(port(), verified());
        return probe.handshake() && probe.peerCommonName() == "third";
      },
      10s));
  // The connection made before both reloads still works.
  const HttpResult again = open.request("POST", "/v1/chat/completions", kChat, kJson);
  EXPECT_EQ(again.status, 200) << again.error;
  // A broken file is refused; the certificate in force stays.
  { std::ofstream(cert) << "not a certificate\n"; }
  EXPECT_TRUE(waitUntil(
      [&] {
        return metricSample(httpRequest(admin(), "GET", "/metrics").body,
                            "switchyard_tls_reloads_total{listener=\"client\",result=\"error\"}") >=
               1;
      },
      10s));
  TlsClient after(port(), verified());
  ASSERT_TRUE(after.handshake()) << after.error();
  EXPECT_EQ(after.peerCommonName(), "third");
}

TEST_F(TlsTest, TheAdminListenerCanRequireClientCertificates) {
  startGateway(tlsSection() + "admin_tls: { cert_file: " + certs_.path("server.pem") +
               ", key_file: " + certs_.path("server.key") +
               ", client_ca_file: " + certs_.path("ca.pem") + " }\n");
  TlsClient anonymous(admin(), verified());
  const HttpResult refused = anonymous.request("GET", "/metrics");
  EXPECT_EQ(refused.status, 0);  // no certificate: no handshake
  TlsOptions with_cert = verified();
  with_cert.cert_file = certs_.path("client.pem");
  with_cert.key_file = certs_.path("client.key");
  TlsClient alice(admin(), with_cert);
  const HttpResult metrics = alice.request("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200) << metrics.error;
  EXPECT_NE(alice.request("DELETE", "/debug/fleet").status, 0);  // answered, and logged below
  EXPECT_TRUE(waitUntil(
      [&] {
        return logs().find("admin: DELETE /debug/fleet by cert:alice from 127.0.0.1") !=
               std::string::npos;
      },
      5s))
      << logs();
  // Plain HTTP to the admin TLS port gets nothing.
  EXPECT_NE(httpRequest(admin(), "GET", "/healthz").status, 200);
}

TEST_F(TlsTest, HttpsReplicasAreVerifiedAgainstTheConfiguredCa) {
  // A TLS-terminating gateway in front of the engine is the https:// replica.
  startGateway(tlsSection());
  const std::string replica = "https://127.0.0.1:" + std::to_string(port());
  const auto front = [&](const std::string& upstream_tls) {
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n" + upstream_tls +
           "retry: { max_attempts: 1 }\nmodels:\n  - name: llama2-7b\n    replicas:\n"
           "      - address: " + replica + "\n";
  };
  {
    TempFile file(front("upstream_tls: { ca_file: " + certs_.path("ca.pem") + " }\n"), ".yaml");
    Process gateway({"gateway", "--config", file.path()});
    const HttpResult r =
        httpRequest(gateway.port(0), "POST", "/v1/chat/completions", kChat, kJson);
    EXPECT_EQ(r.status, 200) << r.body;  // through the verified https:// replica
  }
  {
    // Another CA: the replica cannot be trusted, so it is unreachable.
    TempFile file(front("upstream_tls: { ca_file: " + certs_.path("other-ca.pem") + " }\n"),
                  ".yaml");
    Process gateway({"gateway", "--config", file.path()});
    EXPECT_EQ(httpRequest(gateway.port(0), "POST", "/v1/chat/completions", kChat, kJson).status,
              502);
  }
  {
    // The explicit opt-out, logged.
    TempFile file(front("upstream_tls: { ca_file: " + certs_.path("other-ca.pem") +
                        ", verify: false }\n"),
                  ".yaml");
    Process gateway({"gateway", "--config", file.path()});
    EXPECT_EQ(httpRequest(gateway.port(0), "POST", "/v1/chat/completions", kChat, kJson).status,
              200);
    std::string lines;
    for (const auto& line : gateway.child().stdoutLines()) lines += line + "\n";
    EXPECT_NE(lines.find("NOT checked"), std::string::npos) << lines;
  }
}

}  // namespace
}  // namespace switchyard::testing
