#include "loadgen/load_generator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace switchyard::loadgen {
namespace {

RequestRecord done(std::string pod, TimeNs sent, TimeNs ttft, TimeNs e2e, int64_t tokens) {
  RequestRecord r;
  r.status = 200;
  r.target_pod = std::move(pod);
  r.sent = sent;
  r.first_byte = ttft;
  r.done = e2e;
  r.output_tokens = tokens;
  return r;
}

TEST(LoadGeneratorTest, ParsesMix) {
  auto mix = parseMix("chat:0.8:20-120:64-192,long:0.2:400-800:16-48");
  ASSERT_TRUE(mix);
  ASSERT_EQ(mix->size(), 2u);
  EXPECT_EQ((*mix)[1].name, "long");
  EXPECT_DOUBLE_EQ((*mix)[1].weight, 0.2);
  EXPECT_EQ((*mix)[1].prompt_words_max, 800);
  EXPECT_EQ((*mix)[1].max_tokens_min, 16);
  EXPECT_FALSE(parseMix(""));
  EXPECT_FALSE(parseMix("chat:1:20-10:64-192"));
  EXPECT_FALSE(parseMix("chat:1:20-30:64-192x"));
  EXPECT_FALSE(parseMix("chat:1:20-30"));
}

TEST(LoadGeneratorTest, TpotExcludesTheFirstToken) {
  // 11 tokens: 10 gaps over (1100 − 100) ms.
  EXPECT_DOUBLE_EQ(tpotNs(done("a", 0, 100'000'000, 1'100'000'000, 11)), 100'000'000.0);
  EXPECT_TRUE(std::isnan(tpotNs(done("a", 0, 100, 200, 1))));
  RequestRecord failed = done("a", 0, 100, 200, 5);
  failed.status = 503;
  EXPECT_TRUE(std::isnan(tpotNs(failed)));
  EXPECT_FALSE(meetsSlo(failed, Slo{}));
}

TEST(LoadGeneratorTest, SummarizesPerLabelWithinTheWindow) {
  LoadReport report;
  // TPOT 20 ms (good) and 60 ms (not good under the default 50 ms).
  report.records.push_back(done("p1", 1'000'000'000, 50'000'000, 250'000'000, 11));
  report.records.push_back(done("p2", 1'500'000'000, 50'000'000, 650'000'000, 11));
  report.records.push_back(done("p3", 1'700'000'000, 50'000'000, 250'000'000, 11));
  report.records.push_back(done("p1", 100, 1, 2, 2));  // before the window
  const auto groups =
      summarize(report, {{"p1", "A100"}, {"p2", "L20"}, {"p3", "L20"}}, Slo{}, 1'000'000'000,
                2'000'000'000);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].label, "A100");
  EXPECT_EQ(groups[0].requests, 1);
  EXPECT_EQ(groups[1].label, "L20");
  EXPECT_EQ(groups[1].requests, 2);
  EXPECT_EQ(groups[1].good, 1);
  EXPECT_DOUBLE_EQ(groups[1].qps, 2.0);
  EXPECT_NEAR(groups[1].share, 2.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(groups[1].tpot_p99_ms, 60.0);
  EXPECT_EQ(groups[2].label, "total");
  EXPECT_EQ(groups[2].requests, 3);
  EXPECT_NEAR(groups[2].goodputPercent(), 200.0 / 3, 1e-9);
}

TEST(LoadGeneratorTest, SumsAMetricOverLabels) {
  const std::string text =
      "# TYPE x counter\n"
      "x_total{model_name=\"a\"} 1.5\n"
      "x_total_other 7\n"
      "x_total{model_name=\"b\"} 2\n";
  EXPECT_DOUBLE_EQ(*metricSum(text, "x_total"), 3.5);
  EXPECT_FALSE(metricSum(text, "y_total"));
}

}  // namespace
}  // namespace switchyard::loadgen
