// Configuration of least-request-top-k and slow start: YAML (global and per model) and the
// environment (AIBrix names where AIBrix has the knob, SWITCHYARD_ names otherwise).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/duration_text.h"
#include "gateway/config.h"

namespace switchyard::gateway {
namespace {

TEST(TopKConfigTest, DefaultsGlobalKeysAndPerModelOverrides) {
  const GatewayConfig config = parseConfig(R"(
routing:
  least_request_top_k: { k: 5, tolerance_requests: 4 }
  slow_start: { ramp_ms: 60000, aggression: 2 }
models:
  - name: a
    routing_config:
      least_request_top_k: { tolerance_fraction: 0.25 }
      slow_start: { ramp_ms: 0 }
  - name: b
)");
  EXPECT_EQ(config.top_k.k, 5u);
  const fleet::ModelSpec& a = config.models[0];
  const fleet::ModelSpec& b = config.models[1];
  EXPECT_EQ(a.top_k.k, 5u);
  EXPECT_EQ(a.top_k.tolerance_requests, 4.0);
  EXPECT_EQ(a.top_k.tolerance_fraction, 0.25);
  EXPECT_EQ(a.slow_start.ramp, 0);  // off for this model
  EXPECT_EQ(a.slow_start.aggression, 2.0);
  EXPECT_EQ(b.top_k.tolerance_fraction, 0.1);  // the default
  EXPECT_EQ(b.slow_start.ramp, 60 * kNsPerSec);
  const GatewayConfig plain = parseConfig("models: []\n");
  EXPECT_EQ(plain.top_k.k, 3u);
  EXPECT_EQ(plain.top_k.tolerance_requests, 2.0);
  EXPECT_EQ(plain.slow_start.ramp, 30 * kNsPerSec);
  EXPECT_EQ(plain.slow_start.aggression, 1.0);
}

TEST(TopKConfigTest, RejectsBadValues) {
  EXPECT_THROW(parseConfig("routing: { least_request_top_k: { k: 0 } }\n"), ConfigError);
  EXPECT_THROW(parseConfig("routing: { least_request_top_k: { kay: 2 } }\n"), ConfigError);
  EXPECT_THROW(parseConfig("routing: { slow_start: { ramp_ms: -1 } }\n"), ConfigError);
  EXPECT_THROW(parseConfig("routing: { slow_start: { aggression: 0 } }\n"), ConfigError);
  EXPECT_THROW(parseConfig("models: [{ name: m, routing_config: { slow_start: [] } }]\n"),
               ConfigError);
}

TEST(TopKConfigTest, EnvironmentNames) {
  ::setenv("AIBRIX_ROUTING_LEAST_REQUEST_TOP_K", "5", 1);
  ::setenv("SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K", "4", 1);  // wins over the AIBrix name
  ::setenv("AIBRIX_ROUTING_LEAST_REQUEST_TOP_K_EPSILON", "6", 1);
  ::setenv("AIBRIX_ROUTING_LEAST_REQUEST_TOP_K_RAMP_WINDOW", "1m30s", 1);
  ::setenv("SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K_TOLERANCE_FRACTION", "0.2", 1);
  ::setenv("SWITCHYARD_ROUTING_SLOW_START_AGGRESSION", "3", 1);
  const GatewayConfig config = parseConfig(
      "models: [{ name: m, routing_config: { least_request_top_k: { k: 2 } } }, { name: n }]\n");
  ::setenv("AIBRIX_ROUTING_LEAST_REQUEST_TOP_K_RAMP_WINDOW", "30", 1);  // no unit: ambiguous
  EXPECT_THROW(parseConfig("models: []\n"), ConfigError);
  ::setenv("AIBRIX_ROUTING_LEAST_REQUEST_TOP_K_RAMP_WINDOW", "0", 1);  // AIBrix's off switch
  EXPECT_EQ(parseConfig("models: []\n").slow_start.ramp, 0);
  ::setenv("SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K", "2.5", 1);
  EXPECT_THROW(parseConfig("models: []\n"), ConfigError);
  for (const char* v :
       {"AIBRIX_ROUTING_LEAST_REQUEST_TOP_K", "SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K",
        "AIBRIX_ROUTING_LEAST_REQUEST_TOP_K_EPSILON",
        "AIBRIX_ROUTING_LEAST_REQUEST_TOP_K_RAMP_WINDOW",
        "SWITCHYARD_ROUTING_LEAST_REQUEST_TOP_K_TOLERANCE_FRACTION",
        "SWITCHYARD_ROUTING_SLOW_START_AGGRESSION"}) {
    ::unsetenv(v);
  }
  EXPECT_EQ(config.models[0].top_k.k, 2u);  // the model's own value wins
  EXPECT_EQ(config.models[1].top_k.k, 4u);
  EXPECT_EQ(config.models[1].top_k.tolerance_requests, 6.0);
  EXPECT_EQ(config.models[1].top_k.tolerance_fraction, 0.2);
  EXPECT_EQ(config.models[1].slow_start.ramp, 90 * kNsPerSec);
  EXPECT_EQ(config.models[1].slow_start.aggression, 3.0);
}

TEST(DurationTextTest, GoDurationForms) {
  TimeNs t = -1;
  EXPECT_TRUE(parseDurationText("300s", t));
  EXPECT_EQ(t, 300 * kNsPerSec);
  EXPECT_TRUE(parseDurationText("1h2m3.5s", t));
  EXPECT_EQ(t, 3723 * kNsPerSec + 500 * kNsPerMs);
  EXPECT_TRUE(parseDurationText("250ms", t));
  EXPECT_EQ(t, 250 * kNsPerMs);
  EXPECT_TRUE(parseDurationText("0", t));
  EXPECT_EQ(t, 0);
  for (const char* bad : {"", "30", "s", "-5s", "5x", "5s3", "1e3s"}) {
    EXPECT_FALSE(parseDurationText(bad, t)) << bad;
  }
}

}  // namespace
}  // namespace switchyard::gateway
