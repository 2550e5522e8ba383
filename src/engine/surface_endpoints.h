// The emulated engine's non-generation endpoints beyond embeddings: vLLM's /v1/rerank and
// /v1/score, OpenAI's /v1/images/generations, /v1/audio/transcriptions and
// /v1/audio/translations. Parsing, the cost model and the rendered answer, without networking
// (engine_server.cc waits the cost, then writes the answer).
//
// Cost model (docs/endpoints.md), all through the engine model's prefill-only cost so a GPU type
// that prefills faster serves these faster too, each capped at kMaxSurfaceCostNs:
//   rerank, score   one prefill-only pass over every (query, document) pair's tokens, like
//                   embeddings (4 characters per token)
//   images          per image, a pass over kImageTokensPerMegapixel × the image's megapixels
//   audio           the file read as 16 kHz 16-bit mono PCM (32,000 bytes a second), one pass over
//                   kAudioTokensPerSecond (Whisper's encoder frames) per second of audio
// Answers are deterministic for a (seed, input). Pure; a SurfaceParser is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "engine/engine_model.h"

namespace switchyard::engine {

enum class SurfaceKind { kRerank, kScore, kImages, kTranscription, kTranslation };

// `path` without its query string.
std::optional<SurfaceKind> surfaceKind(std::string_view path);

inline constexpr TimeNs kMaxSurfaceCostNs = 10'000'000'000;
inline constexpr double kImageTokensPerMegapixel = 4096;
inline constexpr double kAudioBytesPerSecond = 32000;
inline constexpr double kAudioTokensPerSecond = 50;

struct SurfaceAnswer {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string model;      // the model the request named ("" none): the server checks it
  int64_t prompt_tokens = 0;
  TimeNs cost = 0;        // how long the engine works before answering (0 for errors)
};

struct SurfaceContext {
  std::string_view served_model;
  uint64_t seed = 1;
  int64_t unix_seconds = 0;
  const EngineModel* model = nullptr;  // prefill-only cost
};

class SurfaceParser {
 public:
  SurfaceParser();
  ~SurfaceParser();
  SurfaceAnswer serve(SurfaceKind kind, std::string_view content_type, std::string& body,
                      const SurfaceContext& context);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::engine
