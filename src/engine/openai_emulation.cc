#include "engine/openai_emulation.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "fleet/kv_index/prompt_blocks.h"

namespace switchyard::engine {
namespace {

namespace od = simdjson::ondemand;

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
constexpr int kEmbeddingDims = 16;

// A fixed vocabulary: every token is one word with its leading space, as BPE tokens often are.
constexpr std::string_view kVocabulary[] = {
    " the",   " a",      " engine", " token", " model",   " fleet", " route", " request",
    " of",    " and",    " to",     " in",    " switch",  " yard",  " GPU",   " batch",
    " cache", " is",     " fast",   " slow",  " replica", " load",  " queue", " stream",
    " first", " second", " data",   " will",  " can",     " runs",  " on",    " every",
};

struct TextStats {
  size_t chars = 0;
  uint64_t hash = kFnvOffset;
  // The chain of each full kPrefixBlockChars block, as the gateway's PromptBlockHasher computes
  // it (fleet/kv_index/prompt_blocks.h, seed 0): the KV events publish these hashes.
  std::vector<uint64_t> blocks;
  std::string partial;  // the text of the block being filled
  void add(std::string_view text) {
    for (unsigned char c : text) hash = (hash ^ c) * kFnvPrime;
    chars += text.size();
    while (!text.empty()) {
      const size_t take = std::min(text.size(), kPrefixBlockChars - partial.size());
      if (partial.empty() && take == kPrefixBlockChars) {
        blocks.push_back(fleet::kv_index::chainBlockHash(chain(), text.substr(0, take)));
      } else {
        partial.append(text.substr(0, take));
        if (partial.size() == kPrefixBlockChars) {
          blocks.push_back(fleet::kv_index::chainBlockHash(chain(), partial));
          partial.clear();
        }
      }
      text.remove_prefix(take);
    }
  }
  uint64_t chain() const { return blocks.empty() ? 0 : blocks.back(); }
  void addTokenIds(size_t count, int64_t last) {
    chars += 4 * count;  // one token each, in the ceil(chars/4) estimate
    hash = (hash ^ static_cast<uint64_t>(last) ^ count) * kFnvPrime;
  }
};

std::string invalidJson(simdjson::error_code error) {
  return fmt::format("Invalid JSON body: {}", simdjson::error_message(error));
}

std::string wrongType(std::string_view field, std::string_view expected) {
  return fmt::format("'{}' must be {}", field, expected);
}

void reservePadding(std::string& body) {
  if (body.capacity() < body.size() + simdjson::SIMDJSON_PADDING) {
    body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  }
}

// Reads a string, an array of strings, an array of token ids or an array of such arrays.
// Adds the text of each prompt to `per_input` (one entry per prompt) and returns "" or an error.
std::string readPrompts(od::value value, std::string_view field,
                        std::vector<TextStats>& per_input) {
  od::json_type type;
  if (auto error = value.type().get(type)) return invalidJson(error);
  if (type == od::json_type::string) {
    std::string_view text;
    if (auto error = value.get_string().get(text)) return invalidJson(error);
    per_input.emplace_back().add(text);
    return {};
  }
  if (type != od::json_type::array) return wrongType(field, "a string or an array");
  od::array array;
  if (auto error = value.get_array().get(array)) return invalidJson(error);
  size_t ids = 0;
  int64_t last_id = 0;
  for (auto element_result : array) {
    od::value element;
    if (auto error = element_result.get(element)) return invalidJson(error);
    od::json_type element_type;
    if (auto error = element.type().get(element_type)) return invalidJson(error);
    if (element_type == od::json_type::number) {
      if (element.get_int64().get(last_id)) return wrongType(field, "token ids");
      ++ids;
    } else if (element_type == od::json_type::string || element_type == od::json_type::array) {
      if (std::string error = readPrompts(element, field, per_input); !error.empty()) return error;
    } else {
      return wrongType(field, "a string, an array of strings or of token ids");
    }
  }
  if (ids > 0) per_input.emplace_back().addTokenIds(ids, last_id);
  if (per_input.empty()) return fmt::format("'{}' must not be empty", field);
  return {};
}

// Chat message content: a string, null, or an array of parts whose "text" fields count.
std::string readContent(od::value value, TextStats& stats) {
  od::json_type type;
  if (auto error = value.type().get(type)) return invalidJson(error);
  if (type == od::json_type::null) return {};
  if (type == od::json_type::string) {
    std::string_view text;
    if (auto error = value.get_string().get(text)) return invalidJson(error);
    stats.add(text);
    return {};
  }
  if (type != od::json_type::array) return wrongType("content", "a string or an array of parts");
  od::array parts;
  if (auto error = value.get_array().get(parts)) return invalidJson(error);
  for (auto part_result : parts) {
    od::object part;
    if (part_result.get_object().get(part)) return wrongType("content", "parts");
    std::string_view text;
    auto text_result = part.find_field_unordered("text");
    if (text_result.error() == simdjson::NO_SUCH_FIELD) continue;
    if (auto error = text_result.get_string().get(text)) return invalidJson(error);
    stats.add(text);
  }
  return {};
}

std::string readMessages(od::value value, TextStats& stats) {
  od::array messages;
  if (value.get_array().get(messages)) return wrongType("messages", "an array");
  size_t count = 0;
  for (auto message_result : messages) {
    od::object message;
    if (message_result.get_object().get(message)) return wrongType("messages", "objects");
    ++count;
    for (auto field_result : message) {
      od::field field;
      if (auto error = std::move(field_result).get(field)) return invalidJson(error);
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) return invalidJson(error);
      if (key != "content") continue;
      if (std::string error = readContent(field.value(), stats); !error.empty()) return error;
    }
  }
  if (count == 0) return "'messages' must not be empty";
  return {};
}

// max_tokens and friends: an integer or null (= default).
std::string readOptionalInt(od::value value, std::string_view field, std::optional<int64_t>& out) {
  bool is_null = false;
  if (auto error = value.is_null().get(is_null)) return invalidJson(error);
  if (is_null) return {};
  int64_t number = 0;
  if (value.get_int64().get(number)) return wrongType(field, "an integer");
  out = number;
  return {};
}

std::string readStreamOptions(od::value value, bool& include_usage) {
  bool is_null = false;
  if (auto error = value.is_null().get(is_null)) return invalidJson(error);
  if (is_null) return {};
  od::object options;
  if (value.get_object().get(options)) return wrongType("stream_options", "an object");
  for (auto field_result : options) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return invalidJson(error);
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return invalidJson(error);
    if (key == "include_usage" && field.value().get_bool().get(include_usage)) {
      return wrongType("stream_options.include_usage", "a boolean");
    }
  }
  return {};
}

