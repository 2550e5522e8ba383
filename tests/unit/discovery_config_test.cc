#include <gtest/gtest.h>

#include "gateway/config.h"

namespace switchyard::gateway {
namespace {

TEST(DiscoveryConfig, TheDocumentedShape) {
  const GatewayConfig config = parseConfig(R"(
discovery:
  kubernetes:
    namespaces: [llm, batch]
    label_selector: "model.aibrix.ai/name"
    kubeconfig: /etc/switchyard/kubeconfig
    stale_after_ms: 5000
    default_port: 8080
    gpu_labels: [accelerator]
    node_gpu_label: nvidia.com/gpu.product
    scale_down:
      max_patches_per_minute: 6
      hold_ms: 60000
      optimizer_url: http://optimizer.llm:8080
models: []
)");
  const auto& k = config.kubernetes;
  EXPECT_TRUE(k.enabled);
  EXPECT_EQ(k.namespaces, (std::vector<std::string>{"llm", "batch"}));
  EXPECT_EQ(k.label_selector, "model.aibrix.ai/name");
  EXPECT_EQ(k.kubeconfig, "/etc/switchyard/kubeconfig");
  EXPECT_EQ(k.stale_after, 5 * kNsPerSec);
  EXPECT_EQ(k.mapping.default_port, 8080);
  EXPECT_EQ(k.mapping.gpu_labels, std::vector<std::string>{"accelerator"});
  EXPECT_EQ(k.mapping.node_gpu_label, "nvidia.com/gpu.product");
  EXPECT_EQ(k.scale_down.max_patches_per_minute, 6);
  EXPECT_EQ(k.scale_down.hold, 60 * kNsPerSec);
  EXPECT_EQ(k.scale_down.optimizer_url, "http://optimizer.llm:8080");
}

TEST(DiscoveryConfig, DefaultsAndAbsence) {
  EXPECT_FALSE(parseConfig("models: []\n").kubernetes.enabled);
  const GatewayConfig config = parseConfig("discovery:\n  kubernetes:\n");
  EXPECT_TRUE(config.kubernetes.enabled);
  EXPECT_TRUE(config.kubernetes.namespaces.empty());
  EXPECT_EQ(config.kubernetes.label_selector, "model.aibrix.ai/name");
  EXPECT_TRUE(config.kubernetes.kubeconfig.empty());
  EXPECT_EQ(config.kubernetes.mapping.model_label, "model.aibrix.ai/name");
  EXPECT_EQ(config.kubernetes.mapping.drain_label, "aibrix.ai/draining");
  EXPECT_TRUE(config.kubernetes.scale_down.enabled);
}

void expectRejected(const std::string& yaml, const std::string& fragment) {
  try {
    parseConfig(yaml);
    ADD_FAILURE() << "accepted: " << yaml;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DiscoveryConfig, RejectsWhatCannotWork) {
  expectRejected("discovery: 5\n", "discovery: must be a mapping");
  expectRejected("discovery: {consul: {}}\n", "discovery.consul: unknown key");
  expectRejected("discovery: {kubernetes: {namespace: x}}\n",
                 "discovery.kubernetes.namespace: unknown key");
  expectRejected("discovery: {kubernetes: {namespaces: llm}}\n", "must be a list");
  expectRejected("discovery: {kubernetes: {namespaces: ['']}}\n", "namespaces[0]: empty");
  expectRejected("discovery: {kubernetes: {kubeconfig: ''}}\n", "must not be empty");
  expectRejected("discovery: {kubernetes: {api_server: 'http://x:1'}}\n", "https");
  expectRejected("discovery: {kubernetes: {kubeconfig: k, api_server: 'https://x:1'}}\n",
                 "exclude each other");
  expectRejected("discovery: {kubernetes: {default_port: 70000}}\n", "default_port");
  expectRejected("discovery: {kubernetes: {watch_timeout_ms: 10}}\n", "watch_timeout_ms");
  expectRejected("discovery: {kubernetes: {backoff_min_ms: 5000, backoff_max_ms: 100}}\n",
                 "backoff_max_ms");
  expectRejected("discovery: {kubernetes: {scale_down: {victim_cost: 5}}}\n", "victim_cost");
  expectRejected("discovery: {kubernetes: {scale_down: {optimizer_url: 'optimizer:8080'}}}\n",
                 "http://HOST:PORT");
  expectRejected("discovery: {kubernetes: {scale_down: {lease_ms: 100, interval_ms: 1000}}}\n",
                 "lease_ms");
  expectRejected("discovery: {kubernetes: {scale_down: {bogus: 1}}}\n",
                 "scale_down.bogus: unknown key");
}

}  // namespace
}  // namespace switchyard::gateway
