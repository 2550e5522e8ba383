// The OpenAI-compatible inference endpoints the gateway routes by a body's model, and what each
// one's body is and costs. Pure and constexpr-cheap; thread-safe. (Async-job resources — responses,
// batches, files, videos — are classified by gateway/async_jobs.h.)
#pragma once

#include <cstdint>
#include <string_view>

#include "api/request_inspector.h"

namespace switchyard::api {

enum class ApiEndpoint : uint8_t {
  kNone,
  kChatCompletions,      // /v1/chat/completions
  kCompletions,          // /v1/completions
  kEmbeddings,           // /v1/embeddings
  kRerank,               // /v1/rerank (vLLM)
  kScore,                // /v1/score (vLLM)
  kAudioTranscriptions,  // /v1/audio/transcriptions (multipart/form-data)
  kAudioTranslations,    // /v1/audio/translations (multipart/form-data)
  kImagesGenerations,    // /v1/images/generations
};

// `path` without its query string.
ApiEndpoint classifyEndpoint(std::string_view path);

// The body is multipart/form-data (the model is a form field), not JSON.
constexpr bool takesMultipart(ApiEndpoint e) {
  return e == ApiEndpoint::kAudioTranscriptions || e == ApiEndpoint::kAudioTranslations;
}

// Whether admission and key budgets plan output tokens for the request (max_tokens, else the
// model's learned output length). Rerank, score, images and audio generate no tokens the usage
// reports, so they plan none; embeddings keep the rule they had.
constexpr bool plansOutputTokens(ApiEndpoint e) {
  return e != ApiEndpoint::kRerank && e != ApiEndpoint::kScore &&
         e != ApiEndpoint::kImagesGenerations && !takesMultipart(e);
}

// Bytes of uploaded audio that make one unit of audio work (see workUnits).
inline constexpr uint64_t kAudioBytesPerUnit = 1024;

// The units of work a request of this endpoint asks for, the load-balance capacity signal's
// numerator for tokenless work (capacity = units completed per second of request latency):
//   embeddings 1 per request (the seed's inverse latency), rerank 1 per document, score 1 per
//   scored pair, images 1 per image (`n`), audio 1 per KiB of uploaded file, others 1.
// `file_bytes` is the multipart file content (audio), 0 otherwise.
int64_t workUnits(ApiEndpoint endpoint, const InspectedRequest& info, uint64_t file_bytes);

}  // namespace switchyard::api
