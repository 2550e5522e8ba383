// src/observe: trace context, decision header, metric shards and their exposition.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "allocation_count.h"
#include "fleet/fleet_snapshot.h"
#include "gateway/config.h"
#include "observe/decision_log.h"
#include "observe/metrics.h"
#include "observe/observer.h"
#include "observe/otlp_exporter.h"
#include "observe/trace.h"

namespace switchyard::observe {
namespace {

TEST(TraceParent, ParsesAndFormatsVersion00) {
  TraceParent p;
  ASSERT_TRUE(parseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", p));
  EXPECT_TRUE(p.sampled);
  EXPECT_EQ(p.parent_span_id, 0x00f067aa0ba902b7u);
  char out[56];
  formatTraceParent(out, p.trace_id, 0x1234, false);
  EXPECT_STREQ(out, "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000001234-00");
}

TEST(TraceParent, RejectsInvalidForms) {
  TraceParent p;
  EXPECT_FALSE(parseTraceParent("", p));
  EXPECT_FALSE(parseTraceParent("00-00000000000000000000000000000000-00f067aa0ba902b7-01", p));
  EXPECT_FALSE(parseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", p));
  EXPECT_FALSE(parseTraceParent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", p));
  EXPECT_FALSE(parseTraceParent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", p));
  EXPECT_FALSE(parseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", p));
  // A future version may append fields after a dash.
  EXPECT_TRUE(parseTraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-abc", p));
  EXPECT_FALSE(p.sampled);
}

TEST(SpanQueue, DropsWhenFull) {
  SpanQueue q(2);
  SpanRecord s;
  EXPECT_TRUE(q.push(s));
  EXPECT_TRUE(q.push(s));
  EXPECT_FALSE(q.push(s));
  EXPECT_TRUE(q.pop(s));
  EXPECT_TRUE(q.push(s));
}

fleet::FleetSnapshot makeSnapshot(size_t replicas, uint64_t version = 1) {
  fleet::FleetSnapshot snapshot;
  snapshot.version = version;
  snapshot.signal_max_age = kNsPerSec;
  fleet::ModelEntry model;
  model.name = "m";
  for (size_t i = 0; i < replicas; ++i) {
    fleet::ReplicaEntry entry;
    entry.state = std::make_shared<fleet::ReplicaState>("10.0.0." + std::to_string(i) + ":8000",
                                                        "10.0.0.1", 8000);
    entry.gpu = "A100";
    model.replicas.push_back(entry);
  }
  model.indexStates();
  snapshot.models.push_back(std::move(model));
  snapshot.model_index["m"] = 0;
  return snapshot;
}

TEST(DecisionHeader, ListsScoresAndExclusionsAndTruncates) {
  const fleet::FleetSnapshot snapshot = makeSnapshot(3);
  routing::CandidateRow rows[3] = {{0, routing::Exclusion::kNone, 0.25},
                                   {1, routing::Exclusion::kFailedThisRequest, 0},
                                   {2, routing::Exclusion::kNone, 1.5}};
  routing::Decision d;
  d.chosen = 0;
  d.strategy = "least-request";
  d.ready = 3;
  d.candidates = 2;
  d.rows = rows;
  std::string out;
  appendDecisionHeader(out, d, snapshot.models[0]);
  EXPECT_EQ(out,
            "strategy=least-request; chosen=10.0.0.0:8000; ready=3; candidates=10.0.0.0:8000="
            "0.25,10.0.0.2:8000=1.5; excluded=10.0.0.1:8000(failed_this_request)");
  std::string small;
  appendDecisionHeader(small, d, snapshot.models[0], 90);
  EXPECT_LE(small.size(), 90u);
  EXPECT_TRUE(small.ends_with(";truncated")) << small;
}

TEST(DecisionHeader, ShowsTheTopKSetAndSlowStartLoad) {
  const fleet::FleetSnapshot snapshot = makeSnapshot(3);
  routing::CandidateRow rows[3] = {{0, routing::Exclusion::kNone, 4, 0, true},
                                   {1, routing::Exclusion::kNone, 5, 3.25, true},
                                   {2, routing::Exclusion::kNone, 9, 0, false}};
  routing::Decision d;
  d.chosen = 1;
  d.strategy = "least-request-top-k";
  d.ready = 3;
  d.candidates = 3;
  d.pick_set = 2;
  d.rows = rows;
  std::string out;
  appendDecisionHeader(out, d, snapshot.models[0]);
  EXPECT_TRUE(out.ends_with("; pick_set=10.0.0.0:8000,10.0.0.1:8000; warming=10.0.0.1:8000+3.25"))
      << out;
}

// A blend (prefix-cache's auto-blend) whose load-balance half passed replica 1 over: its score,
// 1.6, is the penalty, and only the mark says why.
TEST(DecisionHeader, NamesTheCandidatesAStrategyPassedOverAndWhy) {
  const fleet::FleetSnapshot snapshot = makeSnapshot(3);
  routing::CandidateRow rows[3] = {{0, {}, 0.5}, {1, {}, 1.6}, {2, {}, 1.0}};
  rows[1].passed_over = routing::PassOver::kKvCritical;
  routing::Decision d{.chosen = 0, .strategy = "prefix-cache", .candidates = 3, .ready = 3};
  d.rows = rows;
  std::string out;
  appendDecisionHeader(out, d, snapshot.models[0]);
  EXPECT_TRUE(out.ends_with("; passed_over=10.0.0.1:8000(kv_critical)")) << out;
  rows[1].passed_over = routing::PassOver::kNone;  // nothing passed over: no field
  out.clear();
  appendDecisionHeader(out, d, snapshot.models[0]);
  EXPECT_EQ(out.find("passed_over"), std::string::npos) << out;
}

TEST(Metrics, ShardsAreSummedAtScrapeAndPassTheFormat) {
  MetricsRegistry registry(2);
  const fleet::FleetSnapshot snapshot = makeSnapshot(2);
  for (size_t w = 0; w < 2; ++w) {
    WorkerMetrics& shard = registry.worker(w);
    shard.bind(snapshot);
    const uint32_t s = shard.strategySlot("least-request");
    shard.replica(0, 1).requests[s][statusClass(200)].add(w + 1);
    shard.replica(0, 1).e2e.observe(30 * kNsPerMs);
    shard.countRejected(LimitKind::kModelRate);
  }
  const std::string text = registry.render(snapshot, 0, {});
  EXPECT_NE(text.find("switchyard_requests_total{model=\"m\",replica=\"10.0.0.1:8000\","
                      "strategy=\"least-request\",code=\"2xx\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("switchyard_rejected_requests_total{limit=\"model_rate\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("switchyard_e2e_request_seconds_bucket{model=\"m\",replica=\"10.0.0.1:8000\""
                      ",le=\"0.05\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("switchyard_e2e_request_seconds_count{model=\"m\",replica=\"10.0.0.1:8000\"}"
                      " 2\n"),
            std::string::npos);
}

TEST(Metrics, SlotsSurviveASnapshotChange) {
  MetricsRegistry registry(1);
  WorkerMetrics& shard = registry.worker(0);
  fleet::FleetSnapshot a = makeSnapshot(2, 1);
  shard.bind(a);
  shard.replica(0, 1).selections.add();
  fleet::FleetSnapshot b = makeSnapshot(2, 2);
  std::swap(b.models[0].replicas[0], b.models[0].replicas[1]);  // same names, other order
  b.models[0].indexStates();
  shard.bind(b);
  EXPECT_EQ(shard.replica(0, 0).selections.get(), 1u);
}

TEST(Metrics, LoadImbalanceIsMaxOverMean) {
  fleet::FleetSnapshot s = makeSnapshot(2);
  EXPECT_DOUBLE_EQ(loadImbalance(s.models[0]), 1.0);
  s.models[0].replicas[0].state->counters().running = 3;
  s.models[0].replicas[1].state->counters().running = 1;
  EXPECT_DOUBLE_EQ(loadImbalance(s.models[0]), 1.5);
}

TEST(Observer, RecordsADecisionAndAnExplainHeader) {
  ObserveConfig config;
  config.decision_log_size = 4;
  Observability hub(config, 1);
  WorkerObserver& w = hub.worker(0);
  const fleet::FleetSnapshot snapshot = makeSnapshot(2);
  routing::CandidateRow rows[2] = {{0, routing::Exclusion::kNone, 1}, {1, {}, 2}};
  rows[1].passed_over = routing::PassOver::kKvCritical;
  routing::Decision d;
  d.chosen = 0;
  d.strategy = "random";
  d.rows = rows;
  RequestRecord r;
  w.begin(r, 100, "req-1", "", "1");
  w.onModel(r, snapshot, snapshot.models[0], "random");
  w.onDecision(r, d, 100, 150);
  std::string head;
  w.appendResponseHeaders(r, head);
  EXPECT_TRUE(head.starts_with("x-switchyard-decision: strategy=random; chosen=10.0.0.0:8000"));
  r.status = 200;
  w.end(r, 200);
  const auto records = w.decisions().copyNewest(10);
  ASSERT_EQ(records.size(), 1u);
  const std::string json = renderDecisionsJson(records, hub.metrics(), 10);
  EXPECT_NE(json.find(R"("request_id":"req-1")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("chosen":"10.0.0.0:8000")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("score":2,"passed_over":"kv_critical")"), std::string::npos) << json;
  EXPECT_EQ(json.find(R"("score":1,"passed_over")"), std::string::npos) << json;
  EXPECT_EQ(json.find("chosen_labels"), std::string::npos);
  // With a snapshot, the chosen replica's labels come along.
  const std::string labelled = renderDecisionsJson(records, hub.metrics(), 10, &snapshot);
  EXPECT_NE(labelled.find(R"("chosen_labels":{)"), std::string::npos) << labelled;
}

TEST(Observer, RecordingADecisionAllocatesNothingInSteadyState) {
  if (!switchyard::testing::allocationCounting()) {
    GTEST_SKIP() << "allocation counting is off in sanitizer builds";
  }
  ObserveConfig config;
  config.decision_log_size = 4;
  Observability hub(config, 1);
  WorkerObserver& w = hub.worker(0);
  const fleet::FleetSnapshot snapshot = makeSnapshot(3);
  routing::CandidateRow rows[3] = {{0, routing::Exclusion::kNone, 1},
                                   {1, routing::Exclusion::kSaturated, 0},
                                   {2, routing::Exclusion::kNone, 2}};
  routing::Decision d;
  d.chosen = 0;
  d.strategy = "least-request";
  d.rows = rows;
  auto oneRequest = [&](RequestRecord& r, std::string_view explain) {
    w.begin(r, 100, "req-2", "", explain);
    w.onModel(r, snapshot, snapshot.models[0], "least-request");
    w.onDecision(r, d, 100, 150);
    r.status = 200;
    w.end(r, 200);
  };
  RequestRecord r;
  // The first requests size the per-connection buffers and resolve label slots; after that,
  // recording metrics and the decision (also with an explain header) allocates nothing.
  for (int i = 0; i < 8; ++i) oneRequest(r, i % 2 ? "1" : "");
  switchyard::testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) oneRequest(r, i % 2 ? "1" : "");
  EXPECT_EQ(scope.count(), 0u);
  // Guards the measurement itself: an allocation on this thread is seen.
  switchyard::testing::AllocationScope check;
  void* p = ::operator new(16);  // a direct call: unlike a new-expression, never elided
  ::operator delete(p);
  EXPECT_EQ(check.count(), 1u);
  EXPECT_EQ(w.decisions().copyNewest(100).size(), 4u);
}

TEST(Config, ParsesTracingLoggingAndDecisions) {
  const auto config = gateway::parseConfig(
      "tracing: { otlp_endpoint: http://127.0.0.1:4318, sampling_ratio: 0.25 }\n"
      "logging: { level: warn, access_log: true }\ndecisions: { log_size: 64 }\n");
  EXPECT_EQ(config.observe.tracing.otlp_endpoint, "http://127.0.0.1:4318");
  EXPECT_DOUBLE_EQ(config.observe.tracing.sampling_ratio, 0.25);
  EXPECT_EQ(config.observe.logging.level, "warn");
  EXPECT_TRUE(config.observe.logging.access_log);
  EXPECT_EQ(config.observe.decision_log_size, 64u);
  EXPECT_THROW(gateway::parseConfig("tracing: { otlp_endpoint: localhost }\n"),
               gateway::ConfigError);
  EXPECT_THROW(gateway::parseConfig("tracing: { sampling_ratio: 2 }\n"), gateway::ConfigError);
  EXPECT_THROW(gateway::parseConfig("logging: { level: loud }\n"), gateway::ConfigError);
}

}  // namespace
}  // namespace switchyard::observe
