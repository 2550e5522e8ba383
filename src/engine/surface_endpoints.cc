#include "engine/surface_endpoints.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "api/api_endpoint.h"
#include "api/multipart_reader.h"
#include "engine/openai_emulation.h"

namespace switchyard::engine {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
// A 1×1 PNG: every generated image (the emulator models time, not pictures).
constexpr std::string_view kTinyPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
constexpr int kMaxImages = 10;

uint64_t hashText(std::string_view text, uint64_t hash = kFnvOffset) {
  for (unsigned char c : text) hash = (hash ^ c) * kFnvPrime;
  return hash;
}

// A deterministic score in [0, 1) for a pair.
double pairScore(uint64_t seed, std::string_view a, std::string_view b) {
  const uint64_t h = hashText(b, hashText(a, kFnvOffset ^ seed) * kFnvPrime);
  return static_cast<double>((h >> 11) & ((uint64_t{1} << 40) - 1)) /
         static_cast<double>(uint64_t{1} << 40);
}

SurfaceAnswer failure(unsigned status, std::string_view message) {
  SurfaceAnswer out;
  out.status = status;
  out.body = renderError(message, status == 404 ? "NotFoundError" : "invalid_request_error");
  return out;
}

TimeNs prefillCost(const SurfaceContext& context, double tokens) {
  const double capped = std::clamp(tokens, 1.0, static_cast<double>(1 << 30));
  return std::min<TimeNs>(kMaxSurfaceCostNs,
                          context.model->prefillOnlyNs(static_cast<int>(capped)));
}

// A string, or an array of strings (objects with "text" for rerank documents).
bool readTexts(simdjson::dom::element value, std::vector<std::string_view>& out) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    out.push_back(text);
    return true;
  }
  simdjson::dom::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) return false;
  for (simdjson::dom::element element : array) {
    if (element.get_string().get(text) == simdjson::SUCCESS ||
        element["text"].get_string().get(text) == simdjson::SUCCESS) {
      out.push_back(text);
      continue;
    }
    return false;
  }
  return true;
}

std::string usageJson(int64_t prompt_tokens) {
  return fmt::format(R"({{"prompt_tokens":{0},"total_tokens":{0},"completion_tokens":0}})",
                     prompt_tokens);
}

}  // namespace

std::optional<SurfaceKind> surfaceKind(std::string_view path) {
  switch (api::classifyEndpoint(path)) {  // the gateway's names for the same paths
    case api::ApiEndpoint::kRerank:
      return SurfaceKind::kRerank;
    case api::ApiEndpoint::kScore:
      return SurfaceKind::kScore;
    case api::ApiEndpoint::kImagesGenerations:
      return SurfaceKind::kImages;
    case api::ApiEndpoint::kAudioTranscriptions:
      return SurfaceKind::kTranscription;
    case api::ApiEndpoint::kAudioTranslations:
      return SurfaceKind::kTranslation;
    default:
      return std::nullopt;
  }
}

struct SurfaceParser::Impl {
  simdjson::dom::parser json;
  api::MultipartReader form;
  uint64_t sequence = 0;

  SurfaceAnswer rerank(simdjson::dom::element root, const SurfaceContext& context);
  SurfaceAnswer score(simdjson::dom::element root, const SurfaceContext& context);
  SurfaceAnswer images(simdjson::dom::element root, const SurfaceContext& context);
  SurfaceAnswer audio(bool translate, std::string_view content_type, std::string_view body,
                      const SurfaceContext& context);
};

SurfaceParser::SurfaceParser() : impl_(std::make_unique<Impl>()) {}
SurfaceParser::~SurfaceParser() = default;

SurfaceAnswer SurfaceParser::serve(SurfaceKind kind, std::string_view content_type,
                                   std::string& body, const SurfaceContext& context) {
  if (kind == SurfaceKind::kTranscription || kind == SurfaceKind::kTranslation) {
    return impl_->audio(kind == SurfaceKind::kTranslation, content_type, body, context);
  }
  simdjson::dom::element root;
  if (auto error = impl_->json.parse(body).get(root)) {
    return failure(400, fmt::format("invalid JSON body: {}", simdjson::error_message(error)));
  }
  if (!root.is_object()) return failure(400, "the body must be a JSON object");
  SurfaceAnswer answer;
  switch (kind) {
    case SurfaceKind::kRerank:
      answer = impl_->rerank(root, context);
      break;
    case SurfaceKind::kScore:
      answer = impl_->score(root, context);
      break;
    default:
      answer = impl_->images(root, context);
      break;
  }
  std::string_view model;
  if (answer.status == 200 && root["model"].get_string().get(model) == simdjson::SUCCESS) {
    answer.model = model;
  }
  return answer;
}

