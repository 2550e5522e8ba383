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
  EXPECT_EQ(config.upstream_idle_per_replica, 1024u);
}

TEST(ConfigTest, UpstreamIdleConnectionsPerReplicaAreBounded) {
  EXPECT_EQ(parseConfig("limits: { upstream_idle_per_replica: 16 }\nmodels: []\n")
                .upstream_idle_per_replica,
            16u);
  for (const char* bad : {"0", "-3", "2000000", "2.5", "many"}) {
    EXPECT_THROW(parseConfig(std::string("limits: { upstream_idle_per_replica: ") + bad +
                             " }\nmodels: []\n"),
                 ConfigError)
        << bad;
  }
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
  expectRejected("routing: { default_strategy: fastest }\n", "invalid routing strategy");
  expectRejected("routing: { default_strategy: \"random:0\" }\n", "invalid routing strategy");
  expectRejected("routing: { load_balance: { kv_critical_free: 2 } }\n", "between 0 and 1");
  expectRejected("routing: { load_balance: { alpha: 2 } }\n", "unknown key");
  expectRejected("routing: { speed: 2 }\n", "unknown key");
  expectRejected("models: [{ name: m, routing_config: { load_balance: { queued_weight: -1 } } }]\n",
                 "queued_weight");
  expectRejected("models: [{ name: m, routing_strategy: nope }]\n", "routing_strategy");
  expectRejected("models: [{ name: m, replicas: [no-port] }]\n", "not host:port");
  expectRejected("models: [{ replicas: [] }]\n", "name: required");
  expectRejected("models: [{ name: m }, { name: m }]\n", "duplicate model");
  expectRejected("models: [{ name: m, replicas: [h:1, h:1] }]\n", "duplicate address");
  expectRejected("telemetry: { scrape_interval_ms: -5 }\n", "positive");
  expectRejected("timeouts: { forever_ms: 5 }\n", "unknown key");
  // Milliseconds whose nanoseconds would not fit a TimeNs (the scenario fuzzer found 3e47).
  expectRejected("timeouts: { client_idle_ms: 3e47 }\n", "below 9e12");
  expectRejected("timeouts: { client_idle_ms: .inf }\n", "below 9e12");
  expectRejected("timeouts: { client_idle_ms: .nan }\n", "positive");
  expectRejected("listen: nowhere\n", "listen");
  expectRejected("workers: many\n", "wrong type");
}

TEST(ConfigTest, TelemetryKeys) {
  EXPECT_TRUE(parseConfig("models: []\n").scrape_policy.family_filter);
  const GatewayConfig config = parseConfig(
      "telemetry: { scrape_interval_ms: 50, max_scrapes_per_second: 2000, stable_stretch: 1.5,\n"
      "             hot_kv_usage: 0.8, adaptive: false, family_filter: false }\nmodels: []\n");
  EXPECT_EQ(config.scrape_interval, 50 * kNsPerMs);
  EXPECT_EQ(config.scrape_policy.max_scrapes_per_second, 2000);
  EXPECT_EQ(config.scrape_policy.stable_stretch, 1.5);
  EXPECT_EQ(config.scrape_policy.hot_kv_usage, 0.8);
  EXPECT_FALSE(config.scrape_policy.adaptive);
  EXPECT_FALSE(config.scrape_policy.family_filter);
  EXPECT_THROW(parseConfig("telemetry: { family_filter: sometimes }\nmodels: []\n"), ConfigError);
  EXPECT_THROW(parseConfig("telemetry: { stable_stretch: 3 }\nmodels: []\n"), ConfigError);
}

TEST(ConfigTest, LoadBalanceKnobsResolvePerModel) {
  const GatewayConfig config = parseConfig(R"(
routing:
  default_strategy: "load-balance:2,least-request:1"
  auto_blend_load_balance_weight: 0
  load_balance: { queued_weight: 0.5, kv_pressure_alpha: 3 }
  capacity: { refresh_ms: 500, window_ms: 30000, time_constant_ms: 5000 }
models:
  - name: a
    routing_config: { load_balance: { kv_critical_free: 0.2 } }
  - name: b
)");
  EXPECT_EQ(config.auto_blend_load_balance_weight, 0.0);
  EXPECT_EQ(config.capacity.refresh, 500 * kNsPerMs);
  EXPECT_EQ(config.capacity.window, 30 * kNsPerSec);
  EXPECT_EQ(config.models[0].load_balance.queued_weight, 0.5);
  EXPECT_EQ(config.models[0].load_balance.kv_alpha, 3.0);
  EXPECT_EQ(config.models[0].load_balance.kv_critical_free, 0.2);
  EXPECT_EQ(config.models[1].load_balance.kv_critical_free, 0.10);
  EXPECT_EQ(config.models[1].load_balance.score, fleet::LoadBalanceScore::kUtilization);
  EXPECT_EQ(config.models[1].load_balance.fastest_within, 0.03);
}