template <typename T>
Parsed<T> failure(std::string message) {
  return Parsed<T>{std::nullopt, std::move(message)};
}

void appendUsage(std::string& out, int prompt_tokens, int completion_tokens) {
  fmt::format_to(std::back_inserter(out),
                 R"("usage":{{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{}}})",
                 prompt_tokens, prompt_tokens + completion_tokens, completion_tokens);
}

void appendChunkHead(std::string& out, const ResponseIdentity& identity) {
  const bool chat = identity.endpoint == Endpoint::kChatCompletions;
  fmt::format_to(std::back_inserter(out),
                 R"(data: {{"id":"{}","object":"{}","created":{},"model":"{}",)", identity.id,
                 chat ? "chat.completion.chunk" : "text_completion", identity.created,
                 jsonEscape(identity.model));
}

// Prometheus spells the special values NaN, +Inf and -Inf.
std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

void appendMetric(std::string& out, std::string_view name, std::string_view type,
                  std::string_view help, std::string_view model, double value) {
  fmt::format_to(std::back_inserter(out),
                 "# HELP {0} {1}\n# TYPE {0} {2}\n{0}{{model_name=\"{3}\"}} {4}\n", name, help,
                 type, model, formatValue(value));
}

void appendHistogram(std::string& out, std::string_view name, std::string_view help,
                     std::string_view model, const Histogram& histogram) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "# HELP {0} {1}\n# TYPE {0} histogram\n", name, help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < histogram.counts.size(); ++i) {
    cumulative += histogram.counts[i];
    if (i < histogram.bounds.size()) {
      fmt::format_to(it, "{}_bucket{{le=\"{}\",model_name=\"{}\"}} {}\n", name, histogram.bounds[i],
                     model, cumulative);
    } else {
      fmt::format_to(it, "{}_bucket{{le=\"+Inf\",model_name=\"{}\"}} {}\n", name, model,
                     cumulative);
    }
  }
  fmt::format_to(it, "{0}_sum{{model_name=\"{1}\"}} {2}\n{0}_count{{model_name=\"{1}\"}} {3}\n",
                 name, model, histogram.sum, histogram.count);
}

}  // namespace

