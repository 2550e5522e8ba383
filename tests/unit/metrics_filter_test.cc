#include "engine/metrics_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/openai_emulation.h"
#include "fleet/engine_signals.h"
#include "fleet/metrics_target.h"

namespace switchyard::engine {
namespace {

using Names = std::vector<std::string>;

TEST(MetricsFilterTest, NameParametersAreDecodedLikeAForm) {
  EXPECT_EQ(requestedSampleNames(""), Names{});
  EXPECT_EQ(requestedSampleNames("name[]=vllm:num_requests_running"),
            Names{"vllm:num_requests_running"});
  EXPECT_EQ(requestedSampleNames("name%5B%5D=vllm%3Akv_cache_usage_perc&x=1&name[]=a+b"),
            (Names{"vllm:kv_cache_usage_perc", "a b"}));
  // Other parameters, empty values, a parameter without '=', a malformed escape (kept).
  EXPECT_EQ(requestedSampleNames("name=x&name[]=&name[]&&name[]=%zz%4"), Names{"%zz%4"});
}

TEST(MetricsFilterTest, OnlyTheFamiliesWithAnAskedSampleAreAnsweredWhole) {
  const std::string page =
      "# HELP a:gauge A gauge.\n# TYPE a:gauge gauge\na:gauge{model_name=\"m\"} 1\n"
      "# HELP a:hist A histogram.\n# TYPE a:hist histogram\n"
      "a:hist_bucket{le=\"1\"} 0\na:hist_bucket{le=\"+Inf\"} 2\na:hist_sum 3\na:hist_count 2\n"
      "# HELP a:other Another.\n# TYPE a:other gauge\na:other 7\n";
  EXPECT_EQ(filterMetricsPage(page, Names{"a:gauge"}),
            "# HELP a:gauge A gauge.\n# TYPE a:gauge gauge\na:gauge{model_name=\"m\"} 1\n");
  // A histogram is asked for by one of its series, and answered whole.
  EXPECT_EQ(filterMetricsPage(page, Names{"a:hist_count", "a:other"}),
            "# HELP a:hist A histogram.\n# TYPE a:hist histogram\n"
            "a:hist_bucket{le=\"1\"} 0\na:hist_bucket{le=\"+Inf\"} 2\na:hist_sum 3\n"
            "a:hist_count 2\n# HELP a:other Another.\n# TYPE a:other gauge\na:other 7\n");
  EXPECT_EQ(filterMetricsPage(page, Names{"a:hist"}), "");  // a family name is no sample name
  EXPECT_EQ(filterMetricsPage(page, Names{"nothing"}), "");
  EXPECT_EQ(filterMetricsPage("a:gauge 1", Names{"a:gauge"}), "a:gauge 1");  // no final newline
}

// The gateway's filtered scrape (fleet::engineMetricsTarget) asks for every family it reads:
// on the emulator's pages of both flavors the filtered page gives the same signals as the whole
// one, from a small fraction of the bytes.
TEST(MetricsFilterTest, TheGatewaysFilteredScrapeReadsWhatTheWholePageSays) {
  const std::string_view target = fleet::engineMetricsTarget(true);
  ASSERT_EQ(fleet::engineMetricsTarget(false), "/metrics");
  ASSERT_TRUE(target.starts_with("/metrics?"));
  const Names names = requestedSampleNames(target.substr(target.find('?') + 1));
  EXPECT_EQ(names.size(), 10u);
  EngineLoad load;
  load.running = 3;
  load.waiting = 2;
  load.kv_usage = 0.375;
  load.kv_capacity_tokens = 28672;
  EngineCounters counters;
  counters.time_to_first_token.observe(0.2);
  for (Flavor flavor : {Flavor::kVllm, Flavor::kSglang}) {
    const std::string whole = renderMetrics(flavor, "m", load, counters);
    const std::string filtered = filterMetricsPage(whole, names);
    const fleet::EngineSignals a = fleet::parseEngineSignals(whole);
    const fleet::EngineSignals b = fleet::parseEngineSignals(filtered);
    EXPECT_EQ(a.running, 3);
    EXPECT_EQ(b.running, a.running);
    EXPECT_EQ(b.waiting, a.waiting);
    EXPECT_EQ(b.kv_usage, a.kv_usage);
    EXPECT_EQ(std::isnan(b.cpu_kv_usage), std::isnan(a.cpu_kv_usage));
    EXPECT_EQ(b.kv_capacity_tokens, a.kv_capacity_tokens);
    EXPECT_EQ(a.kv_capacity_tokens, 28672);
    EXPECT_LT(filtered.size() * 8, whole.size()) << filtered;
  }
}

}  // namespace
}  // namespace switchyard::engine
