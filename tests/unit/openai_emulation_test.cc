#include "engine/openai_emulation.h"

#include <gtest/gtest.h>

#include <set>

namespace switchyard::engine {
namespace {

TEST(OpenAiEmulationTest, EstimatesTokensAsCeilCharsOverFour) {
  EXPECT_EQ(estimateTokens(0), 1);
  EXPECT_EQ(estimateTokens(1), 1);
  EXPECT_EQ(estimateTokens(4), 1);
  EXPECT_EQ(estimateTokens(5), 2);
  EXPECT_EQ(estimateTokens(40), 10);
}

TEST(OpenAiEmulationTest, ParsesChatRequests) {
  RequestParser parser;
  std::string body =
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":5,)"
      R"("messages":[{"role":"system","content":"12345678"},)"
      R"({"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url"}]}],)"
      R"("temperature":0.5,"extra":{"nested":[1,2,{"x":null}]}})";
  Parsed<GenerationRequest> parsed = parser.generation(Endpoint::kChatCompletions, body);
  ASSERT_TRUE(parsed.value) << parsed.error;
  EXPECT_EQ(parsed.value->model, "m");
  EXPECT_TRUE(parsed.value->stream);
  EXPECT_TRUE(parsed.value->include_usage);
  EXPECT_EQ(parsed.value->max_tokens, 5);
  EXPECT_EQ(parsed.value->prompt_tokens, 3);  // 12 chars
}

TEST(OpenAiEmulationTest, MaxCompletionTokensWinsAndNullMeansDefault) {
  RequestParser parser;
  std::string body = R"({"messages":[{"content":"x"}],"max_completion_tokens":9,"max_tokens":3})";
  EXPECT_EQ(parser.generation(Endpoint::kChatCompletions, body).value->max_tokens, 9);
  body = R"({"prompt":"x","max_tokens":null})";
  EXPECT_EQ(parser.generation(Endpoint::kCompletions, body).value->max_tokens, 16);
}

TEST(OpenAiEmulationTest, CompletionPromptsMayBeListsOrTokenIds) {
  RequestParser parser;
  std::string body = R"({"prompt":["abcd","efgh"]})";
  EXPECT_EQ(parser.generation(Endpoint::kCompletions, body).value->prompt_tokens, 2);
  body = R"({"prompt":[1,2,3,4,5]})";
  EXPECT_EQ(parser.generation(Endpoint::kCompletions, body).value->prompt_tokens, 5);
}

TEST(OpenAiEmulationTest, RejectsBadBodiesWithAMessage) {
  RequestParser parser;
  for (std::string body :
       {std::string("{"), std::string("nope"), std::string("[]"), std::string(R"({"prompt":1})"),
        std::string(R"({"prompt":"x","max_tokens":0})"),
        std::string(R"({"prompt":"x","max_tokens":"5"})"),
        std::string(R"({"prompt":"x","stream":"yes"})"), std::string(R"({"model":"m"})"),
        std::string(R"({"prompt":"x","max_tokens":40000})")}) {
    Parsed<GenerationRequest> parsed = parser.generation(Endpoint::kCompletions, body);
    EXPECT_FALSE(parsed.value) << body;
    EXPECT_FALSE(parsed.error.empty()) << body;
  }
  std::string chat = R"({"messages":[]})";
  EXPECT_FALSE(parser.generation(Endpoint::kChatCompletions, chat).value);
}

TEST(OpenAiEmulationTest, ParsesEmbeddingInputs) {
  RequestParser parser;
  std::string body = R"({"model":"e","input":["abcd","abcdefgh",[1,2,3]]})";
  Parsed<EmbeddingRequest> parsed = parser.embedding(body);
  ASSERT_TRUE(parsed.value) << parsed.error;
  ASSERT_EQ(parsed.value->inputs.size(), 3u);
  EXPECT_EQ(parsed.value->inputs[0].tokens, 1);
  EXPECT_EQ(parsed.value->inputs[1].tokens, 2);
  EXPECT_EQ(parsed.value->inputs[2].tokens, 3);
  body = R"({"model":"e"})";
  EXPECT_FALSE(parser.embedding(body).value);
}

TEST(OpenAiEmulationTest, TokenTextIsDeterministicPerSeedAndPrompt) {
  auto words = [](uint64_t seed, uint64_t prompt) {
    TokenTextSource source(seed, prompt);
    std::string text;
    for (int i = 0; i < 20; ++i) text += source.next();
    return text;
  };
  EXPECT_EQ(words(1, 42), words(1, 42));
  EXPECT_NE(words(1, 42), words(2, 42));
  EXPECT_NE(words(1, 42), words(1, 43));
}

TEST(OpenAiEmulationTest, RendersErrorsAndEscapes) {
  EXPECT_EQ(renderError("bad \"x\"\n"),
            R"({"error":{"message":"bad \"x\"\n","type":"invalid_request_error",)"
            R"("param":null,"code":null}})");
  EXPECT_EQ(jsonEscape(std::string_view("\x01", 1)), "\\u0001");
}

TEST(OpenAiEmulationTest, MetricsHaveHelpTypeAndValues) {
  EngineLoad load;
  load.running = 2;
  load.kv_usage = 0.25;
  load.busy_seconds_total = 1.5;
  EngineCounters counters;
  counters.prompt_tokens_total = 7;
  counters.generation_tokens_total = 9;
  counters.time_to_first_token.observe(0.003);
  counters.time_to_first_token.observe(0.3);
  counters.time_to_first_token.observe(5000);
  std::string vllm = renderMetrics(Flavor::kVllm, "m", load, counters);
  EXPECT_NE(vllm.find("# TYPE vllm:num_requests_running gauge\n"
                      "vllm:num_requests_running{model_name=\"m\"} 2\n"),
            std::string::npos);
  EXPECT_NE(vllm.find("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"), std::string::npos);
  EXPECT_NE(vllm.find("# TYPE vllm:prompt_tokens_total counter\n"
                      "vllm:prompt_tokens_total{model_name=\"m\"} 7\n"),
            std::string::npos);
  EXPECT_NE(vllm.find("switchyard_engine_busy_seconds_total{model_name=\"m\"} 1.5\n"),
            std::string::npos);
  // Histograms: cumulative buckets, +Inf, _sum and _count.
  EXPECT_NE(vllm.find("# TYPE vllm:time_to_first_token_seconds histogram\n"), std::string::npos);
  EXPECT_NE(vllm.find("vllm:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"m\"} 0\n"
                      "vllm:time_to_first_token_seconds_bucket{le=\"0.005\",model_name=\"m\"} 1\n"),
            std::string::npos)
      << vllm;
  EXPECT_NE(vllm.find("vllm:time_to_first_token_seconds_bucket{le=\"0.5\",model_name=\"m\"} 2\n"),
            std::string::npos);
  EXPECT_NE(vllm.find("vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 3\n"),
            std::string::npos);
  EXPECT_NE(vllm.find("vllm:time_to_first_token_seconds_count{model_name=\"m\"} 3\n"),
            std::string::npos);
  EXPECT_NE(vllm.find("vllm:request_queue_time_seconds_sum{model_name=\"m\"} 0\n"),
            std::string::npos);
  EXPECT_NE(renderMetrics(Flavor::kVllm, "m", load, counters, true)
                .find("vllm:kv_cache_usage_perc{model_name=\"m\"} NaN\n"),
            std::string::npos);
  std::string sglang = renderMetrics(Flavor::kSglang, "m", load, counters);
  EXPECT_NE(sglang.find("sglang:queue_time_seconds_count{model_name=\"m\"} 0\n"),
            std::string::npos);
  EXPECT_NE(sglang.find("sglang:token_usage{model_name=\"m\"} 0.25\n"), std::string::npos);
  EXPECT_NE(sglang.find("sglang:generation_tokens_total{model_name=\"m\"} 9\n"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::engine
