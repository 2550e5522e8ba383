// Scenario files: what parses, and that every mistake names its file, line and key.
#include "sim/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/workload.h"

namespace switchyard::sim {
namespace {

const char* const kMinimal = R"(name: t
fleet:
  - {gpu: A100, count: 2}
strategies: [least-request]
workload:
  arrivals: {poisson: {rate: 5}}
  mix:
    - {prompt_tokens: 100, output_tokens: [10, 20]}
)";

// The message of the ConfigError that parsing `text` throws ("" when it parses).
std::string errorOf(const std::string& text) {
  try {
    parseScenario(text, "s.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioTest, ParsesAFullScenario) {
  const Scenario s = parseScenario(R"(name: full
seed: 11
duration_s: 30
warmup_s: 5
drain_s: 10
model: llama3-8b
engine: {num_scheduler_steps: 4, chunked_prefill: false}
fleet:
  - {gpu: L20, count: 3, engine: {request_overhead_ms: 2}}
  - {gpu: H100, count: 1, prefix_caching: true}
gateways:
  count: 3
  sync_interval_ms: 100
  sync_delay_ms: 2
  routing:
    least_request_top_k: {k: 2}
    slow_start: {ramp_ms: 5000}
    candidate_sample: 8
    load_balance: {score: requests-per-capacity}
    capacity: {refresh_ms: 500}
  limits: {max_inflight_per_replica: 64}
  health: {failure_threshold: 3, hard_failure_threshold: 6}
  retry: {max_attempts: 2}
strategies:
  - least-request
  - "load-balance:2,random:1"
  - {label: lb sample 4, strategy: load-balance, routing: {candidate_sample: 4}}
workload:
  arrivals: {diurnal: {rate: 10, period_s: 100, curve: [[0, 0.5], [50, 1.5]]}}
  mix:
    - {name: a, weight: 3, prompt_words: [20, 120], output_tokens: 64, deadline_s: 10}
    - {name: b, prompt_tokens: {lognormal: {median: 200, sigma: 1}, min: 4, max: 2048},
       output_tokens: {uniform: [1, 8]}}
  bursts: [{at_s: 10, count: 100, duration_s: 1}]
  sessions: 50
events:
  - {at_s: 20, add_replicas: {gpu: L20, count: 2}}
  - {at_s: 3, fail_replica: 3}
  - {at_s: 4, slow_replica: {replica: 0, factor: 3}}
  - {at_s: 5, kill_gateway: 2}
  - {at_s: 6, redis_outage: {duration_s: 2}}
record: {per_request_csv: true, slo: {ttft_ms: 500, tpot_ms: 40}}
)",
                                   "full.yaml");
  EXPECT_EQ(s.name, "full");
  EXPECT_EQ(s.seed, 11u);
  EXPECT_EQ(s.duration, 30 * kNsPerSec);
  ASSERT_EQ(s.fleet.size(), 2u);
  EXPECT_EQ(s.fleet[0].tuning.num_scheduler_steps, 4);
  EXPECT_FALSE(s.fleet[0].tuning.chunked_prefill);
  EXPECT_EQ(s.fleet[0].tuning.request_overhead_ms, 2);
  EXPECT_EQ(s.fleet[1].tuning.request_overhead_ms,
            engine::builtinProfiles().tuning.request_overhead_ms);
  EXPECT_TRUE(s.fleet[1].prefix_caching);
  EXPECT_EQ(s.replicaCount(), 4);
  EXPECT_TRUE(s.gateways.shared_state);  // several gateways share state by default
  EXPECT_EQ(s.gateways.top_k.k, 2u);
  EXPECT_EQ(s.gateways.candidate_sample, 8u);
  EXPECT_EQ(s.gateways.load_balance.score, fleet::LoadBalanceScore::kRequestsPerCapacity);
  EXPECT_EQ(s.gateways.limits.max_inflight_per_replica, 64);
  EXPECT_EQ(s.gateways.health.failure_threshold, 3);
  ASSERT_EQ(s.strategies.size(), 3u);
  EXPECT_EQ(s.strategies[1].label, "load-balance:2,random:1");
  EXPECT_EQ(s.strategies[2].label, "lb sample 4");
  EXPECT_EQ(s.strategies[2].strategy, "load-balance");
  EXPECT_EQ(s.strategies[2].gateways.candidate_sample, 4u);  // its own knob...
  EXPECT_EQ(s.strategies[2].gateways.top_k.k, 2u);           // ...over the gateways' others
  EXPECT_EQ(scenarioFor(s, s.strategies[2]).gateways.candidate_sample, 4u);
  EXPECT_EQ(s.workload.arrivals.kind, ArrivalSpec::Kind::kDiurnal);
  EXPECT_EQ(s.workload.mix[0].prompt.words, true);
  EXPECT_EQ(s.workload.mix[1].prompt.kind, TokenCount::Kind::kLognormal);
  ASSERT_EQ(s.events.size(), 5u);
  EXPECT_EQ(s.events.front().kind, ScenarioEvent::Kind::kFailReplica);  // sorted by time
  EXPECT_EQ(s.events.back().kind, ScenarioEvent::Kind::kAddReplicas);
  EXPECT_TRUE(s.record.per_request_csv);
  EXPECT_EQ(s.record.slo.tpot_ms, 40);
}

TEST(ScenarioTest, ErrorsNameTheFileTheLineAndTheKey) {
  EXPECT_EQ(errorOf(kMinimal), "");
  const std::string base = kMinimal;
  // Each: the mistake, and what the message must contain.
  const std::pair<std::string, std::string> cases[] = {
      {base + "colour: blue\n", "s.yaml:9: colour: unknown key"},
      {"fleet:\n  - {gpu: A100, count: -2}\n" + base.substr(base.find("strategies")),
       "s.yaml:2: fleet[0].count: must be between 0 and 1000000"},
      {"fleet:\n  - {gpu: TPU9, count: 1}\n" + base.substr(base.find("strategies")),
       "s.yaml:2: fleet[0].gpu: unknown GPU 'TPU9'"},
      {base.substr(0, base.find("strategies")) + "strategies: [fastest]\n" +
           base.substr(base.find("workload")),
       "s.yaml:4: strategies[0]: invalid routing strategy 'fastest'"},
      {base.substr(0, base.find("workload")), "workload: required"},
      {base + "events:\n  - {at_s: 1, fail_replica: 7}\n",
       "s.yaml:10: events[0]: replica 7 does not exist"},
      {base + "events:\n  - {at_s: 1, kill_gateway: 1}\n",
       "s.yaml:10: events[0]: gateway 1 does not exist"},
      {base + "events:\n  - {at_s: 1}\n", "s.yaml:10: events[0]: needs one of"},
      {base + "gateways: {count: 2, sync_interval_ms: 500, liveness_ttl_ms: 600}\n",
       "liveness_ttl_ms: must be at least twice sync_interval_ms"},
      {base + "gateways:\n  routing:\n    least_request_top_k: {kay: 2}\n",
       "s.yaml:11: gateways.routing.least_request_top_k.kay: unknown key"},
      {base + "gateways:\n  health: {failure_threshold: zero}\n",
       "s.yaml:10: gateways.health.failure_threshold: wrong type"},
      {base + "engine: {chunky: 1}\n", "s.yaml:9: engine.chunky: unknown key"},
      {base + "duration_s: 10\nwarmup_s: 10\n", "warmup_s: must be shorter than duration_s"},
      {"fleet: [{gpu: A100}]\nstrategies: [random]\nworkload:\n  arrivals: {poisson: {}}\n"
       "  mix: [{prompt_tokens: 1, output_tokens: 1}]\n",
       "s.yaml:4: workload.arrivals.poisson: give exactly one of rate, load"},
      {"fleet: [{gpu: A100}]\nstrategies: [random]\nworkload:\n  arrivals: {poisson: {rate: 1}}\n"
       "  mix: [{prompt_tokens: [9, 3], output_tokens: 1}]\n",
       "s.yaml:5: workload.mix[0].prompt_tokens: high must not be below low"},
      {"fleet: [{gpu: A100}]\nstrategies: [random]\nworkload:\n  arrivals: {poisson: {rate: 1}}\n"
       "  mix: [{output_tokens: 1}]\n",
       "s.yaml:5: workload.mix[0].prompt_tokens: required"},
      {"fleet: [{gpu: A100}\n", "s.yaml:2: invalid YAML"},
      {"- 1\n- 2\n", "s.yaml:1: the top level must be a mapping"},
      {"", "empty scenario"},
      {base.substr(0, base.find("strategies")) + "strategies: [{label: x}]\n" +
           base.substr(base.find("workload")),
       "s.yaml:4: strategies[0].strategy: required"},
      {base.substr(0, base.find("strategies")) +
           "strategies: [random, {strategy: random, routing: {candidate_sample: 1}}]\n" +
           base.substr(base.find("workload")),
       "strategies[1].routing.candidate_sample: must be 0 (score every replica) or a whole"},
      {base.substr(0, base.find("strategies")) + "strategies: [random, random]\n" +
           base.substr(base.find("workload")),
       "strategies[1]: 'random' listed twice"},
      {"model: gpt-17\n" + base, "s.yaml:1: model: unknown profile 'gpt-17'"},
      {"fleet: [{gpu: A100, count: 1, startup_s: -1}]\nstrategies: [random]\nworkload:\n"
       "  arrivals: {poisson: {rate: 1}}\n  mix: [{prompt_tokens: 1, output_tokens: 1}]\n",
       "fleet[0].startup_s"},
      {"fleet: [{gpu: A10, count: 1}]\nmodel: llama2-70b\nstrategies: [random]\nworkload:\n"
       "  arrivals: {poisson: {rate: 1}}\n  mix: [{prompt_tokens: 1, output_tokens: 1}]\n",
       "fleet[0]: llama2-70b does not fit on A10"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string error = errorOf(text);
    EXPECT_NE(error.find(expected), std::string::npos) << "got: " << error << "\nfor:\n" << text;
  }
}

TEST(ScenarioTest, AdmissionAndAutoscaleKeysAreReadAndTheirErrorsNameTheirLines) {
  const std::string base = kMinimal;
  const std::string before = base.substr(0, base.find("strategies"));
  const std::string after = base.substr(base.find("workload"));
  const Scenario s = parseScenario(
      before +
          "strategies: [random, {strategy: random, label: dl, admission: {queue: deadline, "
          "max_queued: 9, max_queued_per_client: 9}}, {strategy: random, label: auto, "
          "autoscale: true}]\n" +
          after +
          "gateways:\n  admission: {queue: fifo, max_wait_ms: 1500, default_deadline_ms: 800}\n"
          "prices: {A100: 1.5}\n"
          "autoscale: {interval_s: 30, hysteresis: 0.1, deployments: [{gpu: A100, "
          "min_replicas: 1, max_replicas: 4}]}\n",
      "s.yaml");
  EXPECT_EQ(s.gateways.admission.queue, fleet::QueueMode::kFifo);
  EXPECT_EQ(s.gateways.admission.max_wait, 1500 * kNsPerMs);
  EXPECT_EQ(s.gateways.admission.default_deadline, 800 * kNsPerMs);
  ASSERT_EQ(s.strategies.size(), 3u);
  EXPECT_EQ(s.strategies[0].gateways.admission.queue, fleet::QueueMode::kFifo);
  EXPECT_EQ(s.strategies[1].gateways.admission.queue, fleet::QueueMode::kDeadline);
  EXPECT_EQ(s.strategies[1].gateways.admission.max_queued, 9u);
  EXPECT_FALSE(s.strategies[1].autoscale);
  EXPECT_TRUE(s.strategies[2].autoscale);
  EXPECT_EQ(s.autoscale.interval, 30 * kNsPerSec);
  EXPECT_DOUBLE_EQ(s.autoscale.stability.hysteresis, 0.1);
  ASSERT_EQ(s.autoscale.deployments.size(), 1u);
  EXPECT_EQ(s.autoscale.deployments[0].max_replicas, 4);
  EXPECT_DOUBLE_EQ(s.prices.at("A100"), 1.5);

  const std::pair<std::string, std::string> cases[] = {
      {base + "gateways:\n  admission: {queue: lifo}\n",
       "s.yaml:10: gateways.admission.queue: 'lifo' is not one of off, fifo, deadline"},
      {base + "gateways:\n  admission:\n    max_wiat_ms: 5\n",
       "s.yaml:11: gateways.admission.max_wiat_ms: unknown key"},
      {base + "gateways:\n  admission: {max_queued: 2, max_queued_per_client: 3}\n",
       "gateways.admission.max_queued_per_client: must not exceed max_queued"},
      {before + "strategies: [{strategy: random, admission: {queue: 3}}]\n" + after,
       "s.yaml:4: strategies[0].admission.queue: '3' is not one of"},
      {before + "strategies: [{strategy: random, autoscale: true}]\n" + after,
       "s.yaml:4: strategies[0].autoscale: needs the scenario's autoscale:"},
      {base + "prices: {A100: 1}\nautoscale: {deployments: [{gpu: L20}]}\n",
       "s.yaml:10: autoscale.deployments[0].gpu: 'L20' is not a fleet group's"},
      {base + "autoscale: {deployments: [{gpu: A100}]}\n",
       "s.yaml:9: autoscale.deployments[0].gpu: 'A100' has no price (prices:)"},
      {base + "prices: {A100: 1}\nautoscale: {interval_s: 0, deployments: [{gpu: A100}]}\n",
       "s.yaml:10: autoscale.interval_s: must be between"},
      {base + "prices: {A100: 1}\nautoscale: {deployments: [{gpu: A100, min_replicas: 3, "
              "max_replicas: 2}]}\n",
       "autoscale.deployments[0].max_replicas: must not be below min_replicas"},
      {base + "prices: {A100: -1}\n", "s.yaml:9: prices.A100: must be between"},
      {base + "prices: /nonexistent/prices.yaml\n", "s.yaml:9: prices: cannot read"},
      // A directory opens as a stream and only fails on reading (the fuzzer's find).
      {base + "prices: /\n", "s.yaml:9: prices: cannot read /: is a directory"},
      {base + "prices: !!tagged\n", "s.yaml:9: prices: cannot read"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string error = errorOf(text);
    EXPECT_NE(error.find(expected), std::string::npos) << "got: " << error << "\nfor:\n" << text;
  }
}

TEST(ScenarioTest, TokenCountsDrawWithinTheirRangeAndKnowTheirMean) {
  Rng rng(3);
  TokenCount uniform{TokenCount::Kind::kUniform, 10, 20};
  TokenCount lognormal{TokenCount::Kind::kLognormal, 200, 1.0, 4, 2048};
  double sum = 0;
  constexpr int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    const int u = uniform.draw(rng);
    EXPECT_TRUE(u >= 10 && u <= 20);
    const int l = lognormal.draw(rng);
    EXPECT_TRUE(l >= 4 && l <= 2048);
    sum += l;
  }
  EXPECT_DOUBLE_EQ(uniform.mean(), 15);
  EXPECT_NEAR(sum / kDraws, lognormal.mean(), 0.02 * lognormal.mean());
  // The load generator's words: 20 words of 6.8 characters are 34 tokens.
  EXPECT_EQ(promptTokensOfWords(20), 34);
  TokenCount words{TokenCount::Kind::kFixed, 20};
  words.words = true;
  EXPECT_EQ(words.draw(rng), 34);
}

TEST(ScenarioTest, TraceFilesAreReadLazilyAndTheirErrorsNameTheirLines) {
  const auto dir = std::filesystem::temp_directory_path() / "switchyard-scenario-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "good.csv")
        << "arrival_s,prompt_tokens,output_tokens,deadline_s,session,client\n"
           "0.5,100,20\n1.0,50,5,2.5,7\n1.5,60,6,0,0,42\n# a comment\n3.0,10,1\n";
    std::ofstream(dir / "bad.csv") << "0.5,100,20\n0.4,1,1\n";
    std::ofstream(dir / "bad-client.csv") << "0.5,100,20,0,0,1.5\n";
    std::ofstream(dir / "s.yaml") << "fleet: [{gpu: A100}]\nstrategies: [random]\n"
                                     "duration_s: 2\nworkload: {arrivals: {trace: good.csv}}\n";
  }
  const Scenario s = loadScenarioFile((dir / "s.yaml").string());
  EXPECT_EQ(s.workload.arrivals.trace_path, (dir / "good.csv").lexically_normal().string());
  Workload w(s.workload, 0, s.duration, 1);
  Arrival a;
  ASSERT_TRUE(w.next(a));
  EXPECT_EQ(a.at, kNsPerSec / 2);
  EXPECT_EQ(a.prompt_tokens, 100);
  ASSERT_TRUE(w.next(a));
  EXPECT_EQ(a.deadline, 2500 * kNsPerMs);
  EXPECT_EQ(a.session, 7u);
  EXPECT_EQ(a.client, -1);  // no client column: a client of its own
  ASSERT_TRUE(w.next(a));
  EXPECT_EQ(a.client, 42);
  EXPECT_FALSE(w.next(a));  // 3.0 s is past the 2 s duration

  // The error the trace `file` raises once `good_lines` lines have been read.
  const auto traceError = [&](const std::string& file, int good_lines) {
    WorkloadSpec bad = s.workload;
    bad.arrivals.trace_path = (dir / file).string();
    Workload b(bad, 0, 10 * kNsPerSec, 1);
    Arrival read;
    for (int i = 0; i < good_lines; ++i) EXPECT_TRUE(b.next(read));
    try {
      b.next(read);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(traceError("bad.csv", 1).find("bad.csv:2: arrival times must not decrease"),
            std::string::npos);
  EXPECT_NE(traceError("bad-client.csv", 0).find("bad-client.csv:1: client must be a whole number"),
            std::string::npos);
  WorkloadSpec folder = s.workload;
  folder.arrivals.trace_path = dir.string();  // opens as a stream, reads as nothing
  try {
    Workload refused(folder, 0, 10 * kNsPerSec, 1);
    ADD_FAILURE() << "a directory was taken for a trace";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(ScenarioTest, PoissonArrivalsHaveTheirRateAndTheSameSequencePerSeed) {
  const Scenario s = parseScenario(kMinimal, "s.yaml");
  Workload a(s.workload, 50, 100 * kNsPerSec, 9);
  Workload b(s.workload, 50, 100 * kNsPerSec, 9);
  Arrival x, y;
  int n = 0;
  while (a.next(x)) {
    ASSERT_TRUE(b.next(y));
    EXPECT_EQ(x.at, y.at);
    EXPECT_EQ(x.output_tokens, y.output_tokens);
    ++n;
  }
  EXPECT_NEAR(n, 5000, 250);  // 50/s for 100 s, within ~3.5 sigma
}

}  // namespace
}  // namespace switchyard::sim
