#include "fleet/engine_signals.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard::fleet {
namespace {

// Shaped like vLLM 0.8+ /metrics output (abridged), two engines on one server.
constexpr std::string_view kVllm = R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
vllm:num_requests_running{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
vllm:num_requests_waiting{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.9
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.5
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 123456.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 42.0
)";

constexpr std::string_view kSglang = R"(# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="Qwen/Qwen2.5-7B-Instruct"} 7.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="Qwen/Qwen2.5-7B-Instruct"} 12.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="Qwen/Qwen2.5-7B-Instruct"} 0.61
sglang:gen_throughput{model_name="Qwen/Qwen2.5-7B-Instruct"} 1234.5
)";

TEST(EngineSignalsTest, VllmSumsCountsAndTakesMaxKv) {
  EngineSignals s = parseEngineSignals(kVllm);
  EXPECT_EQ(s.running, 5.0);
  EXPECT_EQ(s.waiting, 1.0);
  EXPECT_EQ(s.kv_usage, 0.5);  // the newer name wins over gpu_cache_usage_perc's 0.9
}

TEST(EngineSignalsTest, PreferredKvNameWinsWhicheverComesFirst) {
  std::string newer_first =
      "vllm:kv_cache_usage_perc 0.2\nvllm:gpu_cache_usage_perc 0.7\n";
  std::string older_first =
      "vllm:gpu_cache_usage_perc 0.7\nvllm:kv_cache_usage_perc 0.2\n";
  EXPECT_EQ(parseEngineSignals(newer_first).kv_usage, 0.2);
  EXPECT_EQ(parseEngineSignals(older_first).kv_usage, 0.2);
}

TEST(EngineSignalsTest, OlderKvNameIsAFallback) {
  EngineSignals s = parseEngineSignals("vllm:gpu_cache_usage_perc{engine=\"0\"} 0.33\n");
  EXPECT_EQ(s.kv_usage, 0.33);
  EXPECT_FALSE(s.hasRunning());
  EXPECT_FALSE(s.hasWaiting());
}

TEST(EngineSignalsTest, Sglang) {
  EngineSignals s = parseEngineSignals(kSglang);
  EXPECT_EQ(s.running, 7.0);
  EXPECT_EQ(s.waiting, 12.0);
  EXPECT_EQ(s.kv_usage, 0.61);
}

TEST(EngineSignalsTest, MissingSignalsAreUnknownNotZero) {
  EngineSignals s = parseEngineSignals("# nothing here\nother_metric 1\n");
  EXPECT_FALSE(s.hasRunning());
  EXPECT_FALSE(s.hasWaiting());
  EXPECT_FALSE(s.hasKvUsage());
  EXPECT_FALSE(parseEngineSignals("").hasRunning());
}

TEST(EngineSignalsTest, OutOfDomainValuesMakeTheSignalUnknown) {
  EXPECT_FALSE(parseEngineSignals("vllm:num_requests_running -1\n").hasRunning());
  EXPECT_FALSE(parseEngineSignals("vllm:num_requests_running NaN\n").hasRunning());
  EXPECT_FALSE(parseEngineSignals("vllm:num_requests_waiting +Inf\n").hasWaiting());
  EXPECT_FALSE(parseEngineSignals("vllm:kv_cache_usage_perc 1.5\n").hasKvUsage());
  EXPECT_FALSE(parseEngineSignals("sglang:token_usage -0.1\n").hasKvUsage());
  // One bad label set poisons the sum rather than under-reporting the load.
  EXPECT_FALSE(parseEngineSignals("vllm:num_requests_running{engine=\"0\"} 4\n"
                                  "vllm:num_requests_running{engine=\"1\"} -Inf\n")
                   .hasRunning());
  // A broken preferred KV metric falls back to the older name.
  EXPECT_EQ(parseEngineSignals("vllm:kv_cache_usage_perc NaN\nvllm:gpu_cache_usage_perc 0.4\n")
                .kv_usage,
            0.4);
}

TEST(EngineSignalsTest, MalformedLinesAreSkipped) {
  EngineSignals s = parseEngineSignals(
      "vllm:num_requests_running{engine=\"0\" 9\n"   // malformed: skipped
      "vllm:num_requests_running{engine=\"1\"} 2\r\n"
      "vllm:num_requests_waiting garbage\n"
      "vllm:num_requests_waiting{engine=\"1\"} 3 1712345678000\n");
  EXPECT_EQ(s.running, 2.0);
  EXPECT_EQ(s.waiting, 3.0);
  EXPECT_FALSE(s.hasKvUsage());
}

TEST(EngineSignalsTest, BoundaryValuesAreInDomain) {
  EngineSignals s = parseEngineSignals("vllm:num_requests_running 0\nvllm:kv_cache_usage_perc 1\n");
  EXPECT_TRUE(s.hasRunning());
  EXPECT_EQ(s.running, 0.0);
  EXPECT_EQ(s.kv_usage, 1.0);
}

TEST(EngineSignalsTest, CpuKvUsageIsMappedWhenExported) {
  EXPECT_EQ(parseEngineSignals("vllm:cpu_cache_usage_perc{model_name=\"m\"} 0.25\n").cpu_kv_usage,
            0.25);
  EXPECT_FALSE(parseEngineSignals("vllm:kv_cache_usage_perc 0.5\n").hasCpuKvUsage());
}

TEST(EngineSignalsTest, TheKvCacheSizeComesFromVllmsCacheConfigOrSglangsTokenPool) {
  // vLLM 0.8's info gauge: the facts are labels, the value is 1.
  const std::string vllm =
      "# TYPE vllm:cache_config_info gauge\n"
      "vllm:cache_config_info{block_size=\"32\",cache_dtype=\"auto\",enable_prefix_caching="
      "\"True\",gpu_memory_utilization=\"0.9\",num_cpu_blocks=\"2048\",num_gpu_blocks=\"1500\","
      "prefix_caching_hash_algo=\"builtin\"} 1.0\n";
  EXPECT_EQ(parseEngineSignals(vllm).kv_capacity_tokens, 1500.0 * 32);
  // No block_size label: vLLM's default of 16.
  EXPECT_EQ(parseEngineSignals("vllm:cache_config_info{num_gpu_blocks=\"10\"} 1\n")
                .kv_capacity_tokens,
            160.0);
  EXPECT_EQ(parseEngineSignals("sglang:max_total_num_tokens{model_name=\"m\"} 320000\n")
                .kv_capacity_tokens,
            320000.0);
  // Not (yet) known, or not a count: unknown, never zero. A value quoting a label is not one.
  for (const char* bad :
       {"vllm:cache_config_info{num_gpu_blocks=\"None\",block_size=\"16\"} 1\n",
        "vllm:cache_config_info{num_gpu_blocks=\"0\"} 1\n",
        "vllm:cache_config_info{num_gpu_blocks=\"12\",block_size=\"x\"} 1\n",
        "vllm:cache_config_info{num_gpu_blocks=\"-3\"} 1\n",
        "vllm:cache_config_info{note=\"a\\\",num_gpu_blocks=\\\"7\"} 1\n",
        "vllm:cache_config_info{num_gpu_blocks=\"12} 1\n", "vllm:cache_config_info 1\n",
        "sglang:max_total_num_tokens 0\n", "sglang:max_total_num_tokens NaN\n"}) {
    EXPECT_FALSE(parseEngineSignals(bad).hasKvCapacity()) << bad;
  }
  EXPECT_FALSE(parseEngineSignals(std::string(kVllm)).hasKvCapacity());
}

}  // namespace
}  // namespace switchyard::fleet