std::optional<Flavor> parseFlavor(std::string_view name) {
  if (name == "vllm") return Flavor::kVllm;
  if (name == "sglang") return Flavor::kSglang;
  return std::nullopt;
}

int estimateTokens(size_t chars) { return chars == 0 ? 1 : static_cast<int>((chars + 3) / 4); }

struct RequestParser::Impl {
  od::parser parser;
};

RequestParser::RequestParser() : impl_(std::make_unique<Impl>()) {}
RequestParser::~RequestParser() = default;

Parsed<GenerationRequest> RequestParser::generation(Endpoint endpoint, std::string& body) {
  using Result = GenerationRequest;
  reservePadding(body);
  od::document doc;
  if (auto error = impl_->parser.iterate(body).get(doc)) return failure<Result>(invalidJson(error));
  od::object object;
  if (auto error = doc.get_object().get(object)) {
    return failure<Result>(error == simdjson::INCORRECT_TYPE ? "the body must be a JSON object"
                                                             : invalidJson(error));
  }
  GenerationRequest request;
  std::vector<TextStats> prompts;
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> max_completion_tokens;
  bool have_input = false;
  const std::string_view input_field =
      endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return failure<Result>(invalidJson(error));
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return failure<Result>(invalidJson(error));
    std::string error;
    if (key == "model") {
      std::string_view model;
      if (field.value().get_string().get(model)) error = wrongType("model", "a string");
      request.model = model;
    } else if (key == "stream") {
      if (field.value().get_bool().get(request.stream)) error = wrongType("stream", "a boolean");
    } else if (key == "stream_options") {
      error = readStreamOptions(field.value(), request.include_usage);
    } else if (key == "max_tokens") {
      error = readOptionalInt(field.value(), key, max_tokens);
    } else if (key == "max_completion_tokens") {
      error = readOptionalInt(field.value(), key, max_completion_tokens);
    } else if (key == input_field) {
      have_input = true;
      if (endpoint == Endpoint::kChatCompletions) {
        error = readMessages(field.value(), prompts.emplace_back());
      } else {
        error = readPrompts(field.value(), key, prompts);
      }
    }
    if (!error.empty()) return failure<Result>(std::move(error));
  }
  if (!have_input) return failure<Result>(fmt::format("'{}' is required", input_field));

  // Several prompts in one completions request are summed: the emulator answers them as one.
  TextStats all;
  for (const TextStats& prompt : prompts) {
    all.chars += prompt.chars;
    all.hash = (all.hash ^ prompt.hash) * kFnvPrime;
  }
  request.prompt_tokens = estimateTokens(all.chars);
  request.prompt_hash = all.hash;
  if (!prompts.empty()) request.block_hashes = std::move(prompts.front().blocks);
  std::optional<int64_t> limit = max_completion_tokens ? max_completion_tokens : max_tokens;
  if (limit) {
    if (*limit < 1) return failure<Result>("max_tokens must be at least 1");
    if (*limit + request.prompt_tokens > kMaxModelLen) {
      return failure<Result>(fmt::format(
          "This model's maximum context length is {} tokens. However, you requested {} tokens "
          "({} in the messages, {} in the completion).",
          kMaxModelLen, *limit + request.prompt_tokens, request.prompt_tokens, *limit));
    }
    request.max_tokens = static_cast<int>(*limit);
  }
  return Parsed<Result>{std::move(request), {}};
}

