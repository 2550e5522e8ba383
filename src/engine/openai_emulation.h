// The wire side of the emulated engine without any networking: parsing OpenAI request bodies
// (simdjson on-demand), and rendering responses, SSE chunks, errors and /metrics text shaped like
// vLLM's or SGLang's. Pure functions plus one small deterministic text source; the HTTP server
// (engine_server.cc) calls these so that Beast stays in one translation unit.
//
// A RequestParser is not thread-safe: one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "engine/engine_model.h"

namespace switchyard::engine {

enum class Flavor { kVllm, kSglang };
std::optional<Flavor> parseFlavor(std::string_view name);

enum class Endpoint { kChatCompletions, kCompletions };

// Longest prompt + output the emulated model accepts (reported as max_model_len).
constexpr int kMaxModelLen = 32768;

// Prompt tokens estimated from text length: ceil(chars / 4), at least 1.
int estimateTokens(size_t chars);
// Prefix-cache blocks are 16 estimated tokens, i.e. 64 characters of prompt text.
constexpr int kPrefixBlockTokens = 16;
constexpr size_t kPrefixBlockChars = 4 * kPrefixBlockTokens;

struct GenerationRequest {
  std::string model;  // empty when the body has none
  bool stream = false;
  bool include_usage = false;
  int max_tokens = 16;
  int prompt_tokens = 1;
  uint64_t prompt_hash = 0;  // of the prompt text: seeds the generated words
  // Hash of the prompt text up to the end of each full 64-character block (of the first prompt
  // when a completions request has several): equal prefixes give equal leading hashes.
  std::vector<uint64_t> block_hashes;
};

struct EmbeddingInput {
  int tokens = 1;
  uint64_t hash = 0;
};

struct EmbeddingRequest {
  std::string model;
  std::vector<EmbeddingInput> inputs;
};

// Either a value or a client-facing error message (a 400). No exceptions.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
};

// Parses request bodies with one reusable simdjson on-demand parser. `body` gets
// SIMDJSON_PADDING bytes of spare capacity reserved (no copy when it already has them).
class RequestParser {
 public:
  RequestParser();
  ~RequestParser();
  Parsed<GenerationRequest> generation(Endpoint endpoint, std::string& body);
  Parsed<EmbeddingRequest> embedding(std::string& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Deterministic words for one request: the same (seed, prompt) always yields the same text.
class TokenTextSource {
 public:
  TokenTextSource(uint64_t seed, uint64_t prompt_hash);
  std::string_view next();

 private:
  Rng rng_;
};

// Identity shared by every chunk of one response.
struct ResponseIdentity {
  std::string id;  // "chatcmpl-…" or "cmpl-…"
  int64_t created = 0;
  std::string model;
  Endpoint endpoint = Endpoint::kChatCompletions;
};

std::string renderCompletion(const ResponseIdentity& identity, std::string_view text,
                             int prompt_tokens, int completion_tokens);
// Each returns one complete SSE event, "data: {...}\n\n".
std::string renderRoleChunk(const ResponseIdentity& identity);  // chat only
std::string renderTokenChunk(const ResponseIdentity& identity, std::string_view token);
std::string renderFinishChunk(const ResponseIdentity& identity);
std::string renderUsageChunk(const ResponseIdentity& identity, int prompt_tokens,
                             int completion_tokens);
inline constexpr std::string_view kStreamDone = "data: [DONE]\n\n";

std::string renderEmbeddings(std::string_view model, uint64_t seed,
                             const std::vector<EmbeddingInput>& inputs);
std::string renderModels(std::string_view model, int64_t created, Flavor flavor);
std::string renderError(std::string_view message, std::string_view type = "invalid_request_error");

// A Prometheus histogram: fixed upper bounds, per-bucket counts (the last is +Inf), sum, count.
struct Histogram {
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  std::vector<double> bounds;
  std::vector<int64_t> counts;  // bounds.size() + 1, not cumulative
  double sum = 0;
  int64_t count = 0;
};

// What the driver accumulates for /metrics; the histograms use vLLM's bucket bounds.
struct EngineCounters {
  EngineCounters();
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t metrics_scrapes_total = 0;  // GET /metrics served, this one included
  Histogram time_to_first_token;  // seconds, arrival to first token
  Histogram inter_token_latency;  // seconds between consecutive tokens of a request
  Histogram e2e_latency;          // seconds, arrival to last token
  Histogram queue_time;           // seconds, arrival to first scheduled
};
// Prometheus text format 0.0.4 in the flavor's metric names, plus
// switchyard_engine_busy_seconds_total and switchyard_engine_metrics_scrapes_total.
// `nan_kv_usage` reports KV usage as NaN (a fault).
std::string renderMetrics(Flavor flavor, std::string_view model, const EngineLoad& load,
                          const EngineCounters& counters, bool nan_kv_usage = false);

std::string jsonEscape(std::string_view text);

}  // namespace switchyard::engine