SurfaceAnswer SurfaceParser::Impl::rerank(simdjson::dom::element root,
                                          const SurfaceContext& context) {
  std::string_view query;
  if (root["query"].get_string().get(query) != simdjson::SUCCESS) {
    return failure(400, "'query' is required and must be a string");
  }
  std::vector<std::string_view> documents;
  simdjson::dom::element value;
  if (root["documents"].get(value) != simdjson::SUCCESS || !readTexts(value, documents) ||
      documents.empty()) {
    return failure(400, "'documents' is required: a string or a non-empty array of strings");
  }
  int64_t top_n = static_cast<int64_t>(documents.size());
  if (root["top_n"].get(value) == simdjson::SUCCESS && !value.is_null()) {
    if (value.get_int64().get(top_n) != simdjson::SUCCESS || top_n < 0) {
      return failure(400, "'top_n' must be a non-negative integer");
    }
    if (top_n == 0) top_n = static_cast<int64_t>(documents.size());  // vLLM: 0 means all
  }
  struct Result {
    size_t index;
    double score;
  };
  std::vector<Result> results;
  int64_t tokens = 0;
  for (size_t i = 0; i < documents.size(); ++i) {
    tokens += estimateTokens(query.size()) + estimateTokens(documents[i].size());
    results.push_back({i, pairScore(context.seed, query, documents[i])});
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const Result& a, const Result& b) { return a.score > b.score; });
  results.resize(std::min<size_t>(results.size(), static_cast<size_t>(top_n)));
  SurfaceAnswer out;
  out.prompt_tokens = tokens;
  out.cost = prefillCost(context, static_cast<double>(tokens));
  auto it = std::back_inserter(out.body);
  fmt::format_to(it, R"({{"id":"rerank-{:016x}","model":"{}","usage":{{"total_tokens":{}}},)"
                     R"("results":[)",
                 hashText(query, context.seed ^ ++sequence), jsonEscape(context.served_model),
                 tokens);
  for (size_t i = 0; i < results.size(); ++i) {
    fmt::format_to(it,
                   R"({}{{"index":{},"document":{{"text":"{}"}},"relevance_score":{:.6f}}})",
                   i ? "," : "", results[i].index, jsonEscape(documents[results[i].index]),
                   results[i].score);
  }
  out.body += "]}";
  return out;
}

SurfaceAnswer SurfaceParser::Impl::score(simdjson::dom::element root,
                                         const SurfaceContext& context) {
  std::vector<std::string_view> first, second;
  simdjson::dom::element value;
  if (root["text_1"].get(value) != simdjson::SUCCESS || !readTexts(value, first) ||
      first.empty()) {
    return failure(400, "'text_1' is required: a string or a non-empty array of strings");
  }
  if (root["text_2"].get(value) != simdjson::SUCCESS || !readTexts(value, second) ||
      second.empty()) {
    return failure(400, "'text_2' is required: a string or a non-empty array of strings");
  }
  // vLLM: one text_1 against every text_2, or two lists of the same length paired up.
  if (first.size() > 1 && first.size() != second.size()) {
    return failure(400, "'text_1' must be one text or as many as 'text_2'");
  }
  const size_t pairs = second.size();
  SurfaceAnswer out;
  int64_t tokens = 0;
  auto it = std::back_inserter(out.body);
  fmt::format_to(it, R"({{"id":"score-{:016x}","object":"list","created":{},"model":"{}",)"
                     R"("data":[)",
                 hashText(first[0], context.seed ^ ++sequence), context.unix_seconds,
                 jsonEscape(context.served_model));
  for (size_t i = 0; i < pairs; ++i) {
    const std::string_view a = first[first.size() == 1 ? 0 : i];
    const std::string_view b = second[i];
    tokens += estimateTokens(a.size()) + estimateTokens(b.size());
    fmt::format_to(it, R"({}{{"index":{},"object":"score","score":{:.6f}}})", i ? "," : "", i,
                   pairScore(context.seed, a, b));
  }
  out.body += "],\"usage\":" + usageJson(tokens) + "}";
  out.prompt_tokens = tokens;
  out.cost = prefillCost(context, static_cast<double>(tokens));
  return out;
}