TEST(ConfigTest, LoadBalanceScoreAndBandAreChosenPerModel) {
  const GatewayConfig config = parseConfig(R"(
routing:
  load_balance: { score: requests-per-capacity }
models:
  - name: a
    routing_config: { load_balance: { score: utilization, fastest_within: 0 } }
  - name: b
)");
  EXPECT_EQ(config.models[0].load_balance.score, fleet::LoadBalanceScore::kUtilization);
  EXPECT_EQ(config.models[0].load_balance.fastest_within, 0.0);
  EXPECT_EQ(config.models[1].load_balance.score, fleet::LoadBalanceScore::kRequestsPerCapacity);
  EXPECT_THROW(parseConfig("routing: { load_balance: { score: fastest } }\nmodels: []\n"),
               ConfigError);
  EXPECT_THROW(parseConfig("routing: { load_balance: { fastest_within: 2 } }\nmodels: []\n"),
               ConfigError);
  ::setenv("SWITCHYARD_LOAD_BALANCE_SCORE", "requests-per-capacity", 1);
  ::setenv("SWITCHYARD_LOAD_BALANCE_FASTEST_WITHIN", "0.05", 1);
  const GatewayConfig from_env = parseConfig("models: [{ name: m }]\n");
  ::setenv("SWITCHYARD_LOAD_BALANCE_SCORE", "nonsense", 1);
  EXPECT_THROW(parseConfig("models: []\n"), ConfigError);
  ::unsetenv("SWITCHYARD_LOAD_BALANCE_SCORE");
  ::unsetenv("SWITCHYARD_LOAD_BALANCE_FASTEST_WITHIN");
  EXPECT_EQ(from_env.models[0].load_balance.score,
            fleet::LoadBalanceScore::kRequestsPerCapacity);
  EXPECT_EQ(from_env.models[0].load_balance.fastest_within, 0.05);
}

TEST(ConfigTest, CandidateSampleIsSetGloballyPerModelOrByEnvironment) {
  const GatewayConfig config = parseConfig(R"(
routing: { candidate_sample: 32 }
models:
  - name: a
    routing_config: { candidate_sample: 0 }
  - name: b
)");
  EXPECT_EQ(config.models[0].candidate_sample, 0u);
  EXPECT_EQ(config.models[1].candidate_sample, 32u);
  EXPECT_EQ(parseConfig("models: [{ name: m }]\n").models[0].candidate_sample, 0u);  // off
  for (const char* bad : {"1", "2.5", "-4", "many"}) {
    EXPECT_THROW(parseConfig(std::string("routing: { candidate_sample: ") + bad +
                             " }\nmodels: []\n"),
                 ConfigError)
        << bad;
  }
  ::setenv("SWITCHYARD_ROUTING_CANDIDATE_SAMPLE", "16", 1);
  const GatewayConfig from_env = parseConfig("models: [{ name: m }]\n");
  ::setenv("SWITCHYARD_ROUTING_CANDIDATE_SAMPLE", "1", 1);
  EXPECT_THROW(parseConfig("models: []\n"), ConfigError);
  ::unsetenv("SWITCHYARD_ROUTING_CANDIDATE_SAMPLE");
  EXPECT_EQ(from_env.models[0].candidate_sample, 16u);
}

TEST(ConfigTest, BusyPollIsOffByDefaultAndBoundedInTheFileAndTheEnvironment) {
  EXPECT_EQ(parseConfig("models: []\n").busy_poll_us, 0);
  EXPECT_EQ(parseConfig("busy_poll_us: 50\nmodels: []\n").busy_poll_us, 50);
  for (const char* bad : {"-1", "10001", "2.5", "soon"}) {
    EXPECT_THROW(parseConfig(std::string("busy_poll_us: ") + bad + "\nmodels: []\n"),
                 ConfigError)
        << bad;
  }
  GatewayConfig config = parseConfig("models: []\n");
  ::setenv("SWITCHYARD_BUSY_POLL_US", "100", 1);
  applyEnvironment(config);
  EXPECT_EQ(config.busy_poll_us, 100);
  for (const char* bad : {"-5", "20000", "10us", ""}) {
    ::setenv("SWITCHYARD_BUSY_POLL_US", bad, 1);
    EXPECT_THROW(applyEnvironment(config), ConfigError) << bad;
  }
  ::unsetenv("SWITCHYARD_BUSY_POLL_US");
}

