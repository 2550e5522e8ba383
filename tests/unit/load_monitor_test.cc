#include <gtest/gtest.h>

#include "allocation_count.h"
#include "gateway/config.h"
#include "gateway/optimize_config.h"
#include "observe/load_interval.h"
#include "observe/load_recorder.h"
#include "observe/load_shape.h"
#include "optimizer/load_window.h"
#include "optimizer/stability.h"

namespace switchyard {
namespace {

TEST(LoadShapeTest, BucketsAreLog2WithFourSubBucketsAndTheirMiddleIsClose) {
  EXPECT_EQ(observe::tokenBucket(0, 64), 1);
  EXPECT_EQ(observe::tokenBucket(1, 64), 1);
  EXPECT_EQ(observe::tokenBucket(3, 64), 3);
  EXPECT_EQ(observe::tokenBucket(4, 64), 8);
  EXPECT_EQ(observe::tokenBucket(7, 64), 11);
  EXPECT_EQ(observe::tokenBucket(8, 64), 12);
  EXPECT_EQ(observe::tokenBucket(1 << 30, 64), 63);  // clamped to the top bucket
  for (int64_t t = 1; t < 100000; t = t * 5 / 4 + 1) {
    const int b = observe::tokenBucket(t, observe::kPromptBuckets);
    const double middle = observe::bucketTokens(b);
    EXPECT_LE(std::fabs(middle - static_cast<double>(t)), 0.125 * static_cast<double>(t) + 0.5)
        << t;
    EXPECT_EQ(observe::tokenBucket(static_cast<int64_t>(middle), observe::kPromptBuckets), b);
  }
}

TEST(LoadRecorderTest, RecordingIsOneIncrementWithoutAllocation) {
  observe::LoadRecorder recorder;
  observe::LoadBlock* block = recorder.block(3);
  ASSERT_EQ(recorder.block(3), block);
  if (testing::allocationCounting()) {
    testing::AllocationScope scope;
    for (int i = 0; i < 1000; ++i) block->completed(100 + i, 50);
    EXPECT_EQ(scope.count(), 0u);
  } else {
    for (int i = 0; i < 1000; ++i) block->completed(100 + i, 50);
  }
  block->failed.fetch_add(2);
  observe::LoadTotals totals;
  recorder.addTo(3, totals);
  recorder.addTo(7, totals);  // a slot never used adds nothing
  uint64_t sum = 0;
  for (uint32_t n : totals.cells) sum += n;
  EXPECT_EQ(sum, 1000u);
  EXPECT_EQ(totals.failed, 2u);
}

observe::LoadInterval interval(int64_t start, uint64_t chat, uint64_t code, uint64_t rejected = 0) {
  observe::LoadInterval i;
  i.model = "m";
  i.start = start;
  i.interval_s = 10;
  const int chat_p = observe::tokenBucket(200, observe::kPromptBuckets);
  const int chat_o = observe::tokenBucket(150, observe::kOutputBuckets);
  const int code_p = observe::tokenBucket(4000, observe::kPromptBuckets);
  const int code_o = observe::tokenBucket(48, observe::kOutputBuckets);
  if (chat) i.cells.push_back({chat_p, chat_o, chat});
  if (code) i.cells.push_back({code_p, code_o, code});
  i.completed = chat + code;
  i.rejected = rejected;
  return i;
}

TEST(LoadWindowTest, PlansTheLargerOfWindowMeanAndCurrentRate) {
  // Chat fell from 100 to 10 per interval, code rose from 0 to 40; two gateways in the newest.
  std::vector<observe::LoadInterval> intervals = {interval(100, 100, 0), interval(110, 100, 0),
                                                  interval(120, 5, 20), interval(120, 5, 20)};
  optimizer::LoadSummary summary;
  const auto cells = optimizer::planLoad(intervals, 30, &summary);
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(summary.intervals, 3);
  EXPECT_DOUBLE_EQ(summary.window_seconds, 30);
  EXPECT_DOUBLE_EQ(summary.current_rps, 5);
  for (const auto& c : cells) {
    if (c.cell.prompt_tokens > 1000) {
      EXPECT_DOUBLE_EQ(c.current_rps, 4);  // 40 in the newest 10 s
      EXPECT_NEAR(c.window_rps, 40.0 / 30, 1e-9);
      EXPECT_DOUBLE_EQ(c.cell.rps, 4);  // rising: the current rate
    } else {
      EXPECT_DOUBLE_EQ(c.current_rps, 1);
      EXPECT_NEAR(c.window_rps, 210.0 / 30, 1e-9);
      EXPECT_NEAR(c.cell.rps, 7, 1e-9);  // falling: the window mean
    }
  }
  // Rejected requests count as load of the same mix; old intervals leave the window.
  const auto scaled = optimizer::planLoad({interval(0, 10, 0, 10), interval(500, 10, 0)}, 30);
  ASSERT_EQ(scaled.size(), 1u);
  EXPECT_DOUBLE_EQ(scaled[0].cell.rps, 1);
  EXPECT_TRUE(optimizer::planLoad({}, 30).empty());
}

TEST(LoadIntervalTest, BothLayoutsRoundTrip) {
  observe::LoadInterval i = interval(990, 7, 3, 2);
  i.gateway = "gw \"1\"";
  i.failed = 1;
  i.queued = 4;
  std::string error;
  auto back = observe::parseLoadIntervalJson(observe::loadIntervalJson(i), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->gateway, i.gateway);
  EXPECT_EQ(back->demand(), 13u);
  EXPECT_EQ(back->cells.size(), 2u);
  const std::string trace = observe::aibrixTraceJson(i);
  EXPECT_NE(trace.find("\"meta_total_reqs\":13"), std::string::npos) << trace;
  EXPECT_NE(trace.find("\"meta_pending_reqs\":4"), std::string::npos) << trace;
  auto from_trace = observe::parseAibrixTrace(trace, "m", 990, &error);
  ASSERT_TRUE(from_trace) << error;
  EXPECT_EQ(from_trace->completed, 10u);
  EXPECT_EQ(from_trace->demand(), 13u);
  for (const auto& c : from_trace->cells) {
    const bool same = (c.prompt_bucket == i.cells[0].prompt_bucket &&
                       c.output_bucket == i.cells[0].output_bucket) ||
                      (c.prompt_bucket == i.cells[1].prompt_bucket &&
                       c.output_bucket == i.cells[1].output_bucket);
    EXPECT_TRUE(same) << c.prompt_bucket << "," << c.output_bucket;
  }
  EXPECT_EQ(observe::aibrixTraceKey("m", 990), "aibrix:m_request_trace_990");
  EXPECT_EQ(observe::switchyardLoadKey("sy", "m", 990), "sy:{m}:load:990");
  for (const char* bad :
       {"", "[]", R"({"cells":[[1,2]]})", R"({"interval_s":0})", R"({"cells":[[999,1,1]]})",
        // Buckets 4…7 do not exist (found by the optimizer_load fuzz target).
        R"({"interval_s":10,"cells":[[5,1,1]]})", R"({"interval_s":10,"cells":[[1,7,1]]})"}) {
    EXPECT_FALSE(observe::parseLoadIntervalJson(bad, &error)) << bad;
  }
  EXPECT_FALSE(observe::parseAibrixTrace(R"({"a:b":1})", "m", 0, &error));
  EXPECT_FALSE(observe::parseAibrixTrace(R"({"1:2":-1})", "m", 0, &error));
}

TEST(StabilizerTest, CooldownFloorsAndHysteresis) {
  optimizer::Stabilizer s({0.1, 60 * kNsPerSec});
  s.record(0, {4, 1});
  s.record(30 * kNsPerSec, {2, 1});
  EXPECT_EQ(s.floors(40 * kNsPerSec, 2), (std::vector<int>{4, 1}));
  EXPECT_EQ(s.floors(61 * kNsPerSec, 2), (std::vector<int>{2, 1}));
  EXPECT_EQ(s.floors(100 * kNsPerSec, 2), (std::vector<int>{0, 0}));
  EXPECT_TRUE(s.keepCurrent(10, 9.5));
  EXPECT_FALSE(s.keepCurrent(10, 8.9));
}

TEST(LoadMonitorConfigTest, ParsesAndRejects) {
  auto config = gateway::parseConfig(
      "models: []\nload_monitor:\n  interval: 5\n  retention: 60\n  redis: redis://127.0.0.1:1\n"
      "  layouts: [aibrix, switchyard]\n  optimizer_url: http://127.0.0.1:8080\n");
  EXPECT_EQ(config.load_monitor.interval, 5 * kNsPerSec);
  EXPECT_EQ(config.load_monitor.optimizer_url, "http://127.0.0.1:8080");
  EXPECT_TRUE(config.load_monitor.aibrix_layout);
  EXPECT_TRUE(config.load_monitor.switchyard_layout);
  for (const char* bad :
       {"load_monitor: 3\n", "load_monitor: {interval: 0}\n", "load_monitor: {layouts: [nope]}\n",
        "load_monitor: {redis: http://x}\n", "load_monitor: {interval: 100, retention: 10}\n",
        "load_monitor: {bogus: 1}\n", "load_monitor: {optimizer_url: 'ftp://h:1'}\n",
        "load_monitor: {optimizer_url: 'http://nohostport'}\n"}) {
    EXPECT_THROW(gateway::parseConfig(std::string("models: []\n") + bad), gateway::ConfigError)
        << bad;
  }
}

TEST(OptimizeConfigTest, ParsesAndRejectsWithTheKeyNamed) {
  const auto c = gateway::parseOptimizeConfig(
      "listen: 127.0.0.1:0\ninterval: 5\nwindow: 60\nslo: tpot=50ms\npercentile: 90\n"
      "replicas_unit: replicas\nload: {source: redis, redis: 'redis://h:1', layout: aibrix}\n"
      "deployments:\n  - {name: a, model: m, profile: a.json, max_replicas: 3}\n");
  EXPECT_EQ(c.interval, 5 * kNsPerSec);
  ASSERT_TRUE(c.slo);
  EXPECT_DOUBLE_EQ(c.slo->tpot, 0.05);
  EXPECT_EQ(c.slo->percentile, 90);
  EXPECT_FALSE(c.hundredths);
  EXPECT_TRUE(c.load.aibrix_layout);
  EXPECT_EQ(c.deployments[0].ns, "default");
  EXPECT_EQ(c.deployments[0].max_replicas, 3);
  const std::string ok_load = "load: {file: l.json}\n";
  const std::string dep = "deployments:\n  - {name: a, model: m, profile: a.json}\n";
  const std::pair<std::string, std::string> bad[] = {
      {"", "top level"},
      {ok_load, "deployments"},
      {dep, "load"},
      {ok_load + "deployments:\n  - {name: a, model: m}\n", "profile"},
      {ok_load + dep + "slo: latency=1s\n", "slo"},
      {ok_load + dep + "replicas_unit: cents\n", "replicas_unit"},
      {ok_load + dep + "bogus: 1\n", "bogus"},
      {"load: {source: gateways}\n" + dep, "gateways"},
      {ok_load + "deployments:\n  - {name: a, model: m, profile: p}\n  - {name: a, model: m, "
                 "profile: p}\n",
       "twice"},
      {ok_load + "deployments:\n  - {name: a, model: m, profile: p, min_replicas: 3, "
                 "max_replicas: 1}\n",
       "min_replicas"},
  };
  for (const auto& [text, key] : bad) {
    try {
      gateway::parseOptimizeConfig(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const gateway::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace switchyard