Parsed<EmbeddingRequest> RequestParser::embedding(std::string& body) {
  using Result = EmbeddingRequest;
  reservePadding(body);
  od::document doc;
  if (auto error = impl_->parser.iterate(body).get(doc)) return failure<Result>(invalidJson(error));
  od::object object;
  if (auto error = doc.get_object().get(object)) {
    return failure<Result>(error == simdjson::INCORRECT_TYPE ? "the body must be a JSON object"
                                                             : invalidJson(error));
  }
  EmbeddingRequest request;
  std::vector<TextStats> inputs;
  bool have_input = false;
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return failure<Result>(invalidJson(error));
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return failure<Result>(invalidJson(error));
    std::string error;
    if (key == "model") {
      std::string_view model;
      if (field.value().get_string().get(model)) error = wrongType("model", "a string");
      request.model = model;
    } else if (key == "input") {
      have_input = true;
      error = readPrompts(field.value(), key, inputs);
    }
    if (!error.empty()) return failure<Result>(std::move(error));
  }
  if (!have_input) return failure<Result>("'input' is required");
  for (const TextStats& input : inputs) {
    request.inputs.push_back(EmbeddingInput{estimateTokens(input.chars), input.hash});
  }
  return Parsed<Result>{std::move(request), {}};
}

TokenTextSource::TokenTextSource(uint64_t seed, uint64_t prompt_hash)
    : rng_(seed * 0x9E3779B97F4A7C15ull ^ prompt_hash) {}

std::string_view TokenTextSource::next() {
  return kVocabulary[rng_.below(static_cast<uint32_t>(std::size(kVocabulary)))];
}

std::string renderCompletion(const ResponseIdentity& identity, std::string_view text,
                             int prompt_tokens, int completion_tokens) {
  std::string out;
  auto it = std::back_inserter(out);
  if (identity.endpoint == Endpoint::kChatCompletions) {
    fmt::format_to(it,
                   R"({{"id":"{}","object":"chat.completion","created":{},"model":"{}",)"
                   R"("choices":[{{"index":0,"message":{{"role":"assistant","content":"{}"}},)"
                   R"("logprobs":null,"finish_reason":"length","stop_reason":null}}],)",
                   identity.id, identity.created, jsonEscape(identity.model), jsonEscape(text));
  } else {
    fmt::format_to(it,
                   R"({{"id":"{}","object":"text_completion","created":{},"model":"{}",)"
                   R"("choices":[{{"index":0,"text":"{}","logprobs":null,)"
                   R"("finish_reason":"length","stop_reason":null}}],)",
                   identity.id, identity.created, jsonEscape(identity.model), jsonEscape(text));
  }
  appendUsage(out, prompt_tokens, completion_tokens);
  out += '}';
  return out;
}

std::string renderRoleChunk(const ResponseIdentity& identity) {
  std::string out;
  appendChunkHead(out, identity);
  out += R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
         R"("logprobs":null,"finish_reason":null}]})"
         "\n\n";
  return out;
}

std::string renderTokenChunk(const ResponseIdentity& identity, std::string_view token) {
  std::string out;
  appendChunkHead(out, identity);
  auto it = std::back_inserter(out);
  if (identity.endpoint == Endpoint::kChatCompletions) {
    fmt::format_to(it,
                   R"("choices":[{{"index":0,"delta":{{"content":"{}"}},"logprobs":null,)"
                   R"("finish_reason":null}}]}})",
                   jsonEscape(token));
  } else {
    fmt::format_to(it,
                   R"("choices":[{{"index":0,"text":"{}","logprobs":null,"finish_reason":null,)"
                   R"("stop_reason":null}}]}})",
                   jsonEscape(token));
  }
  out += "\n\n";
  return out;
}

std::string renderFinishChunk(const ResponseIdentity& identity) {
  std::string out;
  appendChunkHead(out, identity);
  if (identity.endpoint == Endpoint::kChatCompletions) {
    out += R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length",)"
           R"("stop_reason":null}]})";
  } else {
    out += R"("choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length",)"
           R"("stop_reason":null}]})";
  }
  out += "\n\n";
  return out;
}

std::string renderUsageChunk(const ResponseIdentity& identity, int prompt_tokens,
                             int completion_tokens) {
  std::string out;
  appendChunkHead(out, identity);
  out += R"("choices":[],)";
  appendUsage(out, prompt_tokens, completion_tokens);
  out += "}\n\n";
  return out;
}