TEST(ConfigTest, AibrixEnvironmentNamesSetTheLoadBalanceDefaults) {
  ::setenv("AIBRIX_LOAD_BALANCE_KV_PRESSURE_ALPHA", "4", 1);
  ::setenv("AIBRIX_LOAD_BALANCE_QUEUED_WEIGHT", "0.25", 1);
  ::setenv("SWITCHYARD_LOAD_BALANCE_QUEUED_WEIGHT", "0.75", 1);  // wins over the AIBrix name
  ::setenv("AIBRIX_ROUTING_AUTO_BLEND_LOAD_BALANCE_WEIGHT", "0", 1);
  const GatewayConfig config =
      parseConfig("models: [{ name: m, routing_config: { load_balance: { kv_pressure_alpha: 1 } } },"
                  " { name: n }]\n");
  ::setenv("AIBRIX_LOAD_BALANCE_KV_CRITICAL_FREE", "nonsense", 1);
  EXPECT_THROW(parseConfig("models: []\n"), ConfigError);
  for (const char* v : {"AIBRIX_LOAD_BALANCE_KV_PRESSURE_ALPHA", "AIBRIX_LOAD_BALANCE_QUEUED_WEIGHT",
                        "SWITCHYARD_LOAD_BALANCE_QUEUED_WEIGHT",
                        "AIBRIX_ROUTING_AUTO_BLEND_LOAD_BALANCE_WEIGHT",
                        "AIBRIX_LOAD_BALANCE_KV_CRITICAL_FREE"}) {
    ::unsetenv(v);
  }
  EXPECT_EQ(config.auto_blend_load_balance_weight, 0.0);
  EXPECT_EQ(config.models[0].load_balance.kv_alpha, 1.0);  // the model's own value wins
  EXPECT_EQ(config.models[1].load_balance.kv_alpha, 4.0);
  EXPECT_EQ(config.models[1].load_balance.queued_weight, 0.75);
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

namespace switchyard::gateway {
namespace {

TEST(SharedStateConfigTest, ParsesBackendSessionsAndJobs) {
  const GatewayConfig config = parseConfig(R"(
shared_state: { backend: redis, address: 127.0.0.1:7000, call_timeout_ms: 3,
                sync_interval_ms: 100, liveness_ttl_ms: 500, key_prefix: gw }
session_affinity: { header: X-Conversation, ttl_s: 60 }
async_jobs: { ttl_s: 30, default_model: m }
models:
  - name: m
    replicas: [127.0.0.1:9001]
)");
  EXPECT_EQ(config.shared_state.settings.backend, state::SharedStateSettings::Backend::kRedis);
  EXPECT_EQ(config.shared_state.settings.address, "127.0.0.1:7000");
  EXPECT_EQ(config.shared_state.settings.call_timeout, 3 * kNsPerMs);
  EXPECT_EQ(config.shared_state.settings.key_prefix, "gw");
  EXPECT_EQ(config.shared_state.sync_interval, 100 * kNsPerMs);
  EXPECT_EQ(config.shared_state.liveness_ttl, 500 * kNsPerMs);
  EXPECT_EQ(config.shared_state.inflight_slots_ahead, 16);  // default
  // Leases for a limit with something to lease ahead (8 per worker), never with a rate limit.
  SharedStateConfig leasing = config.shared_state;
  leasing.worker_count = 2;
  EXPECT_TRUE(leasesInflightSlots(leasing, 16, 0));
  EXPECT_FALSE(leasesInflightSlots(leasing, 15, 0));
  EXPECT_FALSE(leasesInflightSlots(leasing, 100, 5));
  leasing.inflight_slots_ahead = 0;
  EXPECT_FALSE(leasesInflightSlots(leasing, 100, 0));
  EXPECT_EQ(parseConfig("shared_state: { inflight_slots_ahead: 0 }\nmodels: []\n")
                .shared_state.inflight_slots_ahead,
            0);
  EXPECT_EQ(config.session_affinity.header, "x-conversation");  // header names are matched lower
  EXPECT_EQ(config.session_affinity.ttl, 60 * kNsPerSec);
  EXPECT_EQ(config.async_jobs.ttl, 30 * kNsPerSec);
  EXPECT_EQ(config.async_jobs.default_model, "m");
  // Defaults: one gateway, nothing shared.
  const GatewayConfig plain = parseConfig("models: []\n");
  EXPECT_EQ(plain.shared_state.settings.backend, state::SharedStateSettings::Backend::kMemory);
  EXPECT_TRUE(plain.session_affinity.enabled);
  EXPECT_EQ(plain.session_affinity.header, "x-session-id");
}

TEST(SharedStateConfigTest, RejectsWhatCannotWork) {
  EXPECT_THROW(parseConfig("shared_state: { backend: etcd }\n"), ConfigError);
  EXPECT_THROW(parseConfig("shared_state: { address: nowhere }\n"), ConfigError);
  EXPECT_THROW(parseConfig("shared_state: { sync_interval_ms: 500, liveness_ttl_ms: 600 }\n"),
               ConfigError);
  EXPECT_THROW(parseConfig("shared_state: { key_prefix: 'a{b}' }\n"), ConfigError);
  EXPECT_THROW(parseConfig("shared_state: { colour: red }\n"), ConfigError);
  for (const char* ahead : {"-1", "2.5", "5000", "many"}) {
    EXPECT_THROW(parseConfig(std::string("shared_state: { inflight_slots_ahead: ") + ahead + " }\n"),
                 ConfigError)
        << ahead;
  }
  EXPECT_THROW(parseConfig("session_affinity: { header: '' }\n"), ConfigError);
  EXPECT_THROW(parseConfig("async_jobs: { ttl_s: 0 }\n"), ConfigError);
}

TEST(SharedStateConfigTest, EnvironmentNamesOverrideTheFile) {
  GatewayConfig config = parseConfig("shared_state: { address: 10.0.0.1:6000 }\n");
  ::setenv("REDIS_PORT", "6390", 1);
  applyEnvironment(config);
  EXPECT_EQ(config.shared_state.settings.address, "10.0.0.1:6390");
  EXPECT_EQ(config.shared_state.settings.backend, state::SharedStateSettings::Backend::kMemory);
  ::setenv("SWITCHYARD_REDIS_ADDRESS", "127.0.0.1:6400", 1);
  applyEnvironment(config);
  ::unsetenv("REDIS_PORT");
  ::unsetenv("SWITCHYARD_REDIS_ADDRESS");
  EXPECT_EQ(config.shared_state.settings.address, "127.0.0.1:6400");
  EXPECT_EQ(config.shared_state.settings.backend, state::SharedStateSettings::Backend::kRedis);
}

TEST(AdmissionConfigTest, GlobalDefaultsAndPerModelOverrides) {
  const GatewayConfig config = parseConfig(R"(
admission: { queue: deadline, max_queued: 100, max_queued_per_client: 10, max_wait_ms: 5000,
             recheck_ms: 20, default_deadline_ms: 30000 }
models:
  - name: a
    replicas: [127.0.0.1:9001]
  - name: b
    admission: { queue: fifo, max_wait_ms: 1000 }
    replicas: [127.0.0.1:9002]
)");
  ASSERT_EQ(config.models.size(), 2u);
  const fleet::AdmissionParams& a = config.models[0].admission;
  EXPECT_EQ(a.queue, fleet::QueueMode::kDeadline);
  EXPECT_EQ(a.max_queued, 100u);
  EXPECT_EQ(a.max_queued_per_client, 10u);
  EXPECT_EQ(a.max_wait, 5 * kNsPerSec);
  EXPECT_EQ(a.recheck, 20 * kNsPerMs);
  EXPECT_EQ(a.default_deadline, 30 * kNsPerSec);
  const fleet::AdmissionParams& b = config.models[1].admission;
  EXPECT_EQ(b.queue, fleet::QueueMode::kFifo);
  EXPECT_EQ(b.max_wait, kNsPerSec);
  EXPECT_EQ(b.max_queued, 100u);  // the rest from the global values
  EXPECT_EQ(parseConfig("models: []\n").admission.queue, fleet::QueueMode::kOff);
}

TEST(AdmissionConfigTest, RejectsWhatCannotWork) {
  EXPECT_THROW(parseConfig("admission: { queue: lifo }\n"), ConfigError);
  EXPECT_THROW(parseConfig("admission: { max_queued: 0 }\n"), ConfigError);
  EXPECT_THROW(parseConfig("admission: { max_queued: 10, max_queued_per_client: 20 }\n"),
               ConfigError);
  EXPECT_THROW(parseConfig("admission: { max_wait_ms: -5 }\n"), ConfigError);
  EXPECT_THROW(parseConfig("admission: { colour: red }\n"), ConfigError);
  EXPECT_THROW(parseConfig("admission: fifo\n"), ConfigError);
  EXPECT_THROW(parseConfig("workers: 65\n"), ConfigError);
}

}  // namespace
}  // namespace switchyard::gateway
