#include "gateway/config.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace switchyard::gateway {
namespace {

TEST(ConfigTest, ParsesTheDocumentedShape) {
  const GatewayConfig config = parseConfig(R"(
listen: 127.0.0.1:8888
admin_listen: 127.0.0.1:8889
workers: 2
routing:
  default_strategy: round-robin
telemetry:
  scrape_interval_ms: 250
limits:
  max_body_bytes: 1024
timeouts:
  upstream_connect_ms: 500
models:
  - name: llama2-7b
    routing_strategy: random
    replicas:
      - address: 127.0.0.1:9001
        labels: { gpu: A100, engine: vllm }
      - 127.0.0.1:9002
)");
  EXPECT_EQ(config.workers, 2);
  EXPECT_EQ(config.default_strategy, "round-robin");
  EXPECT_EQ(config.scrape_interval, 250 * kNsPerMs);
  EXPECT_EQ(config.signalMaxAge(), 750 * kNsPerMs);
  EXPECT_EQ(config.max_body_bytes, 1024u);
  EXPECT_EQ(config.timeouts.upstream_connect, 500 * kNsPerMs);
  ASSERT_EQ(config.models.size(), 1u);
  EXPECT_EQ(config.models[0].routing_strategy, "random");
  ASSERT_EQ(config.models[0].replicas.size(), 2u);
  EXPECT_EQ(config.models[0].replicas[0].labels.at("gpu"), "A100");
  EXPECT_EQ(config.models[0].replicas[1].address, "127.0.0.1:9002");
}

TEST(ConfigTest, DefaultsAreSensible) {
  const GatewayConfig config = parseConfig("models: []\n");
  EXPECT_EQ(config.default_strategy, "least-request");
  EXPECT_EQ(config.scrape_interval, 100 * kNsPerMs);
  EXPECT_EQ(config.max_body_bytes, 8u << 20);
}

void expectRejected(const std::string& yaml, const std::string& fragment) {
  try {
    parseConfig(yaml);
    ADD_FAILURE() << "accepted: " << yaml;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ConfigTest, RejectsWhatCannotWork) {
  expectRejected("", "empty");
  expectRejected("listen: [1, 2", "invalid YAML");
  expectRejected("bogus: 1\n", "bogus: unknown key");
  expectRejected("routing: { default_strategy: fastest }\n", "unknown routing strategy");
  expectRejected("models: [{ name: m, routing_strategy: nope }]\n", "routing_strategy");
  expectRejected("models: [{ name: m, replicas: [no-port] }]\n", "not host:port");
  expectRejected("models: [{ replicas: [] }]\n", "name: required");
  expectRejected("models: [{ name: m }, { name: m }]\n", "duplicate model");
  expectRejected("models: [{ name: m, replicas: [h:1, h:1] }]\n", "duplicate address");
  expectRejected("telemetry: { scrape_interval_ms: -5 }\n", "positive");
  expectRejected("timeouts: { forever_ms: 5 }\n", "unknown key");
  expectRejected("listen: nowhere\n", "listen");
  expectRejected("workers: many\n", "wrong type");
}

TEST(ConfigTest, EnvironmentOverridesTheFile) {
  GatewayConfig config = parseConfig("routing: { default_strategy: random }\n");
  ::setenv("SWITCHYARD_DEFAULT_STRATEGY", "round-robin", 1);
  ::setenv("SWITCHYARD_LISTEN", "127.0.0.1:7000", 1);
  applyEnvironment(config);
  ::unsetenv("SWITCHYARD_DEFAULT_STRATEGY");
  ::unsetenv("SWITCHYARD_LISTEN");
  EXPECT_EQ(config.default_strategy, "round-robin");
  EXPECT_EQ(config.listen, "127.0.0.1:7000");
}

}  // namespace
}  // namespace switchyard::gateway