std::string renderEmbeddings(std::string_view model, uint64_t seed,
                             const std::vector<EmbeddingInput>& inputs) {
  std::string out = R"({"object":"list","data":[)";
  auto it = std::back_inserter(out);
  int total_tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    total_tokens += inputs[i].tokens;
    // A unit vector determined by (seed, input text): equal inputs embed equally.
    Rng rng(seed * 0x9E3779B97F4A7C15ull ^ inputs[i].hash);
    double values[kEmbeddingDims];
    double norm = 0;
    for (double& v : values) {
      v = rng.uniform01() * 2 - 1;
      norm += v * v;
    }
    norm = std::sqrt(norm);
    fmt::format_to(it, R"({}{{"object":"embedding","index":{},"embedding":[)", i ? "," : "", i);
    for (int d = 0; d < kEmbeddingDims; ++d) {
      fmt::format_to(it, "{}{:.6f}", d ? "," : "", values[d] / norm);
    }
    out += "]}";
  }
  fmt::format_to(it, R"(],"model":"{}","usage":{{"prompt_tokens":{},"total_tokens":{}}}}})",
                 jsonEscape(model), total_tokens, total_tokens);
  return out;
}

std::string renderModels(std::string_view model, int64_t created, Flavor flavor) {
  return fmt::format(
      R"({{"object":"list","data":[{{"id":"{0}","object":"model","created":{1},"owned_by":"{2}",)"
      R"("root":"{0}","parent":null,"max_model_len":{3}}}]}})",
      jsonEscape(model), created, flavor == Flavor::kVllm ? "vllm" : "sglang", kMaxModelLen);
}

std::string renderError(std::string_view message, std::string_view type) {
  return fmt::format(R"({{"error":{{"message":"{}","type":"{}","param":null,"code":null}}}})",
                     jsonEscape(message), jsonEscape(type));
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds.size() && value > bounds[i]) ++i;
  ++counts[i];
  sum += value;
  ++count;
}