SurfaceAnswer SurfaceParser::Impl::images(simdjson::dom::element root,
                                          const SurfaceContext& context) {
  std::string_view prompt;
  if (root["prompt"].get_string().get(prompt) != simdjson::SUCCESS || prompt.empty()) {
    return failure(400, "'prompt' is required and must be a non-empty string");
  }
  int64_t n = 1;
  simdjson::dom::element value;
  if (root["n"].get(value) == simdjson::SUCCESS && !value.is_null() &&
      (value.get_int64().get(n) != simdjson::SUCCESS || n < 1 || n > kMaxImages)) {
    return failure(400, fmt::format("'n' must be an integer from 1 to {}", kMaxImages));
  }
  int64_t width = 1024, height = 1024;
  std::string_view size;
  if (root["size"].get_string().get(size) == simdjson::SUCCESS && size != "auto") {
    const size_t x = size.find('x');
    if (x == std::string_view::npos ||
        std::sscanf(std::string(size).c_str(), "%ldx%ld", &width, &height) != 2 || width < 64 ||
        height < 64 || width > 4096 || height > 4096) {
      return failure(400, "'size' must be WIDTHxHEIGHT (64 to 4096 pixels each) or auto");
    }
  }
  std::string_view format = "b64_json";
  if (root["response_format"].get(value) == simdjson::SUCCESS && !value.is_null()) {
    if (value.get_string().get(format) != simdjson::SUCCESS ||
        (format != "b64_json" && format != "url")) {
      return failure(400, "'response_format' must be b64_json or url");
    }
  }
  const double megapixels = static_cast<double>(width * height) / (1024.0 * 1024.0);
  SurfaceAnswer out;
  out.prompt_tokens = estimateTokens(prompt.size());
  const TimeNs per_image = prefillCost(context, kImageTokensPerMegapixel * megapixels);
  out.cost = std::min<TimeNs>(kMaxSurfaceCostNs,
                              prefillCost(context, static_cast<double>(out.prompt_tokens)) +
                                  per_image * n);
  auto it = std::back_inserter(out.body);
  fmt::format_to(it, R"({{"created":{},"data":[)", context.unix_seconds);
  const uint64_t id = hashText(prompt, context.seed ^ ++sequence);
  for (int64_t i = 0; i < n; ++i) {
    if (format == "url") {
      fmt::format_to(it, R"({}{{"url":"https://images.invalid/{:016x}-{}.png"}})", i ? "," : "",
                     id, i);
    } else {
      fmt::format_to(it, R"({}{{"b64_json":"{}"}})", i ? "," : "", kTinyPng);
    }
  }
  out.body += "]}";
  return out;
}

SurfaceAnswer SurfaceParser::Impl::audio(bool translate, std::string_view content_type,
                                         std::string_view body, const SurfaceContext& context) {
  api::MultipartError error = form.start(content_type);
  if (error == api::MultipartError::kNone) {
    form.feed(body);
    error = form.finish();
  }
  if (error != api::MultipartError::kNone) {
    return failure(error == api::MultipartError::kNotMultipart ? 415 : 400,
                   api::multipartErrorMessage(error));
  }
  if (form.fileParts() == 0) return failure(400, "'file' is required");
  const std::string_view format =
      form.field("response_format").empty() ? "json" : form.field("response_format");
  if (format != "json" && format != "text" && format != "verbose_json" && format != "srt" &&
      format != "vtt") {
    return failure(400, "'response_format' must be json, text, verbose_json, srt or vtt");
  }
  const double seconds =
      std::max(0.1, static_cast<double>(form.fileBytes()) / kAudioBytesPerSecond);
  // About 2.5 words a second of speech.
  const int words = std::max(1, static_cast<int>(seconds * 2.5));
  TokenTextSource source(context.seed, form.fileBytes() * kFnvPrime);
  std::string text;
  for (int i = 0; i < words; ++i) text += source.next();
  if (!text.empty() && text.front() == ' ') text.erase(0, 1);

  SurfaceAnswer out;
  out.model = form.model();
  out.prompt_tokens = static_cast<int64_t>(seconds * kAudioTokensPerSecond);
  out.cost = prefillCost(context, seconds * kAudioTokensPerSecond);
  if (format == "text") {
    out.content_type = "text/plain; charset=utf-8";
    out.body = text + "\n";
  } else if (format == "srt" || format == "vtt") {
    out.content_type = "text/plain; charset=utf-8";
    const int whole = static_cast<int>(seconds);
    const int millis = static_cast<int>((seconds - whole) * 1000);
    const char separator = format == "srt" ? ',' : '.';
    out.body = fmt::format("{}{}00:00:00{}000 --> {:02}:{:02}:{:02}{}{:03}\n{}\n",
                           format == "vtt" ? "WEBVTT\n\n" : "", format == "srt" ? "1\n" : "",
                           separator, whole / 3600, whole / 60 % 60, whole % 60, separator,
                           millis, text);
  } else if (format == "verbose_json") {
    out.body = fmt::format(
        R"({{"task":"{}","language":"{}","duration":{:.2f},"text":"{}","segments":[)"
        R"({{"id":0,"start":0.0,"end":{:.2f},"text":"{}"}}]}})",
        translate ? "translate" : "transcribe",
        jsonEscape(translate || form.field("language").empty() ? std::string_view("english")
                                                                : form.field("language")),
        seconds, jsonEscape(text), seconds, jsonEscape(text));
  } else {
    out.body = fmt::format(R"({{"text":"{}"}})", jsonEscape(text));
  }
  return out;
}

}  // namespace switchyard::engine