// Bucket bounds as vLLM v0.8+ exports them.
EngineCounters::EngineCounters()
    : time_to_first_token({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      inter_token_latency({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                           5.0, 7.5, 10.0, 20.0, 40.0, 80.0}),
      e2e_latency({0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                   30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}),
      queue_time(e2e_latency.bounds) {}

std::string renderMetrics(Flavor flavor, std::string_view model, const EngineLoad& load,
                          const EngineCounters& counters, bool nan_kv_usage) {
  std::string out;
  const ExportedGauges gauges = exportedGauges(load);
  const double kv_usage = nan_kv_usage ? std::nan("") : gauges.kv_usage;
  const std::string label = jsonEscape(model);  // Prometheus label escaping matches JSON's here
  const auto prompt = static_cast<double>(counters.prompt_tokens_total);
  const auto generation = static_cast<double>(counters.generation_tokens_total);
  // Not an engine's metric: what the emulator can tell about work given up (benchmarks read it).
  appendMetric(out, "switchyard_emulator_aborted_requests_total", "counter",
               "Requests cancelled before they finished (their client left).", label,
               static_cast<double>(load.aborted_requests_total));
  appendMetric(out, "switchyard_emulator_aborted_running_seconds_total", "counter",
               "Time cancelled requests had spent in the running batch.", label,
               load.aborted_running_seconds_total);
  appendMetric(out, "switchyard_emulator_aborted_computed_tokens_total", "counter",
               "Tokens computed for requests that were then cancelled.", label,
               static_cast<double>(load.aborted_computed_tokens_total));
  if (flavor == Flavor::kVllm) {
    appendMetric(out, "vllm:num_requests_running", "gauge",
                 "Number of requests in model execution batches.", label, gauges.running);
    appendMetric(out, "vllm:num_requests_waiting", "gauge",
                 "Number of requests waiting to be processed.", label, gauges.waiting);
    appendMetric(out, "vllm:kv_cache_usage_perc", "gauge",
                 "KV-cache usage. 1 means 100 percent usage.", label, kv_usage);
    appendMetric(out, "vllm:gpu_cache_usage_perc", "gauge",
                 "GPU KV-cache usage. 1 means 100 percent usage.", label, kv_usage);
    // vLLM's cache configuration as an info gauge (value 1, the facts in labels): gateways read
    // the KV cache's size from it.
    fmt::format_to(std::back_inserter(out),
                   "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
                   "# TYPE vllm:cache_config_info gauge\n"
                   "vllm:cache_config_info{{block_size=\"{}\",cache_dtype=\"auto\","
                   "enable_prefix_caching=\"True\",gpu_memory_utilization=\"0.9\","
                   "num_cpu_blocks=\"0\",num_gpu_blocks=\"{}\"}} 1.0\n",
                   load.kv_block_size,
                   load.kv_capacity_tokens / std::max(1, load.kv_block_size));
    appendMetric(out, "vllm:num_preemptions_total", "counter",
                 "Cumulative number of preemption from the engine.", label,
                 static_cast<double>(load.preemptions_total));
    appendMetric(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
                 label, prompt);
    appendMetric(out, "vllm:generation_tokens_total", "counter",
                 "Number of generation tokens processed.", label, generation);
    appendMetric(out, "vllm:prefix_cache_queries_total", "counter",
                 "Prefix cache queries, in terms of number of queried tokens.", label,
                 static_cast<double>(load.prefix_cache_queries_total));
    appendMetric(out, "vllm:prefix_cache_hits_total", "counter",
                 "Prefix cache hits, in terms of number of cached tokens.", label,
                 static_cast<double>(load.prefix_cache_hits_total));
    appendHistogram(out, "vllm:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.", label,
                    counters.time_to_first_token);
    appendHistogram(out, "vllm:inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.", label,
                    counters.inter_token_latency);
    appendHistogram(out, "vllm:e2e_request_latency_seconds",
                    "Histogram of e2e request latency in seconds.", label, counters.e2e_latency);
    appendHistogram(out, "vllm:request_queue_time_seconds",
                    "Histogram of time spent in WAITING phase for request.", label,
                    counters.queue_time);
  } else {
    appendMetric(out, "sglang:num_running_reqs", "gauge", "The number of running requests.", label,
                 gauges.running);
    appendMetric(out, "sglang:num_queue_reqs", "gauge",
                 "The number of requests in the waiting queue.", label, gauges.waiting);
    appendMetric(out, "sglang:token_usage", "gauge", "The token usage.", label, kv_usage);
    appendMetric(out, "sglang:max_total_num_tokens", "gauge",
                 "Maximum total number of tokens in the KV cache pool.", label,
                 static_cast<double>(load.kv_capacity_tokens));
    appendMetric(out, "sglang:prompt_tokens_total", "counter",
                 "Number of prefill tokens processed.", label, prompt);
    appendMetric(out, "sglang:generation_tokens_total", "counter",
                 "Number of generation tokens processed.", label, generation);
    const double queries = static_cast<double>(load.prefix_cache_queries_total);
    appendMetric(out, "sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.", label,
                 queries > 0 ? static_cast<double>(load.prefix_cache_hits_total) / queries : 0.0);
    appendHistogram(out, "sglang:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.", label,
                    counters.time_to_first_token);
    appendHistogram(out, "sglang:inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.", label,
                    counters.inter_token_latency);
    appendHistogram(out, "sglang:e2e_request_latency_seconds",
                    "Histogram of End-to-end request latency in seconds", label,
                    counters.e2e_latency);
    appendHistogram(out, "sglang:queue_time_seconds", "Histogram of queueing time in seconds.",
                    label, counters.queue_time);
  }
  appendMetric(out, "switchyard_engine_busy_seconds_total", "counter",
               "Seconds the emulated engine had at least one request in its batch.", label,
               load.busy_seconds_total);
  // How often the replica is scraped: what a fleet of gateways costs each engine.
  appendMetric(out, "switchyard_engine_metrics_scrapes_total", "counter",
               "GET /metrics requests served, this one included.", label,
               static_cast<double>(counters.metrics_scrapes_total));
  return out;
}

std::string jsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace switchyard::engine
